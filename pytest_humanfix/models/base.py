"""The backend-free model interface: what the agent asks of any model, and the two errors a
model can raise. Backends (controls, replay, transformers, OpenAI-compatible servers) live beside
this module and are loaded by `specs.load_model` only when a spec names them, so importing this
module costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..dataset import Task


class ModelSpecError(Exception):
    """The model spec names nothing we can load; the message lists what is known."""


class ModelLoadError(Exception):
    """The model exists in name but cannot be loaded or reached: a harness fault."""


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


class Model(Protocol):
    spec: str

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation: ...

