"""The run's vocabulary and its records: what one task's evaluation produced (TaskResult, its
Attempts and Samples) and the typed JSONL line it becomes (Record and the types of its fields,
held to docs/schema.md by tests/test_docs.py), read back through `read_records`. The file
itself is jsonl.py's; the protocol and fingerprint in a record are protocol.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast, get_args

from .computed_by import ComputedBy
from .jsonl import BadLines, read_jsonl
from .protocol import RecordedProtocol
from .variants.impossible import RecordedMutation

if TYPE_CHECKING:
    from .dataset import Task

# A task's outcome: fixed, unfixed, or error (a harness fault or the item timeout), which pass@1
# scores as not fixed and counts apart (docs/reports.md, "Errors"). SCORED: the outcomes the
# candidate decided, which a resumed run keeps (it runs an error again).
Outcome = Literal["fixed", "unfixed", "error"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
SCORED: tuple[Outcome, ...] = ("fixed", "unfixed")

# What the agent did with one reply: passed / failed (executed on the round's tests), rejected
# (failed the check), repeat (same code as an earlier attempt, not run again), graded (final
# candidate, run only on the hidden test); "" until one of those is decided.
AttemptStatus = Literal["", "passed", "failed", "rejected", "repeat", "graded"]


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
    status: AttemptStatus = ""  # `check` says why when rejected; `repeat_of` names the earlier one
    check: str = ""
    repeat_of: int | None = None
    tests: str = ""  # which of the task's tests ran in the round: test or example_test
    # How the reply was asked for and how it ended ("" in records written before these were
    # kept): chat or completion; stop or length; the engine that served it.
    prompt: str = ""
    finish_reason: str = ""
    engine: str = ""
    server: str = ""  # the base URL that answered, for a server's reply
    # The repair round the reply belongs to (0: the first attempt) and the temperature it was
    # sampled at. A round may hold several replies: one that repeats failed code is asked
    # again, hotter, before the round counts. None in records written before rounds were kept,
    # where each reply was a round of its own (`attempt_round`).
    round: int | None = None
    temperature: float | None = None
    # The function-calling agent's replies (--humanfix-agent tools): how many tool calls the
    # reply made (0: it answered without one, which ends the repair; only the first call is
    # run). None for a reply that was not offered tools.
    tool_calls: int | None = None


class RecordedAttempt(TypedDict, total=False):
    """One attempt as a record holds it: `Attempt`'s fields (docs/schema.md, "The attempts").
    Not total: records written before a field was kept lack it."""

    code: str
    diff: str
    verdict: dict[str, Any] | None
    feedback: str
    prompt_tokens: int
    completion_tokens: int
    generate_seconds: float
    execute_seconds: float
    reply: str
    status: AttemptStatus
    check: str
    repeat_of: int | None
    tests: str
    prompt: str
    finish_reason: str
    engine: str
    server: str
    round: int | None
    temperature: float | None
    tool_calls: int | None


class RecordedSample(TypedDict, total=False):
    """One of --humanfix-samples' samples as a record holds it: `Sample`'s fields."""

    outcome: Outcome
    code: str
    failure: str
    error: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    flags: list[str]
    fixed_round: int | None
    plus_outcome: str | None
    replies: int
    sandbox_runs: int


class RepeatCheck(TypedDict, total=False):
    """--humanfix-repeat-check's second generation of the first attempt; only `error` and
    `seconds` when it could not be made."""

    spec: str
    engine: str
    reply: str
    code: str
    reply_differs: bool
    first_outcome: str
    outcome: Outcome
    outcome_flipped: bool
    failure: str
    error: str
    seconds: float


class Shard(TypedDict, total=False):
    index: int
    count: int
    tasks: list[str]
    selected: int
    selection: str


class TimeLimit(TypedDict, total=False):
    """Which limits applied to a task's executions (session/calibration.TaskLimit); records
    written before re-runs got a larger limit lack `rerun_seconds` and `cap`, and their
    `floor` was --humanfix-timeout."""

    seconds: float
    rerun_seconds: float
    canonical_seconds: float | None
    factor: float
    floor: float
    cap: float


class InputTimeLimits(TypedDict):
    clock: str
    floor: float
    factor: float
    longest: float
    reference_longest: float | None


class PlusTimeLimit(TypedDict):
    seconds: float
    reference_seconds: float | None
    inputs: InputTimeLimits


class EarlierRun(TypedDict):
    """A run of the task that a later one replaced: a pytest-rerunfailures run (`reruns`), or
    the first try that a harness error ended (`first_try`)."""

    outcome: Outcome
    error: str
    failure: str
    seconds: float | None
    tokens: dict[str, int] | None
    finished_at: str | None


class AgentError(TypedDict):
    """A brought agent's own exception (`agent_error`): its type and its message's first line.
    The task is scored not fixed, and counted apart from the unfixed and the harness errors."""

    type: str
    message: str


class Record(TypedDict, total=False):
    """One line of the results JSONL, a task's record (docs/schema.md, "humanfix.jsonl"):
    `TaskResult.to_dict()` and what `Runner.record` adds of the run. Not total: records
    written by earlier versions lack later fields, and their readers say what a missing one
    means; the fields of HumanEval+, a known failure and reruns appear only where they apply."""

    task_id: str
    entry_point: str
    bug_type: str
    language: str
    outcome: Outcome
    code: str
    diff: str
    verdict: dict[str, Any] | None
    failure: str
    error: str
    attempts: list[RecordedAttempt]
    final_attempt: int | None
    fixed_round: int | None
    seconds: float
    tokens: dict[str, int]  # prompt, completion
    replies: int
    sandbox_runs: int
    n: int
    n_fixed: int
    samples: list[RecordedSample]
    flags: list[str]
    repeat_check: RepeatCheck | None
    item_timeout: bool
    known_failure: str
    plus_outcome: str | None
    plus_verdict: dict[str, Any] | None
    plus_failure: str
    agent_error: AgentError
    plus_time_limit: PlusTimeLimit
    plus_known_failure: str
    run_id: str
    model: str | None
    protocol: RecordedProtocol
    mutation: RecordedMutation
    dataset: str
    dataset_hash: str
    shard: Shard | None
    sandbox: str | None
    worker: str
    device: str | None
    time_limit: TimeLimit
    model_error: str | None
    computed_by: ComputedBy | None
    servers_out: list[dict[str, str]]
    server_limits: list[str]
    finished_at: str
    reruns: list[EarlierRun]
    first_try: EarlierRun
    truncated: dict[str, int]


def attempt_round(attempt: Mapping[str, Any], index: int) -> int:
    """The round of a recorded attempt (a dict from the JSONL) at position `index`."""
    value = attempt.get("round")
    return index if value is None else int(value)


def graded_round(record: Record) -> int | None:
    """The round that fixed a record (a dict from the JSONL): its `fixed_round`, else, for a
    record written before that was kept, the round of its graded attempt; None when it is not
    fixed or the record cannot tell."""
    if record.get("outcome") != "fixed":
        return None
    fixed_round = record.get("fixed_round")
    if fixed_round is not None:
        return int(fixed_round)
    attempts = record.get("attempts") or []
    index = record.get("final_attempt")
    if not isinstance(index, int) or not 0 <= index < len(attempts):
        return None
    return attempt_round(attempts[index], index)


@dataclass
class TaskResult:
    task_id: str
    entry_point: str
    bug_type: str
    outcome: Outcome
    code: str = ""
    diff: str = ""
    verdict: dict[str, Any] | None = None
    failure: str = ""
    error: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    final_attempt: int | None = None  # index of the graded attempt
    # The round of that attempt when it fixed the task (0: the first attempt), None when the
    # outcome is not fixed: pass@1 within k rounds counts the fixes with fixed_round <= k.
    fixed_round: int | None = None
    seconds: float = 0.0
    # With --humanfix-samples N > 1: every sample's outcome, the first one included (the fields
    # above describe that first sample). Empty for a single sample.
    samples: list[Sample] = field(default_factory=list)
    # Why a fix that passed may defeat the tests rather than fix the function (agent/suspicion);
    # [] when none was found. Flagged fixes stay fixed unless --humanfix-strict.
    flags: list[str] = field(default_factory=list)
    # --humanfix-repeat-check: the first attempt generated again and graded beside this one
    # (session/repeat); None for a task not checked. Never scored.
    repeat_check: RepeatCheck | None = None
    # The item timeout stopped the task (an error outcome, scored not fixed): the run's clock,
    # not a harness fault, so the summary counts it apart from those.
    item_timeout: bool = False
    # --humanfix-tests plus (None without it): the final candidate's verdict on HumanEval+,
    # and its outcome there, fixed only when the hidden tests fixed it too (EvalPlus's pass@1+
    # counts a program that passes the base inputs and the plus ones).
    plus_outcome: str | None = None
    plus_verdict: dict[str, Any] | None = None
    plus_failure: str = ""
    # A brought agent raised (agent/contract.py): no candidate, scored not fixed; None else.
    agent_error: AgentError | None = None
    # The programs the task asked the sandbox to run on its tests, every sample's (a timeout
    # run again counts once; HumanEval+ and the repeat check are not counted): its cost in
    # executions, beside `tokens` and `replies` (reporting/rates.py, `task_cost`).
    sandbox_runs: int = 0
    # The task's first try, where a harness error ended it and the task was run once more
    # (session/runner.py, a crashed worker's task in session/crash.py); None else. This
    # result is the retry's, its cost included; the first try's is kept here.
    first_try: EarlierRun | None = None

    @classmethod
    def error_for(cls, task: Task, error: str, seconds: float = 0.0) -> TaskResult:
        """A harness fault on `task`: an error outcome, scored not fixed."""
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
    def replies(self) -> int:
        """The model's replies: the attempts, every sample's."""
        if self.samples:
            return sum(s.replies for s in self.samples)
        return len(self.attempts)

    @property
    def n(self) -> int:
        return len(self.samples) or 1

    @property
    def n_fixed(self) -> int:
        if self.samples:
            return sum(s.outcome == "fixed" for s in self.samples)
        return int(self.outcome == "fixed")

    def to_dict(self) -> Record:
        """The task's part of its record, as JSON-able builtins."""
        data = asdict(self)
        data["tokens"] = {"prompt": self.prompt_tokens, "completion": self.completion_tokens}
        data["replies"] = self.replies
        data["n"], data["n_fixed"] = self.n, self.n_fixed
        if self.plus_outcome is None:  # a run without HumanEval+ writes the records it always did
            for key in ("plus_outcome", "plus_verdict", "plus_failure"):
                del data[key]
        if self.agent_error is None:  # written only where a brought agent raised
            del data["agent_error"]
        if self.first_try is None:  # written only where a harness error was retried
            del data["first_try"]
        return cast(Record, data)

    @classmethod
    def from_record(cls, record: Record) -> TaskResult:
        """Rebuild a result from its JSONL record (the run fields around it are ignored)."""
        values: dict[str, Any] = {k: v for k, v in record.items() if k in _RESULT_FIELDS}
        values["attempts"] = [Attempt(**_known(Attempt, dict(a)))
                              for a in record.get("attempts") or []]
        values["samples"] = [Sample(**_known(Sample, s)) for s in record.get("samples") or []]
        values["fixed_round"] = graded_round(record)
        return cls(**values)


