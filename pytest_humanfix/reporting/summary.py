"""The one summary of a run: `build` turns result records (and, when given, the baseline
comparison and the gate checks) into one plain dict, the content of summary.json. Every figure a
run reports is computed here, once; the terminal, JUnit, summary.md/png, the gates and
`humanfix-report` all render or read this dict, so they cannot disagree.

pass@1 is `rate`: the unbiased estimate of Chen et al. (2021) over every sample of every scored
task (with one sample, fixed / scored). `tasks.fixed` counts the tasks whose first sample fixed
them (that sample decides each item's pytest outcome); with samples it is shown only under that
name, never as pass@1. `by_round` is the same `rate` counting only the fixes made within k repair
rounds, for k = 0 .. --humanfix-iters: its last point is pass@1.

`coverage` says whether the records cover the selection: a run stopped early (-x, --sw, Ctrl-C)
or narrowed (-k, --lf, a pytest-split group) reports a figure over a subset, and says so.
"""

from __future__ import annotations

import functools
import json
import platform
import statistics
from collections.abc import Iterable
from datetime import datetime
from importlib import metadata
from typing import Any

from ..computed_by import compared, describe
from ..protocol import record_language
from ..records import Record, Shard, TimeLimit, attempt_round, graded_round
from .gates import Comparison, GateCheck
from .stats import detectable_drop, mean_pass_at_k, wilson_interval

SLOWEST_SHOWN = 5
# The power the paired gate is asked to have when the summary says what drop it can detect.
GATE_POWER = 0.8
DEFAULT_ALPHA = 0.05
VERSIONED = ("pytest-humanfix", "pytest", "torch", "transformers")


