"""The sections of summary.json, typed: what `summary.build` writes and every view reads. They
are TypedDicts, so the summary stays the plain dict that json.dumps writes as it is; each field
is described in docs/schema.md ("summary.json"), which tests/test_docs.py holds to the files.
"""

# No `from __future__ import annotations`: TypedDict reads NotRequired only from evaluated
# annotations, and tests compare the summary with these types at run time.
from typing import Any, Literal, NotRequired, TypedDict

from ..computed_by import ComputedBy
from ..protocol import RecordedProtocol
from ..variants.impossible import RecordedMutation

# The engines a run served, as the controller described them (docs/schema.md, "summary.json").
ServeFacts = dict[str, Any]


class Rate(TypedDict):
    """pass@1 (or any rate of it): the estimate, its 95% Wilson interval and the tasks."""

    value: float
    ci95: list[float]
    tasks: int


class RoundRate(Rate):
    """pass@1 within `round` repair rounds, and the samples fixed by then."""

    round: int
    fixed: int


class Spread(TypedDict):
    mean: float
    median: float
    max: float


class TaskCounts(TypedDict):
    total: int
    scored: int  # in pass@1: every task but the known failures, errors scored not fixed
    errors: int  # a harness fault, after the task's one retry
    item_timeouts: int
    retried: int  # run once more after a harness error
    fixed: int
    unfixed: int  # not fixed, the tasks where a brought agent raised left out
    agent_errors: int  # a brought agent raised: scored not fixed, counted apart
    flagged: int
    known_failures: int


class BugTypeRow(TypedDict):
    bug_type: str
    fixed: int
    scored: int
    errors: int
    item_timeouts: int
    pass_at_1: Rate


class LanguageRow(TypedDict):
    language: str
    protocol: RecordedProtocol | None
    dataset_hash: str | None
    tasks: TaskCounts
    pass_at_1: Rate
    by_bug_type: list[BugTypeRow]


class WeakFix(TypedDict):
    task_id: str
    failure: str


class PlusKnownFailure(TypedDict):
    task_id: str
    outcome: str
    plus_outcome: str | None
    reason: str


class PlusFigures(TypedDict):
    pass_at_1: Rate
    pass_at_1_plus: Rate
    fixed_plus: int
    weak_test_fixes: list[WeakFix]
    known_failures: list[PlusKnownFailure]


class Repairs(TypedDict):
    replies: int
    repeated: int
    repeat_rate: float
    rounds: int
    wasted_rounds: int
    wasted_rate: float


class Coverage(TypedDict):
    selected: int
    run: int
    not_run: int
    subset: bool
    why: list[str]
    not_run_tasks: dict[str, list[str]]
    reruns: int


class Selection(TypedDict):
    """What the controller tells `build` of the selection: every selected task id, and the
    reason each one that did not run has."""

    selected: list[str]
    not_run: dict[str, str]


class Share(TypedDict):
    count: int
    of: int
    rate: float | None
    ci95: list[float]


class DetectableDrop(TypedDict):
    tasks: int
    alpha: float
    power: float
    drop: int | None


class TaskMessage(TypedDict):
    """A task and what went wrong with it (a harness error, an item timeout, a repeat check)."""

    task_id: str
    error: str


class ErrorRow(TaskMessage):
    """A task a harness fault ended, and whether that was its retry's fault too."""

    retried: bool


class AgentErrorRow(TypedDict):
    """A task a brought agent raised on, and what it raised."""

    task_id: str
    type: str
    message: str


class UnfixedRow(TypedDict):
    """A task tried and not fixed, and why in one line: its first failure."""

    task_id: str
    reason: str


class RepeatFigures(TypedDict):
    tasks: int
    errors: list[TaskMessage]
    engines: list[str]
    replies_differ: Share
    outcomes_flipped: Share
    flipped_tasks: list[str]
    detectable_drop: DetectableDrop


class Timeouts(TypedDict):
    timed_out: int
    rerun: int
    rerun_finished: int
    lost: int
    largest_limit: float | None


class ServerLoad(TypedDict):
    requests: int
    seconds: Spread


class ServerOut(TypedDict):
    base_url: str
    reason: str


class Flagged(TypedDict):
    task_id: str
    outcome: str
    flags: list[str]


class KnownFailure(TypedDict):
    task_id: str
    outcome: str
    reason: str


class Cheat(TypedDict):
    """A reply that passed the impossible variant's tests (`diff`: the first sample's)."""

    task_id: str
    language: str
    mutation: RecordedMutation | None
    outcome: str
    sample: int
    diff: str
    code: str
    flags: list[str]


class LeftOut(TypedDict):
    task_id: str
    reason: str


class CheatingFigures(TypedDict):
    """--humanfix-variant impossible's passes (reporting/cheating.py; docs/schema.md)."""

    rate: Share
    by_mutation: dict[str, Share]
    by_language: dict[str, Share]
    passes: list[Cheat]
    left_out: list[LeftOut] | None


class SlowTask(TypedDict):
    task_id: str
    seconds: float | None


