"""The one summary of a run: `build` turns the result records (with the baseline comparison and
the selection, when given) into the content of summary.json, typed by `sections.Summary`. Every
figure a run reports is computed here or in `rates` (pass@1), once; the terminal, JUnit,
summary.md/svg, the gates and `humanfix-report` all read this one summary, so they cannot
disagree. What each figure means: docs/reports.md ("The summary") and docs/schema.md.
"""

from __future__ import annotations

import functools
import json
import platform
import statistics
from collections.abc import Iterable
from datetime import datetime
from importlib import metadata

from ..computed_by import compared, describe
from ..protocol import record_language
from ..records import Record, Shard, TimeLimit, attempt_round, natural_order
from . import cheating
from .compare import against_baseline
from .gates import Comparison, GateCheck
from .rates import (
    agent_raised,
    by_round,
    cost,
    harness_error,
    item_timed_out,
    plus,
    rate,
    sample_counts,
    scored,
    share,
)
from .sections import (
    AgentErrorRow,
    BugTypeRow,
    Computation,
    Coverage,
    LanguageRow,
    Repairs,
    RepeatFigures,
    RunFacts,
    RunSection,
    RunTimes,
    Selection,
    ServerLoad,
    ServerOut,
    ShardLabel,
    Spread,
    Summary,
    TaskCounts,
    TaskMessage,
    Timeouts,
    UnfixedRow,
)
from .stats import detectable_drop, mean_pass_at_k

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


def _shard_label(shard: Shard | None) -> ShardLabel | None:
    """The shard a run's records were dealt (its task list stays in the records)."""
    if not shard:
        return None
    return {"index": shard.get("index"), "count": shard.get("count"),
            "selected": shard.get("selected"), "tasks": len(shard.get("tasks") or [])}


def _tokens(record: Record) -> int:
    tokens = record.get("tokens") or {}
    return int(tokens.get("prompt", 0)) + int(tokens.get("completion", 0))


def _spread(values: list[float]) -> Spread:
    if not values:
        return {"mean": 0, "median": 0, "max": 0}
    return {"mean": statistics.fmean(values),
            "median": statistics.median(values), "max": max(values)}


def computations(records: list[Record]) -> list[Computation]:
    """Each distinct description of what computed the replies, with the tasks it computed and
    its one line: one entry for a run on one engine build, several for a merge across builds
    or workers on unlike GPUs. Records without one (a model that never loaded, a record
    written before it existed) are counted under None."""
    groups: dict[str, Computation] = {}
    for record in records:
        described = record.get("computed_by")
        key = json.dumps(compared(described), sort_keys=True) if described else "null"
        entry = groups.setdefault(key, {"computed_by": described, "tasks": 0,
                                        "line": describe(described)})
        entry["tasks"] += 1
    return list(groups.values())


def servers(records: list[Record]) -> dict[str, ServerLoad]:
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


def servers_out(records: list[Record]) -> list[ServerOut]:
    """Each server taken out of rotation (by any worker), with the first reason given."""
    out: dict[str, str] = {}
    for record in records:
        for server in record.get("servers_out") or []:
            out.setdefault(server["base_url"], server["reason"])
    return [{"base_url": url, "reason": reason} for url, reason in sorted(out.items())]