@dataclass
class Sample:
    """One independent attempt at a task, when several are drawn for pass@k."""

    outcome: Outcome
    code: str = ""
    failure: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    flags: list[str] = field(default_factory=list)
    fixed_round: int | None = None  # as TaskResult's; None in records written before it
    plus_outcome: str | None = None  # as TaskResult's
    replies: int = 0  # as TaskResult's; 0 in records written before they were kept
    sandbox_runs: int = 0

    @classmethod
    def of(cls, result: TaskResult) -> Sample:
        return cls(outcome=result.outcome, code=result.code, failure=result.failure,
                   error=result.error, prompt_tokens=result.prompt_tokens,
                   completion_tokens=result.completion_tokens, seconds=result.seconds,
                   flags=result.flags, fixed_round=result.fixed_round,
                   plus_outcome=result.plus_outcome, replies=result.replies,
                   sandbox_runs=result.sandbox_runs)


def earlier_run(record: Record) -> EarlierRun:
    """What a task's record keeps of a run that a later run replaced: enough to see why it was
    run again and what it cost (its tokens are not in the task's own count)."""
    return EarlierRun(outcome=record["outcome"], error=record.get("error", ""),
                      failure=record.get("failure", ""), seconds=record.get("seconds"),
                      tokens=record.get("tokens"), finished_at=record.get("finished_at"))


def _known(kind: type, data: Mapping[str, object]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    return {k: v for k, v in data.items() if k in names}


_RESULT_FIELDS = {f.name for f in fields(TaskResult)}


def read_records(path: Path, bad_lines: BadLines) -> list[Record]:
    """The records of a results JSONL: its JSON objects, taken for what the writer wrote
    (readers treat a missing field as a record of an earlier version)."""
    return cast(list[Record], read_jsonl(path, bad_lines))


def natural_order(task_id: str) -> tuple[str, int, str]:
    """A task id's place in a sorted list: Python/2 before Python/10, by language then
    number (an id without a number after its slash sorts by its text)."""
    language, _, number = task_id.rpartition("/")
    return (language, int(number), "") if number.isdigit() else (language, -1, number)


def latest_per_task(records: list[Record]) -> list[Record]:
    """One record per task (the last one written, as a resumed run appends), in first-seen
    order."""
    by_task: dict[str, Record] = {}
    for record in records:
        by_task[record["task_id"]] = record
    return list(by_task.values())
