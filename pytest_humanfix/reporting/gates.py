"""CI gates: pass@1 against --humanfix-fail-under, a task-by-task baseline comparison (McNemar's
exact test, one-sided: only a significant drop fails), the computations compared, and whether
every selected task ran. docs/reports.md ("CI gates", "Why a paired test") explains them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..computed_by import ComputedBy, describe, differences
from ..jsonl import JsonlError
from ..protocol import Fingerprint, language_differences, options_of
from ..records import Record, latest_per_task, natural_order, read_records
from .rates import rate, scored
from .sections import BaselineFigures, Coverage, GateRow, RepeatFigures, Summary
from .stats import mcnemar_exact, pct


class BaselineError(Exception):
    """The baseline cannot be compared with this run; the message says why."""


def load_baseline(path: Path, wanted: dict[str, Fingerprint]) -> dict[str, Record]:
    """The baseline's records by task id (a task's last, `latest_per_task`, as every reader
    takes it), refused unless they were made under this run's protocol and on the same dataset
    content, in one of its languages (`wanted`: the protocol and dataset hash by language)."""
    if not path.is_file():
        raise BaselineError(f"--humanfix-baseline: {path} is not a file; pass the results JSONL "
                            "of an earlier run (e.g. reports/humanfix.jsonl).")
    try:
        rows = read_records(path, bad_lines="torn-tail")  # an interrupted run's torn last line
    except JsonlError as exc:
        raise BaselineError(f"--humanfix-baseline: {exc}, and it is not the last line; pass "
                            "the results JSONL of an earlier run.") from None
    for number, record in enumerate(rows, 1):
        if "task_id" not in record or "outcome" not in record:
            raise BaselineError(f"--humanfix-baseline: {path} record {number} is not a humanfix "
                                "result record (no task_id/outcome).")
        other_language, mismatch = language_differences(record, wanted, baseline=True)
        if other_language:
            raise BaselineError(
                f"--humanfix-baseline: {path} holds {other_language} results ({record['task_id']})"
                f" and this run evaluates {', '.join(wanted)}: a baseline compares only within "
                f"its language. Pass a baseline made with --humanfix-language "
                f"{','.join(wanted)}.")
        if mismatch:
            raise BaselineError(
                f"--humanfix-baseline: {path} was made under another protocol or dataset "
                f"({'; '.join(mismatch)}); scores compare only under the same protocol. "
                f"Re-run the baseline with this run's options ({options_of(mismatch)}).")
    records = {record["task_id"]: record for record in latest_per_task(rows)}
    if not records:
        raise BaselineError(f"--humanfix-baseline: {path} holds no result records.")
    return records


@dataclass
class Comparison:
    regressions: list[str] = field(default_factory=list)   # fixed in the baseline, not now
    improvements: list[str] = field(default_factory=list)  # not fixed in the baseline, fixed now
    both_fixed: int = 0
    both_unfixed: int = 0
    # Missing, or a known failure on either side: what pass@1 leaves out. An error pairs as
    # not fixed, as pass@1 scores it: a fix lost to an error is a regression.
    unpaired: list[str] = field(default_factory=list)
    # The baseline's records of this run's tasks: what the baseline was.
    before: list[Record] = field(default_factory=list)
    # The paired tasks' records, the baseline's and this run's: the two pass@1 compared, over
    # the same tasks (a baseline of fewer tasks is no drop).
    paired_before: list[Record] = field(default_factory=list)
    paired_now: list[Record] = field(default_factory=list)

    @property
    def paired(self) -> int:
        return len(self.regressions) + len(self.improvements) + self.both_fixed + self.both_unfixed

    @property
    def p_value(self) -> float:
        return mcnemar_exact(len(self.regressions), len(self.improvements), "drop")

    def figures(self) -> BaselineFigures:
        """The comparison as summary.json's `baseline` holds it: the task lists by task id,
        the baseline's pass@1 over the paired tasks and the change to this run's over them,
        and what the baseline was (model, agent, runs, what computed its replies)."""
        before, now = rate(self.paired_before), rate(self.paired_now)
        first: Record = self.before[0] if self.before else {}
        return {"regressions": sorted(self.regressions, key=natural_order),
                "improvements": sorted(self.improvements, key=natural_order),
                "both_fixed": self.both_fixed, "both_unfixed": self.both_unfixed,
                "unpaired": sorted(self.unpaired, key=natural_order), "paired": self.paired,
                "p_value": self.p_value, "test": "exact McNemar, one-sided (drop)",
                "pass_at_1": before, "change": now["value"] - before["value"],
                "model": first.get("model"),
                "agent": (first.get("protocol") or {}).get("agent", "repair"),
                "run_ids": sorted({str(r["run_id"]) for r in self.before if r.get("run_id")}),
                "computed_by": describe(first_computed_by(self.before))}


def pairable(record: Record) -> bool:
    """pass@1 scores the record, so the paired gates may pair it."""
    return scored(record)


def compare(records: Iterable[Record], baseline: dict[str, Record]) -> Comparison:
    """Pairs each task's outcome now with its baseline outcome (the first sample's outcome
    when several samples were drawn; an error is not fixed). A task pass@1 does not score on
    either side, a known failure (a listed flaky task passes one run and fails the next), is
    unpaired."""
    result = Comparison()
    for record in records:
        task_id = record["task_id"]
        earlier = baseline.get(task_id)
        if earlier is not None:
            result.before.append(earlier)
        if earlier is None or not (pairable(earlier) and pairable(record)):
            result.unpaired.append(task_id)
            continue
        result.paired_before.append(earlier)
        result.paired_now.append(record)
        before, now = earlier["outcome"], record["outcome"]
        if before == "fixed" and now != "fixed":
            result.regressions.append(task_id)
        elif before != "fixed" and now == "fixed":
            result.improvements.append(task_id)
        elif now == "fixed":
            result.both_fixed += 1
        else:
            result.both_unfixed += 1
    return result


@dataclass
class GateCheck:
    name: str
    passed: bool
    reason: str

    def row(self) -> GateRow:
        """The check as summary.json's `gates` lists it."""
        return {"name": self.name, "passed": self.passed, "reason": self.reason}