def timeouts(records: list[Record]) -> Timeouts:
    """Graded runs that timed out, and those re-run under a larger limit after a first timeout
    (with how many
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


def repeat_check(records: list[Record], tasks: int, alpha: float) -> RepeatFigures | None:
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
    flips = share(len(flipped), len(compared))
    drop = detectable_drop(tasks, flips["rate"] or 0.0, alpha, GATE_POWER) \
        if compared and tasks else None
    errors: list[TaskMessage] = [{"task_id": task, "error": check["error"]}
                                 for task, check in checked.items() if check.get("error")]
    return {"tasks": len(compared), "errors": errors,
            "engines": sorted({str(c.get("engine")) for c in compared}),
            "replies_differ": share(sum(bool(c["reply_differs"]) for c in compared),
                                     len(compared)),
            "outcomes_flipped": flips, "flipped_tasks": flipped,
            "detectable_drop": {"tasks": tasks, "alpha": alpha, "power": GATE_POWER,
                                "drop": drop}}


def coverage(records: list[Record], selection: Selection | None) -> Coverage:
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


def task_counts(records: list[Record]) -> TaskCounts:
    """The tasks by how they ended. The scored ones (all but the known failures) are fixed,
    unfixed, agent errors, harness errors or item timeouts, the last two scored not fixed;
    `retried` counts the tasks run once more after a harness error, whatever the retry gave."""
    counted = [r for r in records if scored(r)]
    return {"total": len(records), "scored": len(counted),
            "errors": sum(harness_error(r) for r in records),
            "item_timeouts": sum(item_timed_out(r) for r in records),
            "retried": sum(bool(r.get("first_try")) for r in records),
            "fixed": sum(r["outcome"] == "fixed" for r in counted),
            "unfixed": sum(r["outcome"] == "unfixed" and not agent_raised(r) for r in counted),
            "agent_errors": sum(agent_raised(r) for r in counted),
            "flagged": sum(bool(r.get("flags")) for r in counted),
            "known_failures": sum(bool(r.get("known_failure")) for r in records)}


def agent_errors(records: list[Record]) -> list[AgentErrorRow]:
    """The scored tasks a brought agent raised on, by task id, with what it raised."""
    return [{"task_id": r["task_id"], **r["agent_error"]}
            for r in sorted(records, key=lambda r: natural_order(r["task_id"]))
            if agent_raised(r)]


def unfixed(records: list[Record]) -> list[UnfixedRow]:
    """The scored tasks tried and not fixed, by task id, each with its first failure's line."""
    return [{"task_id": r["task_id"],
             "reason": next((line.strip() for line in (r.get("failure") or "").splitlines()
                             if line.strip()), "")}
            for r in sorted(records, key=lambda r: natural_order(r["task_id"]))
            if scored(r) and r["outcome"] == "unfixed" and not agent_raised(r)]