def versions() -> dict[str, str | None]:
    """Installed versions, read from package metadata (nothing heavy is imported)."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> dict[str, str | None]:
    # Searching the metadata costs tens of milliseconds, and a run builds its summary twice.
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _counts(record: Record, within: int | None = None) -> tuple[int, int]:
    """(samples, fixed samples) of a record; records from before samples existed hold one.
    With `within`, a sample fixed in a later round than that, or in a round the record does
    not tell, counts as not fixed."""
    n = record.get("n") or 1
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
    """The item timeout stopped the task: not scored, and no harness fault either (records
    written before `item_timeout` was kept say so in their error)."""
    return record["outcome"] == "error" and (
        bool(record.get("item_timeout"))
        or str(record.get("error", "")).startswith("item timeout fired"))


def harness_error(record: Record) -> bool:
    return record["outcome"] == "error" and not item_timed_out(record)


def scored(record: Record) -> bool:
    """A record counts in pass@1: no harness error, and a task whose reference solution can
    pass here (a `known_failure` is counted apart)."""
    return record["outcome"] != "error" and not record.get("known_failure")


def rate(records: list[Record], within: int | None = None) -> dict[str, Any]:
    """pass@1 over the scored records (the unbiased mean of c/n) with a 95% Wilson interval
    over the tasks: samples of one task are not independent, so the interval counts tasks.
    With `within`, only the fixes made within that many repair rounds count (`by_round`)."""
    counts = [_counts(r, within) for r in records if scored(r)]
    value = mean_pass_at_k(counts, 1) or 0.0  # None: no scored record
    low, high = wilson_interval(value * len(counts), len(counts))
    return {"value": value, "ci95": [low, high], "tasks": len(counts)}


def rounds(records: list[Record]) -> int:
    """The repair rounds the run allowed (--humanfix-iters, from the records' protocol), and
    never fewer than the latest round a recorded fix was made in, so that `by_round` ends at
    pass@1 whatever the records say."""
    allowed = [int(r["protocol"].get("iters") or 0) for r in records
               if isinstance(r.get("protocol"), dict)]
    made = [found for r in records if scored(r) for found in fixed_rounds(r)
            if found is not None]
    return max(allowed + made, default=0)


def by_round(records: list[Record]) -> list[dict[str, Any]]:
    """pass@1 within k repair rounds for k = 0 .. `rounds`: `rate` counting only the samples
    fixed by round k, and how many those are (tasks, with one sample each). The last point
    counts every fix: it is the run's pass@1, `rate(records)` itself."""
    last = rounds(records)
    counted = [r for r in records if scored(r)]
    points = []
    for k in range(last + 1):
        within = None if k == last else k
        points.append({"round": k, "fixed": sum(_counts(r, within)[1] for r in counted),
                       **rate(records, within)})
    return points


def if_timeouts_failed(records: list[Record]) -> dict[str, Any] | None:
    """pass@1 had the tasks the item timeout stopped been scored as not fixed (None when the
    item timeout stopped none): a timeout is left out of pass@1, which a slow machine would
    otherwise raise by leaving out the tasks that ran long, often the ones that fail."""
    stopped = [r for r in records if item_timed_out(r) and not r.get("known_failure")]
    if not stopped:
        return None
    counted = [r for r in records if scored(r)]
    failed: list[Record] = [{**r, "outcome": "unfixed", "n": 1, "n_fixed": 0} for r in stopped]
    return {**rate(counted + failed), "item_timeouts": len(stopped),
            "fixed": sum(r["outcome"] == "fixed" for r in counted)}


def plus_run(records: list[Record]) -> bool:
    """The records were graded on HumanEval+ as well (--humanfix-tests plus)."""
    return any((r.get("protocol") or {}).get("tests") == "plus" for r in records)


def _plus_counts(record: Record) -> tuple[int, int]:
    samples = record.get("samples") or []
    if samples:
        return len(samples), sum(s.get("plus_outcome") == "fixed" for s in samples)
    return 1, int(record.get("plus_outcome") == "fixed")


def plus(records: list[Record]) -> dict[str, Any] | None:
    """HumanEvalFix+ (None for a run without it): pass@1 on the hidden tests (the run's
    pass@1, comparable with published HumanEvalFix figures) beside pass@1+ (fixed on the hidden
    tests and HumanEval+ alike), over the same scored tasks less those whose reference solution
    fails HumanEval+ (`plus_known_failure`, counted apart); and the weak-test fixes, which pass
    the hidden tests and fail HumanEval+."""
    if not plus_run(records):
        return None
    counted = [r for r in records if scored(r) and not r.get("plus_known_failure")]
    counts = [_plus_counts(r) for r in counted]
    value = mean_pass_at_k(counts, 1) or 0.0
    low, high = wilson_interval(value * len(counts), len(counts))
    weak = [r for r in counted if r["outcome"] == "fixed" and r.get("plus_outcome") != "fixed"]
    return {
        "pass_at_1": rate(records),
        "pass_at_1_plus": {"value": value, "ci95": [low, high], "tasks": len(counts)},
        "fixed_plus": sum(r.get("plus_outcome") == "fixed" for r in counted),
        "weak_test_fixes": [{"task_id": r["task_id"], "failure": r.get("plus_failure", "")}
                            for r in weak],
        "known_failures": [{"task_id": r["task_id"], "outcome": r["outcome"],
                            "plus_outcome": r.get("plus_outcome"),
                            "reason": r["plus_known_failure"]}
                           for r in records if r.get("plus_known_failure")],
    }


def _shard_label(shard: Shard | None) -> dict[str, Any] | None:
    """The shard a run's records were dealt (its task list stays in the records)."""
    if not shard:
        return None
    return {key: shard.get(key) for key in ("index", "count", "selected")} | {
        "tasks": len(shard.get("tasks") or [])}


def _tokens(record: Record) -> int:
    tokens = record.get("tokens") or {}
    return int(tokens.get("prompt", 0)) + int(tokens.get("completion", 0))


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0, "median": 0, "max": 0}
    return {"mean": statistics.fmean(values),
            "median": statistics.median(values), "max": max(values)}


def computations(records: list[Record]) -> list[dict[str, Any]]:
    """Each distinct description of what computed the replies, with the tasks it computed and
    its one line: one entry for a run on one engine build, several for a merge across builds
    or workers on unlike GPUs. Records without one (a model that never loaded, a record
    written before it existed) are counted under None."""
    groups: dict[str, dict[str, Any]] = {}
    for record in records:
        described = record.get("computed_by")
        key = json.dumps(compared(described), sort_keys=True) if described else "null"
        entry = groups.setdefault(key, {"computed_by": described, "tasks": 0,
                                        "line": describe(described)})
        entry["tasks"] += 1
    return list(groups.values())