def check_gates(pass_at_1: float, scored: int, fail_under: float | None,
                comparison: Comparison | None, alpha: float,
                max_regressions: int | None, noise: str | None = None) -> list[GateCheck]:
    """The gates' checks; `noise`, the repeat check's flip rate and what it means, is quoted
    beside the baseline's verdict."""
    checks = []
    if fail_under is not None:
        held = scored > 0 and pass_at_1 >= fail_under
        checks.append(GateCheck("fail-under", held,
                                f"pass@1 {pass_at_1:.4f} over {scored} scored task(s) is "
                                f"{'at or above' if held else 'under'} --humanfix-fail-under "
                                f"{fail_under:g}"))
    if comparison is not None:
        regressions, improvements = len(comparison.regressions), len(comparison.improvements)
        p = comparison.p_value
        checks.append(GateCheck("baseline", p >= alpha,
                                f"{regressions} regression(s), {improvements} improvement(s) "
                                f"against the baseline: exact McNemar one-sided p={p:.4g} "
                                f"{'<' if p < alpha else '>='} alpha {alpha:g}"
                                + (f"; {noise}" if noise else "")))
        if max_regressions is not None:
            checks.append(GateCheck("max-regressions", regressions <= max_regressions,
                                    f"{regressions} regression(s) against the baseline, "
                                    f"--humanfix-max-regressions {max_regressions}"))
    return checks


def noise_note(repeat: RepeatFigures) -> str:
    """The flip rate and what it means for the paired gate, as the gate's verdict quotes it."""
    detect = repeat["detectable_drop"]
    flips = repeat["outcomes_flipped"]
    note = f"observed flip rate {flips['count']}/{flips['of']} on the repeat check"
    if detect["drop"] is None:
        return note + (f": over {detect['tasks']} task(s) no drop is caught with "
                       f"{pct(detect['power'])} power at alpha {detect['alpha']:g}")
    return note + (f": over {detect['tasks']} task(s) a drop smaller than {detect['drop']} "
                   f"task(s) is within noise (the gate catches {detect['drop']} with "
                   f"{pct(detect['power'])} power at alpha {detect['alpha']:g})")


def gate_checks(summary: Summary, comparison: Comparison | None,
                fail_under: float | None, alpha: float, max_regressions: int | None,
                computed_by_mismatch: str, baseline: Iterable[Record], records: Iterable[Record],
                whole_selection: bool = False) -> list[GateCheck]:
    """Every gate a run or a report is held to, decided on its summary's figures: pass@1's
    floor, the paired comparison with the baseline and the computations it was made with, and
    (`whole_selection`, a run's) whether every selected task ran."""
    checks = []
    if fail_under is not None or comparison is not None:
        rate, repeat = summary["pass_at_1"], summary["repeat_check"]
        checks = check_gates(rate["value"], rate["tasks"], fail_under, comparison, alpha,
                             max_regressions, noise_note(repeat) if repeat else None)
    if comparison is not None:
        mismatch = computed_by_check(baseline, records, computed_by_mismatch)
        if mismatch is not None:
            checks.append(mismatch)
    raised = agent_error_check(summary) if checks else None
    if raised is not None:
        checks.append(raised)
    incomplete = completeness_check(summary["coverage"]) if whole_selection else None
    return [incomplete, *checks] if incomplete is not None else checks