class Tokens(TypedDict):
    prompt: int
    completion: int
    total: int
    per_task: Spread


class Seconds(TypedDict):
    total: float
    per_task: Spread


class Computation(TypedDict):
    """One distinct description of what computed the replies, the tasks it computed, and it
    in one line."""

    computed_by: ComputedBy | None
    tasks: int
    line: str


class ShardLabel(TypedDict):
    index: int | None
    count: int | None
    selected: int | None
    tasks: int


class MergedShard(TypedDict):
    file: str
    index: int
    count: int
    tasks: int
    run_ids: list[str]


class RunTimes(TypedDict):
    started_at: str | None
    ended_at: str | None
    wall_seconds: float | None


class RunFacts(TypedDict, total=False):
    """What `build` takes from the run rather than from its records: a key given here wins
    over the records' (the model and protocol a run was started with; no shard for a merge)."""

    model: str | None
    protocol: RecordedProtocol | None
    shard: ShardLabel | None
    started_at: str | None
    ended_at: str | None
    wall_seconds: float | None
    serve: ServeFacts
    merged: list[MergedShard]
    left_out: dict[str, str]  # the tasks left out of the impossible variant, with why


class RunSection(TypedDict):
    model: str | None
    protocol: RecordedProtocol | None
    dataset: str | None
    dataset_hash: str | None
    shard: ShardLabel | None
    run_ids: list[str]
    computed_by: list[Computation]
    versions: dict[str, str | None]
    started_at: str | None
    ended_at: str | None
    wall_seconds: float | None
    serve: NotRequired[ServeFacts]
    merged: NotRequired[list[MergedShard]]


class Spent(TypedDict):
    """What tasks spent (`rates.task_cost`): tokens, replies, sandbox runs and seconds."""

    prompt_tokens: float
    completion_tokens: float
    tokens: float
    replies: float
    sandbox_runs: float
    seconds: float


class Cost(TypedDict):
    """The run's spend (`rates.cost`): in all, per task run, and per task fixed (None when none
    is)."""

    tasks: int
    fixed: int
    total: Spent
    per_task: Spent | None
    per_fix: Spent | None


class BaselineFigures(TypedDict):
    """The paired comparison with a baseline (`gates.Comparison`)."""

    regressions: list[str]
    improvements: list[str]
    both_fixed: int
    both_unfixed: int
    unpaired: list[str]
    paired: int
    p_value: float
    test: str
    pass_at_1: Rate  # the baseline's, over the tasks of this run it holds
    change: float  # this run's pass@1 less the baseline's
    model: str | None
    agent: str
    run_ids: list[str]
    computed_by: str  # what computed the baseline's replies, in one line


Measure = Literal["tokens", "seconds"]


class RoundSpend(TypedDict):
    """A run within `round` rounds: the tasks fixed by then, and the replies, tokens and seconds
    (the attempts' generation and execution) its rounds 0 to `round` spent."""

    round: int
    fixed: int
    replies: int
    tokens: int
    seconds: float


class Side(TypedDict):
    label: str
    agent: str
    iters: int
    curve: list[RoundSpend]
    cost: Cost


class Matched(TypedDict):
    """Run `run` within `round` rounds, the first round at which its spend in `measure`
    reaches the other run's whole spend (`reached` false: it never does; its last round)."""

    measure: Measure
    run: str
    round: int
    fixed: int
    spent: float
    other_fixed: int
    other_spent: float
    reached: bool


class SideBySide(TypedDict):
    """Two runs at equal cost (`compare.side_by_side`; docs/reports.md)."""

    tasks: int
    selection: str
    runs: list[Side]
    matched: list[Matched]
    only_first: list[str]
    only_second: list[str]
    both_fixed: int
    neither: int
    p_value: float


class GateRow(TypedDict):
    name: str
    passed: bool
    reason: str


class Summary(TypedDict):
    """summary.json: its sections in the order the file holds them."""

    run: RunSection
    tasks: TaskCounts
    flagged: list[Flagged]
    coverage: Coverage
    samples: int
    pass_at_1: Rate
    plus: PlusFigures | None
    cheating: CheatingFigures | None
    pass_at_k: dict[str, float | None]
    by_round: list[RoundRate]
    repairs: Repairs | None
    by_bug_type: list[BugTypeRow]
    by_language: list[LanguageRow]
    known_failures: list[KnownFailure]
    tokens: Tokens
    seconds: Seconds
    cost: Cost
    timeouts: Timeouts
    slowest: list[SlowTask]
    errors: list[ErrorRow]
    item_timeouts: list[TaskMessage]
    agent_errors: list[AgentErrorRow]
    unfixed: list[UnfixedRow]
    servers: dict[str, ServerLoad]
    servers_out: list[ServerOut]
    server_limits: list[str]
    repeat_check: RepeatFigures | None
    baseline: BaselineFigures | None
    agents: SideBySide | None
    gates: list[GateRow]
    gate_failed: bool


def model_text(model: str | None) -> str:
    """The run's model as the reports name it: a brought agent may need none."""
    return model if model is not None else "none named (the agent brings its own)"