def servers(records: list[Record]) -> dict[str, Any]:
    """Per OpenAI-compatible server that answered: its replies and their seconds (the
    attempts it served)."""
    seconds: dict[str, list[float]] = {}
    for record in records:
        for attempt in record.get("attempts") or []:
            if attempt.get("server"):
                seconds.setdefault(attempt["server"], []).append(
                    float(attempt.get("generate_seconds") or 0))
    return {url: {"requests": len(values), "seconds": _spread(values)}
            for url, values in sorted(seconds.items())}


def servers_out(records: list[Record]) -> list[dict[str, str]]:
    """Each server taken out of rotation (by any worker), with the first reason given."""
    out: dict[str, str] = {}
    for record in records:
        for server in record.get("servers_out") or []:
            out.setdefault(server["base_url"], server["reason"])
    return [{"base_url": url, "reason": reason} for url, reason in sorted(out.items())]


def timeouts(records: list[Record]) -> dict[str, Any]:
    """Graded runs that timed out, and those re-run alone after a first timeout (with how many
    of those then finished), with the largest limit any task ran under; and graded runs whose
    first execution was lost before it started and ran once more (sandbox/rerun)."""
    verdicts = [r.get("verdict") or {} for r in records]
    rerun = [v for v in verdicts if v.get("rerun")]
    limits = [float((r.get("time_limit") or TimeLimit()).get("seconds") or 0) for r in records]
    return {"timed_out": sum(v.get("status") == "timeout" for v in verdicts),
            "rerun": len(rerun),
            "rerun_finished": sum(v.get("status") != "timeout" for v in rerun),
            "lost": sum(bool(v.get("lost")) for v in verdicts),
            "largest_limit": max(limits, default=0.0) or None}


def _share(count: int, of: int) -> dict[str, Any]:
    low, high = wilson_interval(count, of)
    return {"count": count, "of": of, "rate": count / of if of else None, "ci95": [low, high]}


def repeat_check(records: list[Record], tasks: int,
                 alpha: float) -> dict[str, Any] | None:
    """--humanfix-repeat-check: of the tasks whose first attempt was generated twice, how many
    replies differed and how many outcomes flipped (each with a 95% Wilson interval), and the
    smallest drop the paired gate catches over `tasks` tasks at that flip rate (None for a run
    without the check)."""
    checked = {r["task_id"]: check for r in records
               if isinstance(check := r.get("repeat_check"), dict)}
    checks = [checked[r["task_id"]] for r in records
              if r["outcome"] != "error" and r["task_id"] in checked]
    if not checks:
        return None
    compared = [c for c in checks if not c.get("error")]
    flipped = [task for task, check in checked.items() if check.get("outcome_flipped")]
    flips = _share(len(flipped), len(compared))
    drop = detectable_drop(tasks, flips["rate"] or 0.0, alpha, GATE_POWER) \
        if compared and tasks else None
    errors = [{"task_id": task, "error": check["error"]} for task, check in checked.items()
              if check.get("error")]
    return {"tasks": len(compared), "errors": errors,
            "engines": sorted({str(c.get("engine")) for c in compared}),
            "replies_differ": _share(sum(bool(c["reply_differs"]) for c in compared),
                                     len(compared)),
            "outcomes_flipped": flips, "flipped_tasks": flipped,
            "detectable_drop": {"tasks": tasks, "alpha": alpha, "power": GATE_POWER,
                                "drop": drop}}


def coverage(records: list[Record],
             selection: dict[str, Any] | None) -> dict[str, Any]:
    """Tasks selected, run and not run, and why not, by reason. `selection` holds the selected
    task ids and the reason each one that did not run has; without it, what ran is the
    selection (a JSONL read afterwards)."""
    ran = {r["task_id"] for r in records}
    selected = selection["selected"] if selection else sorted(ran)
    not_run: dict[str, str] = selection["not_run"] if selection else {}
    by_reason: dict[str, list[str]] = {}
    for task_id, reason in not_run.items():
        by_reason.setdefault(reason, []).append(task_id)
    return {"selected": len(selected), "run": len(ran),
            "not_run": len(not_run), "subset": bool(not_run),
            "why": [f"{len(ids)} {reason}" for reason, ids in by_reason.items()],
            "not_run_tasks": by_reason,
            "reruns": sum(bool(r.get("reruns")) for r in records)}


