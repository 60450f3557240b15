"""Which records pass@1 counts, and pass@1 itself: over the run, within k repair rounds and on
HumanEval+; and what the tasks cost. A task in error counts as not fixed, here and so in every
view and gate: an error can never raise a score. `summary.build` puts these figures in
summary.json; docs/reports.md ("Errors", "pass@1 by round", "Cost") and docs/schema.md
("summary.json") say what each means.
"""

from __future__ import annotations

from typing import cast

from ..records import Record, graded_round
from .sections import Cost, PlusFigures, Rate, RoundRate, Share, Spent
from .stats import mean_pass_at_k, wilson_interval


def sample_counts(record: Record, within: int | None = None) -> tuple[int, int]:
    """(samples, fixed samples) of a record; records from before samples existed hold one.
    A task in error fixed none, whatever samples it fixed before the error. With `within`, a
    sample fixed in a later round than that, or in a round the record does not tell, counts as
    not fixed."""
    n = record.get("n") or 1
    if record["outcome"] == "error":
        return n, 0
    c = record.get("n_fixed")
    c = int(record["outcome"] == "fixed") if c is None else c
    if within is not None:
        later = sum(found is None or found > within for found in fixed_rounds(record))
        c = max(c - later, 0)
    return n, c


def fixed_rounds(record: Record) -> list[int | None]:
    """The round each fixed sample of a record was fixed in, None where the record cannot
    tell (an older record's later samples): `by_round` counts such a fix from the last round
    on only, where every fix counts."""
    samples = record.get("samples") or []
    if record["outcome"] == "error":
        return []
    if not samples:
        return [graded_round(record)] if record["outcome"] == "fixed" else []
    found: list[int | None] = []
    for number, sample in enumerate(samples):
        if sample.get("outcome") == "fixed":
            made = sample.get("fixed_round")
            # The first sample is the record's own: its attempts tell, in older records too.
            found.append(graded_round(record) if made is None and number == 0 else made)
    return found


def item_timed_out(record: Record) -> bool:
    """The item timeout stopped the task: an error scored not fixed, counted apart from the
    harness faults (records written before `item_timeout` was kept say so in their error)."""
    return record["outcome"] == "error" and (
        bool(record.get("item_timeout"))
        or str(record.get("error", "")).startswith("item timeout fired"))


def harness_error(record: Record) -> bool:
    """A harness fault ended the task (after its one retry): scored not fixed."""
    return record["outcome"] == "error" and not item_timed_out(record)


def agent_raised(record: Record) -> bool:
    """A brought agent raised on the task: scored not fixed, and counted apart from the
    tasks it tried and did not fix (`tasks.agent_errors`)."""
    return bool(record.get("agent_error")) and scored(record)


def scored(record: Record) -> bool:
    """A record counts in pass@1: every task whose reference solution can pass here (a
    `known_failure` is counted apart). A task in error, a harness fault or an item timeout, is
    scored as not fixed (`sample_counts`): leaving it out would let anything that turns a
    failure into an error raise pass@1."""
    return not record.get("known_failure")


def share(count: int, of: int) -> Share:
    """`count` of `of` tasks, with its 95% Wilson interval."""
    low, high = wilson_interval(count, of)
    return {"count": count, "of": of, "rate": count / of if of else None, "ci95": [low, high]}


def rate_of(counts: list[tuple[int, int]]) -> Rate:
    """pass@1 over (samples, fixed samples) per task, with a 95% Wilson interval over the
    tasks: samples of one task are not independent, so the interval counts tasks."""
    value = mean_pass_at_k(counts, 1) or 0.0  # None: no task
    low, high = wilson_interval(value * len(counts), len(counts))
    return {"value": value, "ci95": [low, high], "tasks": len(counts)}


def rate(records: list[Record], within: int | None = None) -> Rate:
    """pass@1 over the scored records (the unbiased mean of c/n). With `within`, only the
    fixes made within that many repair rounds count (`by_round`)."""
    return rate_of([sample_counts(r, within) for r in records if scored(r)])


