"""A request in flight in our llama.cpp engine (`Job`), and the error that answers a request 400.
See docs/models.md, "llama.cpp on a CPU".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ...stopping import StopScanner
from .lookup import NgramIndex

# A request field of ours, beside OpenAI's: the rule of `stopping` that ends a completion where
# it leaves the function, as BigCode's `check_fn` ends it ("indent" or "braces:N").
FUNCTION_END_FIELD = "humanfix_function_end"


class RequestError(Exception):
    """A request the engine cannot serve: answered 400 with this message."""


@dataclass
class Job:
    """One request, from its prompt's tokens to its reply."""

    prompt: list[int]
    max_tokens: int
    stop: list[str]
    temperature: float
    top_p: float
    seed: int
    special: bool = False  # special tokens rendered in the text (completions, as BigCode's)
    tokens: list[int] = field(default_factory=list)
    # Its stop words and where it leaves the function (a completion's `FUNCTION_END_FIELD`),
    # looked for as the reply grows; None when there are neither.
    scanner: StopScanner | None = None
    finish_reason: str = ""
    error: str = ""
    slot: int = -1
    sampler: Any = None  # a llama_cpp sampler chain (a ctypes pointer)
    cached: int = 0  # prompt tokens whose cells the slot held already
    lookup: NgramIndex | None = None  # where drafts come from; None: not drafted
    drafted: int = 0
    accepted: int = 0  # drafts the model's own argmax confirmed
    done: threading.Event = field(default_factory=threading.Event)