def task_counts(records: list[Record]) -> dict[str, int]:
    counted = [r for r in records if scored(r)]
    return {"total": len(records), "scored": len(counted),
            "errors": sum(harness_error(r) for r in records),
            "item_timeouts": sum(item_timed_out(r) for r in records),
            "fixed": sum(r["outcome"] == "fixed" for r in counted),
            "unfixed": sum(r["outcome"] == "unfixed" for r in counted),
            "flagged": sum(bool(r.get("flags")) for r in counted),
            "known_failures": sum(bool(r.get("known_failure")) for r in records)}


def by_bug_type(records: list[Record]) -> list[dict[str, Any]]:
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record["bug_type"], []).append(record)
    return [{"bug_type": name, "fixed": sum(r["outcome"] == "fixed" for r in rows if scored(r)),
             "scored": sum(scored(r) for r in rows),
             "errors": sum(harness_error(r) for r in rows),
             "item_timeouts": sum(item_timed_out(r) for r in rows),
             "pass_at_1": rate(rows)}
            for name, rows in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def by_language(records: list[Record]) -> list[dict[str, Any]]:
    """The same figures per language, in the order the run's records first name them."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record_language(record), []).append(record)
    return [{"language": name, "protocol": rows[0].get("protocol"),
             "dataset_hash": rows[0].get("dataset_hash"), "tasks": task_counts(rows),
             "pass_at_1": rate(rows), "by_bug_type": by_bug_type(rows)}
            for name, rows in groups.items()]


def repairs(records: list[Record]) -> dict[str, Any] | None:
    """What the repair rounds did with their replies (None for a run without rounds): the
    replies asked for in rounds 1 and after, how many repeated code that had already failed
    (asks again included), the rounds those replies made, and how many rounds ended on a repeat
    all the same: rounds that taught the model nothing. Old records, whose attempts carry no
    round, count one round per reply."""
    rounds: set[tuple[int, str, int]] = set()
    wasted: set[tuple[int, str, int]] = set()
    replies = repeated = 0
    for number, record in enumerate(records):
        attempts = record.get("attempts") or []
        for index, attempt in enumerate(attempts):
            round_ = attempt_round(attempt, index)
            if round_ == 0:
                continue
            key = (number, record["task_id"], round_)
            replies += 1
            rounds.add(key)
            if attempt.get("status") == "repeat":
                repeated += 1
            # A round's last reply decides whether it ended on a repeat.
            last = index + 1 == len(attempts) or attempt_round(attempts[index + 1],
                                                                 index + 1) != round_
            if last and attempt.get("status") == "repeat":
                wasted.add(key)
    if not rounds and not any((r.get("protocol") or {}).get("iters") for r in records):
        return None
    return {"replies": replies, "repeated": repeated,
            "repeat_rate": repeated / replies if replies else 0.0,
            "rounds": len(rounds), "wasted_rounds": len(wasted),
            "wasted_rate": len(wasted) / len(rounds) if rounds else 0.0}


def build(records: list[Record], run: dict[str, Any],
          comparison: Comparison | None = None,
          selection: dict[str, Any] | None = None,
          alpha: float = DEFAULT_ALPHA) -> dict[str, Any]:
    """The content of summary.json. `run` holds what records do not: start, end, wall time;
    `selection` which tasks were selected and why some did not run (`coverage`); `alpha` the
    paired gate's level, at which a repeat check's flip rate is turned into power. The gates,
    decided on these figures, are attached afterwards (`attach_gates`)."""
    counted = [r for r in records if scored(r)]
    errors = [r for r in records if harness_error(r)]
    # Passed its tests in a way that may defeat them: fixed, or unfixed under --humanfix-strict.
    flagged = [r for r in counted if r.get("flags")]
    samples = max((_counts(r)[0] for r in counted), default=1)
    counts = [_counts(r) for r in counted]
    first = records[0] if records else {}
    seconds = [float(r.get("seconds") or 0) for r in records]
    tokens = [_tokens(r) for r in records]
    prompt = sum(int((r.get("tokens") or {}).get("prompt", 0)) for r in records)
    slowest = sorted(records, key=lambda r: -float(r.get("seconds") or 0))[:SLOWEST_SHOWN]
    return {
        "run": {
            "model": first.get("model"), "protocol": first.get("protocol"),
            "dataset": first.get("dataset"), "dataset_hash": first.get("dataset_hash"),
            "shard": _shard_label(first.get("shard")),
            "run_ids": sorted({r.get("run_id") for r in records if r.get("run_id")}),
            "computed_by": computations(records),
            "versions": versions(), **run,
        },
        "tasks": task_counts(records),
        "flagged": [{"task_id": r["task_id"], "outcome": r["outcome"], "flags": r["flags"]}
                    for r in flagged],
        "coverage": coverage(records, selection),
        "samples": samples,
        "pass_at_1": rate(records),
        "plus": plus(records),
        "pass_at_1_if_timeouts_failed": if_timeouts_failed(records),
        "pass_at_k": {str(k): mean_pass_at_k(counts, k) for k in range(1, samples + 1)},
        "by_round": by_round(records),
        "repairs": repairs(records),
        "by_bug_type": by_bug_type(records),
        "by_language": by_language(records),
        # Tasks whose reference solution cannot pass on this machine's toolchain
        # (docs/languages.md): run and shown, never in pass@1.
        "known_failures": [{"task_id": r["task_id"], "outcome": r["outcome"],
                            "reason": r["known_failure"]}
                           for r in records if r.get("known_failure")],
        "tokens": {"prompt": prompt, "completion": sum(tokens) - prompt, "total": sum(tokens),
                   "per_task": _spread([float(t) for t in tokens])},
        "seconds": {"total": sum(seconds), "per_task": _spread(seconds)},
        "timeouts": timeouts(records),
        "slowest": [{"task_id": r["task_id"], "seconds": r.get("seconds")} for r in slowest],
        "errors": [{"task_id": r["task_id"], "error": r.get("error", "")} for r in errors],
        "item_timeouts": [{"task_id": r["task_id"], "error": r.get("error", "")}
                          for r in records if item_timed_out(r)],
        "servers": servers(records),
        "servers_out": servers_out(records),
        "repeat_check": repeat_check(
            records, comparison.paired if comparison is not None else len(counted), alpha),
        "baseline": comparison.to_dict() if comparison is not None else None,
        "gates": [],
        "gate_failed": False,
    }


def attach_gates(summary: dict[str, Any], gates: list[GateCheck]) -> None:
    """The gates' checks, decided on the summary's own figures, written into it."""
    summary["gates"] = [vars(g) for g in gates]
    summary["gate_failed"] = any(not g.passed for g in gates)


def computed_by_text(summary: dict[str, Any]) -> str:
    """What computed the replies, in one line (several descriptions joined, with their task
    counts)."""
    entries = summary["run"].get("computed_by") or []
    if len(entries) == 1:
        return str(entries[0]["line"])
    return " | ".join(f"{entry['line']} ({entry['tasks']} tasks)" for entry in entries) \
        or "not recorded"


def run_times(started: datetime, ended: datetime) -> dict[str, Any]:
    return {"started_at": started.isoformat(timespec="seconds"),
            "ended_at": ended.isoformat(timespec="seconds"),
            "wall_seconds": round((ended - started).total_seconds(), 3)}


def times_from_records(records: Iterable[Record]) -> dict[str, Any]:
    """Start and end for a JSONL read afterwards: the first task's start, the last task's end."""
    spans = []
    for record in records:
        try:
            end = datetime.strptime(record["finished_at"], "%Y-%m-%dT%H:%M:%S%z")
        except (KeyError, TypeError, ValueError):
            continue
        spans.append((end.timestamp() - float(record.get("seconds") or 0), end))
    if not spans:
        return {"started_at": None, "ended_at": None, "wall_seconds": None}
    start = datetime.fromtimestamp(min(s for s, _ in spans), tz=spans[0][1].tzinfo)
    return run_times(start, max(e for _, e in spans))
