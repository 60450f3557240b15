"""What one task's evaluation produced, as plain data that crosses process boundaries."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
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
    # With --humanfix-samples N > 1: every sample's outcome, the first one included (the fields
    # above describe that first sample). Empty for a single sample.
    samples: list[Sample] = field(default_factory=list)

    @classmethod
    def error_for(cls, task: Any, error: str, seconds: float = 0.0) -> "TaskResult":
        """A harness fault on `task` (a dataset Task): an error outcome, never scored."""
        return cls(task_id=task.task_id, entry_point=task.entry_point, bug_type=task.bug_type,
                   outcome="error", error=error, seconds=round(seconds, 4))

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, not {self.outcome!r}")

    @property
    def prompt_tokens(self) -> int:
        if self.samples:
            return sum(s.prompt_tokens for s in self.samples)
        return sum(a.prompt_tokens for a in self.attempts)

    @property
    def completion_tokens(self) -> int:
        if self.samples:
            return sum(s.completion_tokens for s in self.samples)
        return sum(a.completion_tokens for a in self.attempts)

    @property
    def n(self) -> int:
        return len(self.samples) or 1

    @property
    def n_fixed(self) -> int:
        if self.samples:
            return sum(s.outcome == "fixed" for s in self.samples)
        return int(self.outcome == "fixed")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tokens"] = {"prompt": self.prompt_tokens, "completion": self.completion_tokens}
        data["n"], data["n_fixed"] = self.n, self.n_fixed
        return data

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "TaskResult":
        """Rebuild a result from its JSONL record (the run fields around it are ignored)."""
        values = {k: v for k, v in record.items() if k in _RESULT_FIELDS}
        values["attempts"] = [Attempt(**_known(Attempt, a)) for a in record.get("attempts") or []]
        values["samples"] = [Sample(**_known(Sample, s)) for s in record.get("samples") or []]
        return cls(**values)


@dataclass
class Sample:
    """One independent attempt at a task, when several are drawn for pass@k."""

    outcome: str
    code: str = ""
    failure: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @classmethod
    def of(cls, result: TaskResult) -> "Sample":
        return cls(outcome=result.outcome, code=result.code, failure=result.failure,
                   error=result.error, prompt_tokens=result.prompt_tokens,
                   completion_tokens=result.completion_tokens, seconds=result.seconds)


def _known(kind: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    return {k: v for k, v in data.items() if k in names}


_RESULT_FIELDS = {f.name for f in fields(TaskResult)}
