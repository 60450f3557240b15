"""Models that need no weights: the canonical/buggy controls, and replays of recorded replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..computed_by import ComputedBy
from ..dataset import Task
from ..jsonl import JsonlError, read_jsonl
from ..languages import LANGUAGES
from .base import (
    Generation,
    Message,
    ModelLoadError,
    ModelSpecError,
    RecordedAnswers,
    cut_at_stop,
    settle_prompt,
)
from .toolcalls import Tool, split_reply

if TYPE_CHECKING:
    from .generation import GenerationConfig


class ControlModel:
    """Answers with a known solution, in the shape a chat model would reply (offered tools, as
    a call of the first with the solution as its `code`), or, prompted for a completion or a
    primed answer, as a model would continue the prompt base: the function's body."""

    def __init__(self, spec: str, target: str, config: GenerationConfig) -> None:
        self.spec = spec
        self.solution = target  # "canonical" or "buggy"
        self.prompt = settle_prompt(config.prompt, has_chat_template=True)
        # No version: which control answers is the run's model, and a canonical run is
        # compared with a buggy baseline as with any other model's.
        self.computed_by: ComputedBy = {"engine": "control", "device": "none"}

    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[Tool] | None = None,
                 stop: list[str] | None = None) -> Generation:
        code = task.canonical_code if self.solution == "canonical" else task.buggy_code
        if task.language != "python":
            # BigCode's reference solution (`get_reference(get_solution=True)`): the prompt,
            # whose helpers and imports some declarations lack (Go/10's IsPalindrome).
            body = task.canonical_solution if self.solution == "canonical" else \
                task.buggy_solution
            code = task.prompt + body
        if tools:
            call = {"name": tools[0]["function"]["name"], "arguments": {"code": code}}
            content, calls = split_reply(f"<tool_call>\n{json.dumps(call)}\n</tool_call>", tools)
            return Generation(text=content, tool_calls=calls, engine="control")
        fence = LANGUAGES[task.language].fence
        reply = f"Here is the fixed function:\n\n```{fence}\n{code}```\n"
        return Generation(text=cut_at_stop(reply, stop or []), engine="control")

    def complete(self, prompt: str, stop: list[str], task: Task,
                 temperature: float | None = None) -> Generation:
        body = task.canonical_solution if self.solution == "canonical" else task.buggy_solution
        # The prompt ends at the prompt base with its last newline stripped, as BigCode's does.
        return Generation(text=cut_at_stop("\n" + body, stop), engine="control")

    def continue_answer(self, messages: list[Message], start: str, stop: list[str],
                        task: Task, temperature: float | None = None) -> Generation:
        # The answer begins as the completion prompt ends: the prompt base, stripped.
        return self.complete(start, stop, task, temperature)


class ReplayModel(RecordedAnswers):
    """Replays recorded replies: `{"task_id", "completion"}` lines, in order per task, or the
    attempts of this plugin's own results JSONL, so a run can be re-scored without a model."""

    def __init__(self, spec: str, target: str, config: GenerationConfig) -> None:
        self.spec = spec
        self.prompt = settle_prompt(config.prompt, has_chat_template=True)
        path = Path(target)
        self.replies: dict[str, list[str]] = {}
        self._served: dict[str, int] = {}
        # The replies were computed when they were recorded: by what the records say.
        self.computed_by: ComputedBy = {"engine": "replay", "device": "none", "replayed": None}
        try:
            rows = read_jsonl(path, bad_lines="raise")
        except OSError as exc:
            raise ModelSpecError(f"replay file {path}: {exc.strerror or exc}.") from None
        except JsonlError as exc:
            raise ModelSpecError(f"replay file {exc}.") from None
        for number, row in enumerate(rows, 1):
            if not isinstance(row.get("task_id"), str):
                raise ModelSpecError(f"replay file {path}: line {number} has no task_id.")
            self.replies.setdefault(row["task_id"], []).extend(_recorded_replies(row, path, number))
            recorded = row.get("computed_by")
            if self.computed_by.get("replayed") is None and isinstance(recorded, dict):
                self.computed_by["replayed"] = cast(ComputedBy, recorded)  # the record's, as JSON

    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[Tool] | None = None,
                 stop: list[str] | None = None) -> Generation:
        """The task's next recorded reply, as it was recorded (`stop` cuts nothing: it was
        cut as its run asked); offered tools, the calls written in it are its calls
        (`toolcalls`: a recorded reply keeps them in the Hermes form)."""
        replies = self.replies.get(task.task_id)
        if not replies:
            raise ModelLoadError(f"replay file has no reply for {task.task_id}")
        served = self._served.get(task.task_id, 0)
        self._served[task.task_id] = served + 1
        # Past the last recorded reply the model keeps saying the same thing.
        text, calls = split_reply(replies[min(served, len(replies) - 1)], tools)
        return Generation(text=text, tool_calls=calls, engine="replay")


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