def first_computed_by(records: Iterable[Record]) -> ComputedBy | None:
    """What computed the first replies of these records (None: not recorded)."""
    return next((r["computed_by"] for r in records if r.get("computed_by")), None)


def computed_by_check(baseline: Iterable[Record], records: Iterable[Record],
                      mismatch: str) -> GateCheck | None:
    """A check when the baseline's replies were computed otherwise than this run's: its
    regressions may then be the build's or the device's, not the model's. It holds, saying
    which fields differ in one line, unless `mismatch` is "error"."""
    lines = differences(first_computed_by(baseline), first_computed_by(records))
    if not lines:
        return None
    what = "; ".join(lines)
    if mismatch == "error":
        return GateCheck("computed-by", False,
                         f"the baseline was computed otherwise than this run ({what}), and "
                         "--humanfix-computed-by-mismatch error refuses that comparison")
    return GateCheck("computed-by", True,
                     f"WARNING: the baseline was computed otherwise than this run ({what}): a "
                     "regression may be the computation's, not the model's "
                     "(--humanfix-computed-by-mismatch error makes this fail)")


def agent_error_check(summary: Summary) -> GateCheck | None:
    """A check naming the tasks a brought agent raised on, so that no gate holds silently over
    them (they are scored not fixed); it fails when the agent raised on every scored task,
    where nothing was evaluated, whatever floor the other gates set."""
    count, scored = summary["tasks"]["agent_errors"], summary["tasks"]["scored"]
    if not count:
        return None
    first = summary["agent_errors"][0]
    said = f"{first['type']}: {first['message']}" if first["message"] else first["type"]
    if count == scored:
        return GateCheck("agent-errors", False,
                         f"the agent raised on every one of the {scored} scored task(s) (first, "
                         f"{first['task_id']}: {said}): no candidate was graded; fix the agent")
    return GateCheck("agent-errors", True,
                     f"the agent raised on {count} of {scored} scored task(s), scored not fixed "
                     f"(first, {first['task_id']}: {said})")


def completeness_check(coverage: Coverage | None) -> GateCheck | None:
    """A failed check when selected tasks did not run: a figure over a subset would pass or
    fail a gate that the whole selection might not."""
    if not coverage or not coverage["not_run"]:
        return None
    return GateCheck("complete", False,
                     f"{coverage['not_run']} of {coverage['selected']} selected task(s) did not "
                     f"run ({'; '.join(coverage['why'])}): gates judge complete runs only; "
                     "finish it with --humanfix-resume")


def verdict_line(checks: list[GateCheck]) -> str:
    """The one line that ends the summary: why the run failed, or that every gate held."""
    failed = [c for c in checks if not c.passed]
    if failed:
        return "humanfix gate FAILED: " + "; ".join(c.reason for c in failed)
    return "humanfix gates held: " + "; ".join(c.reason for c in checks)


def regressed_reason(now: Record | None, then: Record) -> str:
    """Why a task the baseline fixed is not fixed now, in one line."""
    if now is None:
        return "no record in this run"
    said = str(now.get("failure") or now.get("error") or "").strip().splitlines()
    status = (now.get("verdict") or {}).get("status") or now["outcome"]
    return (f"fixed in the baseline (round {then.get('fixed_round', '?')}), now {status}"
            + (f": {said[0][:160]}" if said else ""))


def failure_lines(summary: Summary, records: Iterable[Record], baseline: dict[str, Record],
                  page: Path) -> list[str]:
    """Under a failed gate, each regressed task with why, and the page that shows them beside
    the baseline; nothing when the gates held or nothing regressed."""
    figures = summary["baseline"]
    if not summary["gate_failed"] or not figures or not figures["regressions"]:
        return []
    now = {r["task_id"]: r for r in records}
    return [*(f"  regressed {task_id}: {regressed_reason(now.get(task_id), baseline[task_id])}"
              for task_id in figures["regressions"]),
            f"  the regressed tasks beside the baseline's fixes: {page}"]