def rounds(records: list[Record]) -> int:
    """The repair rounds the run allowed (--humanfix-iters, from the records' protocol), and
    never fewer than the latest round a recorded fix was made in, so that `by_round` ends at
    pass@1 whatever the records say."""
    allowed = [int(r["protocol"].get("iters") or 0) for r in records
               if isinstance(r.get("protocol"), dict)]
    made = [found for r in records if scored(r) for found in fixed_rounds(r)
            if found is not None]
    return max(allowed + made, default=0)


def by_round(records: list[Record]) -> list[RoundRate]:
    """pass@1 within k repair rounds for k = 0 .. `rounds`: `rate` counting only the samples
    fixed by round k, and how many those are (tasks, with one sample each). The last point
    counts every fix: it is the run's pass@1, `rate(records)` itself."""
    last = rounds(records)
    counted = [r for r in records if scored(r)]
    points: list[RoundRate] = []
    for k in range(last + 1):
        within = None if k == last else k
        points.append({"round": k, "fixed": sum(sample_counts(r, within)[1] for r in counted),
                       **rate(records, within)})
    return points


def plus_run(records: list[Record]) -> bool:
    """The records were graded on HumanEval+ as well (--humanfix-tests plus)."""
    return any((r.get("protocol") or {}).get("tests") == "plus" for r in records)


def _plus_counts(record: Record) -> tuple[int, int]:
    samples = record.get("samples") or []
    if record["outcome"] == "error":
        return len(samples) or 1, 0
    if samples:
        return len(samples), sum(s.get("plus_outcome") == "fixed" for s in samples)
    return 1, int(record.get("plus_outcome") == "fixed")


def plus(records: list[Record]) -> PlusFigures | None:
    """HumanEvalFix+ (None for a run without it): pass@1 on the hidden tests (the run's
    pass@1, comparable with published HumanEvalFix figures) beside pass@1+ (fixed on the hidden
    tests and HumanEval+ alike), over the same scored tasks less those whose reference solution
    fails HumanEval+ (`plus_known_failure`, counted apart); and the weak-test fixes, which pass
    the hidden tests and fail HumanEval+."""
    if not plus_run(records):
        return None
    counted = [r for r in records if scored(r) and not r.get("plus_known_failure")]
    weak = [r for r in counted if r["outcome"] == "fixed" and r.get("plus_outcome") != "fixed"]
    return {
        "pass_at_1": rate(records),
        "pass_at_1_plus": rate_of([_plus_counts(r) for r in counted]),
        "fixed_plus": sum(r.get("plus_outcome") == "fixed" and r["outcome"] != "error"
                          for r in counted),
        "weak_test_fixes": [{"task_id": r["task_id"], "failure": r.get("plus_failure", "")}
                            for r in weak],
        "known_failures": [{"task_id": r["task_id"], "outcome": r["outcome"],
                            "plus_outcome": r.get("plus_outcome"),
                            "reason": r["plus_known_failure"]}
                           for r in records if r.get("plus_known_failure")],
    }


def task_cost(record: Record) -> Spent:
    """What one task spent: its tokens, the model's replies, the programs it ran in the sandbox
    and its seconds (every sample's). Records written before `replies` was kept count their
    attempts (the first sample's); before `sandbox_runs`, none."""
    tokens = record.get("tokens") or {}
    prompt, completion = int(tokens.get("prompt", 0)), int(tokens.get("completion", 0))
    replies = record.get("replies")
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "tokens": prompt + completion,
            "replies": len(record.get("attempts") or []) if replies is None else int(replies),
            "sandbox_runs": int(record.get("sandbox_runs") or 0),
            "seconds": float(record.get("seconds") or 0.0)}


def _per(total: Spent, count: int) -> Spent | None:
    if not count:
        return None
    figures = cast(dict[str, float], total)
    return cast(Spent, {name: value / count for name, value in figures.items()})


def cost(records: list[Record]) -> Cost:
    """The run's spend: the sum of `task_cost` over every record (errors spent too), per task
    run, and per task fixed, the price of a fix."""
    spent = [cast(dict[str, float], task_cost(r)) for r in records]
    total = cast(Spent, {name: sum(c[name] for c in spent) for name in Spent.__annotations__})
    fixed = sum(r["outcome"] == "fixed" for r in records if scored(r))
    return {"tasks": len(records), "fixed": fixed, "total": total,
            "per_task": _per(total, len(records)), "per_fix": _per(total, fixed)}
