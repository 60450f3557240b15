"""What one task's evaluation produced, as plain data that crosses process boundaries."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

OUTCOMES = ("fixed", "unfixed", "error")


@dataclass
class Attempt:
    code: str
    diff: str
    verdict: dict[str, Any] | None
    feedback: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generate_seconds: float = 0.0
    execute_seconds: float = 0.0
    reply: str = ""  # the model's raw reply, before extraction
    # What the agent did with it: passed / failed (executed on `tests`), rejected (failed the
    # check, `check` says why), repeat (same code as attempt number `repeat_of`, not run again),
    # graded (final candidate, run only on the hidden test).
    status: str = ""
    check: str = ""
    repeat_of: int | None = None
    tests: str = ""  # which of the task's tests ran in the round: test or example_test


@dataclass
class TaskResult:
    task_id: str
    entry_point: str
    bug_type: str
    outcome: str
    code: str = ""
    diff: str = ""
    verdict: dict[str, Any] | None = None
    failure: str = ""
    error: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    final_attempt: int | None = None  # index of the graded attempt
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, not {self.outcome!r}")

    @property
    def prompt_tokens(self) -> int:
        return sum(a.prompt_tokens for a in self.attempts)

    @property
    def completion_tokens(self) -> int:
        return sum(a.completion_tokens for a in self.attempts)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tokens"] = {"prompt": self.prompt_tokens, "completion": self.completion_tokens}
        return data