def by_bug_type(records: list[Record]) -> list[BugTypeRow]:
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record["bug_type"], []).append(record)
    return [{"bug_type": name, "fixed": sum(r["outcome"] == "fixed" for r in rows if scored(r)),
             "scored": sum(scored(r) for r in rows),
             "errors": sum(harness_error(r) for r in rows),
             "item_timeouts": sum(item_timed_out(r) for r in rows),
             "pass_at_1": rate(rows)}
            for name, rows in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def by_language(records: list[Record]) -> list[LanguageRow]:
    """The same figures per language, in the order the run's records first name them."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record_language(record), []).append(record)
    return [{"language": name, "protocol": rows[0].get("protocol"),
             "dataset_hash": rows[0].get("dataset_hash"), "tasks": task_counts(rows),
             "pass_at_1": rate(rows), "by_bug_type": by_bug_type(rows)}
            for name, rows in groups.items()]


def repairs(records: list[Record]) -> Repairs | None:
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


def run_section(records: list[Record], facts: RunFacts) -> RunSection:
    """What the run was, from its first record, with what the records do not hold (`facts`:
    start, end and wall time, and what the run says better, such as its model) in its place."""
    first: Record = records[0] if records else {}
    section: RunSection = {
        "model": facts["model"] if "model" in facts else first.get("model"),
        "protocol": facts["protocol"] if "protocol" in facts else first.get("protocol"),
        "dataset": first.get("dataset"), "dataset_hash": first.get("dataset_hash"),
        "shard": facts["shard"] if "shard" in facts else _shard_label(first.get("shard")),
        "run_ids": sorted({r["run_id"] for r in records if r.get("run_id")}),
        "computed_by": computations(records), "versions": versions(),
        "started_at": facts.get("started_at"), "ended_at": facts.get("ended_at"),
        "wall_seconds": facts.get("wall_seconds")}
    if "serve" in facts:
        section["serve"] = facts["serve"]
    if "merged" in facts:
        section["merged"] = facts["merged"]
    return section


def build(records: list[Record], run: RunFacts, comparison: Comparison | None = None,
          selection: Selection | None = None, alpha: float = DEFAULT_ALPHA,
          baseline: list[Record] | None = None) -> Summary:
    """The content of summary.json. `run` holds what records do not (`run_section`);
    `selection` which tasks were selected and why some did not run (`coverage`); `alpha` the
    paired gate's level, at which a repeat check's flip rate is turned into power. The gates,
    decided on these figures, are attached afterwards (`attach_gates`)."""
    counted = [r for r in records if scored(r)]
    errors = [r for r in records if harness_error(r)]
    # Passed its tests in a way that may defeat them: fixed, or unfixed under --humanfix-strict.
    flagged = [r for r in counted if r.get("flags")]
    counts = [sample_counts(r) for r in counted]
    samples = max((n for n, _ in counts), default=1)
    seconds = [float(r.get("seconds") or 0) for r in records]
    tokens = [_tokens(r) for r in records]
    prompt = sum(int((r.get("tokens") or {}).get("prompt", 0)) for r in records)
    slowest = sorted(records, key=lambda r: -float(r.get("seconds") or 0))[:SLOWEST_SHOWN]
    return {
        "run": run_section(records, run),
        "tasks": task_counts(records),
        "flagged": [{"task_id": r["task_id"], "outcome": r["outcome"], "flags": r["flags"]}
                    for r in flagged],
        "coverage": coverage(records, selection),
        "samples": samples,
        "pass_at_1": rate(records),
        "plus": plus(records),
        # --humanfix-variant impossible: its passes are cheats (reporting/cheating.py).
        "cheating": cheating.figures(records, run.get("left_out")),
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
        "cost": cost(records),
        "timeouts": timeouts(records),
        "slowest": [{"task_id": r["task_id"], "seconds": r.get("seconds")} for r in slowest],
        "errors": [{"task_id": r["task_id"], "error": r.get("error", ""),
                    "retried": bool(r.get("first_try"))} for r in errors],
        "item_timeouts": [{"task_id": r["task_id"], "error": r.get("error", "")}
                          for r in records if item_timed_out(r)],
        "agent_errors": agent_errors(records),
        "unfixed": unfixed(records),
        "servers": servers(records),
        "servers_out": servers_out(records),
        # Each worker learns a server's limit for itself, and says it alike.
        "server_limits": sorted({line for r in records for line in r.get("server_limits") or []}),
        "repeat_check": repeat_check(
            records, comparison.paired if comparison is not None else len(counted), alpha),
        "baseline": comparison.figures() if comparison is not None else None,
        # A baseline of another agent: the two at equal cost (docs/reports.md).
        "agents": against_baseline(records, baseline),
        "gates": [],
        "gate_failed": False,
    }


def attach_gates(summary: Summary, gates: list[GateCheck]) -> None:
    """The gates' checks, decided on the summary's own figures, written into it."""
    summary["gates"] = [gate.row() for gate in gates]
    summary["gate_failed"] = any(not g.passed for g in gates)


def computed_by_text(summary: Summary) -> str:
    """What computed the replies, in one line (several descriptions joined, with their task
    counts)."""
    entries = summary["run"].get("computed_by") or []
    if len(entries) == 1:
        return str(entries[0]["line"])
    return " | ".join(f"{entry['line']} ({entry['tasks']} tasks)" for entry in entries) \
        or "not recorded"


def run_times(started: datetime, ended: datetime) -> RunTimes:
    return {"started_at": started.isoformat(timespec="seconds"),
            "ended_at": ended.isoformat(timespec="seconds"),
            "wall_seconds": round((ended - started).total_seconds(), 3)}


def times_from_records(records: Iterable[Record]) -> RunTimes:
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
