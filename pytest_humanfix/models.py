"""Model specs and the models behind them.

A model answers a chat (a list of role/content messages) about one task with a `Generation`.
Heavy backends are imported only when a spec asks for them, so the control models need neither
torch nor transformers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .dataset import Task

if TYPE_CHECKING:
    from .settings import Settings


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


@dataclass
class ControlModel:
    """Answers with a known solution, in the shape a chat model would reply."""

    spec: str

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation:
        code = task.canonical_code if self.spec == "canonical" else task.buggy_code
        return Generation(text=f"Here is the fixed function:\n\n```python\n{code}```\n")


class ReplayModel:
    """Replays recorded replies: `{"task_id", "completion"}` lines, in order per task, or the
    attempts of this plugin's own results JSONL, so a run can be re-scored without a model."""

    def __init__(self, spec: str, path: Path) -> None:
        self.spec = spec
        self.replies: dict[str, list[str]] = {}
        self._served: dict[str, int] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ModelSpecError(f"replay file {path}: {exc.strerror or exc}.") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise ModelSpecError(f"replay file {path}: line {number} is not JSON.") from None
            if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
                raise ModelSpecError(f"replay file {path}: line {number} has no task_id.")
            self.replies.setdefault(row["task_id"], []).extend(_recorded_replies(row, path, number))

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation:
        replies = self.replies.get(task.task_id)
        if not replies:
            raise ModelLoadError(f"replay file has no reply for {task.task_id}")
        served = self._served.get(task.task_id, 0)
        self._served[task.task_id] = served + 1
        # Past the last recorded reply the model keeps saying the same thing.
        return Generation(text=replies[min(served, len(replies) - 1)])


def _recorded_replies(row: dict, path: Path, number: int) -> list[str]:
    if isinstance(row.get("completion"), str):
        return [row["completion"]]
    attempts = row.get("attempts")
    if isinstance(attempts, list) and attempts:
        return [a.get("reply") or a["code"] for a in attempts]
    if isinstance(row.get("code"), str):
        return [row["code"]]
    raise ModelSpecError(
        f"replay file {path}: line {number} has neither 'completion' nor recorded attempts.")


CONTROLS = ("canonical", "buggy")


def known_specs() -> list[str]:
    return [*CONTROLS, "replay:<file.jsonl>", "openai:<model>"]


def openai_model_name(spec: str) -> str:
    name = spec.removeprefix("openai:")
    if not name:
        raise ModelSpecError("openai: names no model; write openai:<model as the server knows it>.")
    return name


def load_model(spec: str, settings: Settings | None = None) -> Model:
    if spec in CONTROLS:
        return ControlModel(spec)
    if spec.startswith("replay:"):
        return ReplayModel(spec, Path(spec.removeprefix("replay:")).expanduser())
    if spec.startswith("openai:"):
        from .openai_backend import OpenAIModel
        from .settings import Settings

        return OpenAIModel(spec, openai_model_name(spec), settings or Settings(model=spec))
    raise ModelSpecError(
        f"unknown model {spec!r}. Known models: {', '.join(known_specs())}."
    )


def check_spec(spec: str) -> None:
    """Fail fast on a spec that names nothing, without loading anything."""
    if spec.startswith("openai:"):
        openai_model_name(spec)  # the server is reached by each worker, not here
    elif spec not in CONTROLS:
        load_model(spec)
