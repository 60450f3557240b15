"""llama-cpp-python's OpenAI-compatible server, with every prompt evaluated from its first token.

The server keeps the tokens it evaluated last and, when a new prompt starts with them, evaluates
only the rest. A greedy reply then depends on what the engine served before it: the rest runs as
a batch of its own, whose sums round differently from the whole prompt's, and a prompt sent twice
in a row (its last token evaluated again alone) got another reply for 8 of 40 tasks here. A
reply must be a function of its prompt, whatever order xdist hands the tasks out in, so the
kept tokens are dropped before each request. A task's first prompt shares a handful of tokens
with the one before it, so that costs a run almost nothing; a repair round's prompt, which
extends the conversation, is evaluated whole again.

    python -m pytest_humanfix.models.llamacpp_server ARGUMENTS OF llama_cpp.server
"""

from __future__ import annotations

import runpy
from collections.abc import Iterator
from typing import Any


def evaluate_prompts_whole() -> None:
    from llama_cpp import Llama

    generate = Llama.generate

    def from_first_token(self: Llama, tokens: Any, *args: Any, **kwargs: Any) -> Iterator[int]:
        self.reset()  # nothing kept: `generate` finds no prefix to reuse
        return generate(self, tokens, *args, **kwargs)

    Llama.generate = from_first_token  # type: ignore[method-assign,assignment]


if __name__ == "__main__":
    evaluate_prompts_whole()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
