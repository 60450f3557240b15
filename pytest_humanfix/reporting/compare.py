"""`humanfix-report compare A.jsonl B.jsonl`: two runs of the same tasks side by side at matched
cost: what each had fixed and spent by each round, each run at the round where its spend reaches
the other's whole, the tasks only one fixes with a paired exact McNemar test, the cost of a fix,
and a chart of tasks fixed against tokens spent (docs/reports.md, "Two agents at equal cost")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from ..atomic import write_atomically
from ..protocol import Fingerprint, RecordedProtocol, fingerprint_differences, record_fingerprint
from ..records import Record, attempt_round, natural_order
from . import chart
from .rates import cost, rounds, sample_counts, scored
from .sections import Matched, Measure, RoundSpend, Side, SideBySide
from .stats import mcnemar_exact

# What two compared runs may set otherwise on purpose: the agent, its rounds and temperatures.
MAY_DIFFER = ("agent", "iters", "temperature", "round_temperature", "ask_again_temperature")
MEASURES: tuple[Measure, ...] = ("tokens", "seconds")
# The halves an agent change is chosen on (even) and confirmed on (odd), by the task's number.
HALVES = ("even", "odd")
EVERY_TASK = "all tasks of both runs"  # the selection when nothing narrows it


class CompareError(Exception):
    """The two runs cannot be compared; the message says why."""


def refusal(first: list[Record], second: list[Record]) -> str | None:
    """Why two runs do not compare (None when they do): other tasks, another model, dataset,
    protocol (but for `MAY_DIFFER`), or several samples, which the rounds do not tell apart."""
    if not first or not second:
        return (f"the {'first' if not first else 'second'} run has no task to compare (of those "
                "selected); compare runs that share tasks.")
    tasks = {r["task_id"] for r in first}, {r["task_id"] for r in second}
    if tasks[0] != tasks[1]:
        only = sorted(tasks[0] ^ tasks[1], key=natural_order)
        return (f"the runs are of other tasks ({len(only)} in one only: "
                f"{', '.join(only[:5])}{', ...' if len(only) > 5 else ''}); run both on the "
                "same selection, or compare the tasks both have finished (--common).")
    for records in (first, second):
        if any((r.get("n") or 1) > 1 for r in records):
            return ("a run drew several samples per task (--humanfix-samples); compare reads "
                    "rounds: compare runs of one sample, with rounds (--humanfix-iters).")
    wanted = {r["task_id"]: comparable(r) for r in first}
    for record in second:
        differences = fingerprint_differences(comparable(record), wanted[record["task_id"]])
        if differences:
            return (f"{record['task_id']} was run otherwise: " + "; ".join(differences)
                    + f" (only {', '.join(MAY_DIFFER)} may differ); run both alike.")
    return None


def selected(first: list[Record], second: list[Record], half: str | None = None,
             common: bool = False) -> tuple[list[Record], list[Record], str]:
    """The records compared and what they are: with `half`, only the even- or odd-numbered
    tasks (by the number in the task id); with `common`, only the tasks both runs have a record
    of, as of two runs still under way or stopped, the others counted in the description.
    CompareError where a task has no number to halve by, or the runs share no task."""
    said = []
    if half is not None:
        unnumbered = sorted({r["task_id"] for r in [*first, *second]
                             if natural_order(r["task_id"])[1] < 0})
        if unnumbered:
            raise CompareError(
                f"--tasks {half} halves the tasks by the number in their ids, and "
                f"{len(unnumbered)} have none ({', '.join(unnumbered[:3])}"
                f"{', ...' if len(unnumbered) > 3 else ''}); compare them without --tasks.")
        parity = HALVES.index(half)
        first, second = ([r for r in records if natural_order(r["task_id"])[1] % 2 == parity]
                         for records in (first, second))
        said.append(f"the {half}-numbered tasks")
    if common:
        both = {r["task_id"] for r in first} & {r["task_id"] for r in second}
        left = [len({r["task_id"] for r in records} - both) for records in (first, second)]
        within = " of that half" if half else ""
        if not both:
            raise CompareError(f"the runs have finished no task in common (the first {left[0]}, "
                               f"the second {left[1]}{within}).")
        first, second = ([r for r in records if r["task_id"] in both]
                         for records in (first, second))
        said.append(f"the tasks both runs have finished (left out{within}: {left[0]} of the "
                    f"first run's, {left[1]} of the second's)")
    return first, second, ", ".join(said) or EVERY_TASK


def comparable(record: Record) -> Fingerprint:
    """The record's fingerprint less what `MAY_DIFFER`."""
    fingerprint = record_fingerprint(record)
    protocol = {k: v for k, v in (fingerprint.get("protocol") or {}).items()
                if k not in MAY_DIFFER}
    return Fingerprint(model=fingerprint.get("model"), dataset_hash=fingerprint.get("dataset_hash"),
                       protocol=cast(RecordedProtocol, protocol))


def curve(records: list[Record], counted: set[str]) -> list[RoundSpend]:
    """What the run had fixed and spent within k rounds, for k = 0 .. its last round: the fixes
    as `rates.by_round` counts them, of the `counted` tasks only (those both runs score), and
    the attempts of rounds up to k, over every record."""
    last = rounds(records)
    points: list[RoundSpend] = []
    for k in range(last + 1):
        within = [a for r in records for i, a in enumerate(r.get("attempts") or [])
                  if attempt_round(a, i) <= k]
        points.append({
            "round": k,
            "fixed": sum(sample_counts(r, None if k == last else k)[1]
                         for r in records if r["task_id"] in counted),
            "replies": len(within),
            "tokens": sum(int(a.get("prompt_tokens") or 0) + int(a.get("completion_tokens") or 0)
                          for a in within),
            "seconds": round(sum(float(a.get("generate_seconds") or 0)
                                 + float(a.get("execute_seconds") or 0) for a in within), 4)})
    return points


def matched(side: Side, other: Side, measure: Measure) -> Matched:
    whole = other["curve"][-1][measure]
    point = next((p for p in side["curve"] if p[measure] >= whole), side["curve"][-1])
    return {"measure": measure, "run": side["label"], "round": point["round"],
            "fixed": point["fixed"], "spent": point[measure],
            "other_fixed": other["curve"][-1]["fixed"], "other_spent": whole,
            "reached": point[measure] >= whole}


def side(label: str, records: list[Record], counted: set[str]) -> Side:
    protocol = records[0].get("protocol") or {}
    return {"label": label, "agent": str(protocol.get("agent", "repair")),
            "iters": int(protocol.get("iters") or 0), "curve": curve(records, counted),
            "cost": cost(records)}


def side_by_side(first: list[Record], second: list[Record],
                 labels: tuple[str, str] = ("A", "B"), selection: str = EVERY_TASK
                 ) -> SideBySide:
    """The comparison of two runs (one record per task each), of the tasks `selection` names
    (`selected`); CompareError when they do not compare."""
    reason = refusal(first, second)
    if reason:
        raise CompareError(reason)
    # Only the tasks both runs score pair (an error scored not fixed, a known failure left
    # out), and each run's fixed count divides by this many tasks.
    counted = {r["task_id"] for r in first if scored(r)} & \
        {r["task_id"] for r in second if scored(r)}
    runs = [side(labels[0], first, counted), side(labels[1], second, counted)]
    fixed = [{r["task_id"] for r in records if r["task_id"] in counted and r["outcome"] == "fixed"}
             for records in (first, second)]
    only_first = sorted(fixed[0] - fixed[1], key=natural_order)
    only_second = sorted(fixed[1] - fixed[0], key=natural_order)
    return {"tasks": len(counted), "selection": selection, "runs": runs,
            "matched": [matched(one, other, measure) for measure in MEASURES
                        for one, other in ((runs[1], runs[0]), (runs[0], runs[1]))],
            "only_first": only_first, "only_second": only_second,
            "both_fixed": len(fixed[0] & fixed[1]),
            "neither": len(counted - fixed[0] - fixed[1]),
            "p_value": mcnemar_exact(len(only_first), len(only_second), "two-sided")}


def against_baseline(records: list[Record], baseline: list[Record] | None
                     ) -> SideBySide | None:
    """The run beside a --humanfix-baseline of another agent, over this run's tasks (None for
    a baseline of the same agent, or one that lacks a task of the run or does not compare)."""
    agents = {str((r.get("protocol") or {}).get("agent", "repair"))
              for r in [*records, *(baseline or [])]}
    if not baseline or not records or len(agents) < 2:
        return None
    tasks = {r["task_id"] for r in records}
    try:
        return side_by_side([r for r in baseline if r["task_id"] in tasks], records,
                            ("baseline", "this run"), "this run's tasks")
    except CompareError:
        return None


def name(one: Side) -> str:
    return f"{one['label']} ({one['agent']}, {one['iters']} rounds)"


def lines(compared: SideBySide) -> list[str]:
    """The comparison as compare.md and summary.md say it: a table of each run's fixes and
    whole spend (`rates.cost`: the records' wall seconds), the matched-cost rows (the attempts'
    seconds of generation and execution), the discordant tasks and the test."""
    out = [f"Tasks: {compared['selection']}, {compared['tasks']} scored by both.", "",
           "| run | fixed | replies | tokens | wall seconds | tokens per fix | "
           "wall seconds per fix |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for one in compared["runs"]:
        total, per_fix = one["cost"]["total"], one["cost"]["per_fix"]
        out.append(f"| {name(one)} | {one['curve'][-1]['fixed']}/{compared['tasks']} | "
                   f"{total['replies']:.0f} | {total['tokens']:,.0f} | {total['seconds']:.0f} | "
                   + (f"{per_fix['tokens']:,.0f} | {per_fix['seconds']:.1f} |" if per_fix
                      else "- | - |"))
    out += ["", "At matched cost (each run within the rounds where its spend reaches the "
            "other's whole):", ""]
    for row in compared["matched"]:
        measure, unit = (("tokens", "tokens") if row["measure"] == "tokens"
                         else ("generation and execution seconds", "s"))
        out.append(f"- {measure}: {row['run']} within {row['round']} round(s) fixed "
                   f"{row['fixed']} for {row['spent']:,.0f} {unit}, against {row['other_fixed']}"
                   f" for {row['other_spent']:,.0f} {unit}"
                   + ("" if row["reached"] else " (its whole run spends less)"))
    first, second = (one["label"] for one in compared["runs"])
    out += ["", f"Fixed by {first} only: {len(compared['only_first'])} "
            f"({', '.join(compared['only_first']) or 'none'}); by {second} only: "
            f"{len(compared['only_second'])} ({', '.join(compared['only_second']) or 'none'}); "
            f"both: {compared['both_fixed']}; neither: {compared['neither']}. Exact McNemar "
            f"test, two-sided: p = {compared['p_value']:.3g}."]
    return out


def render(compared: SideBySide) -> str:
    """The SVG text of tasks fixed against tokens spent, a line through each run's rounds."""
    width, height = 720.0, 440.0
    x0, x1, y0, y1 = 70.0, width - 20, 40.0, height - 50
    most_tokens = max((p["tokens"] for one in compared["runs"] for p in one["curve"]), default=0)
    x_ticks = chart._ticks(0.0, float(most_tokens or 1))
    y_ticks = chart._ticks(0.0, float(compared["tasks"] or 1), integer=True)

    # The axes reach the largest value, past the last round tick when it lies beyond.
    x_top, y_top = max(x_ticks[-1], most_tokens, 1), max(y_ticks[-1], compared["tasks"], 1)

    def x(tokens: float) -> float:
        return x0 + (x1 - x0) * tokens / x_top

    def y(fixed: float) -> float:
        return y1 - (y1 - y0) * fixed / y_top

    title = f"tasks fixed against tokens spent, over {compared['tasks']} task(s)"
    body = [chart._label(width / 2, 22, title, size=chart.FONT + 2),
            f'<rect x="{chart._n(x0)}" y="{chart._n(y0)}" width="{chart._n(x1 - x0)}" '
            f'height="{chart._n(y1 - y0)}" fill="none" stroke="{chart.COLOURS["axis"]}"/>']
    for tick in x_ticks:
        body.append(chart._label(x(tick), y1 + 17, chart._tick_text(tick, x_ticks)))
    for tick in y_ticks:
        body.append(chart._label(x0 - 7, y(tick) + chart.FONT * 0.35, f"{tick:.0f}",
                                 anchor="end"))
    body += [chart._label((x0 + x1) / 2, height - 12, "tokens spent (prompt + completion)"),
             chart._label(18, (y0 + y1) / 2, "tasks fixed",
                          extra=f' transform="rotate(-90 18 {chart._n((y0 + y1) / 2)})"')]
    for number, one in enumerate(compared["runs"]):
        colour = chart.PALETTE[number]
        points = [(x(p["tokens"]), y(p["fixed"])) for p in one["curve"]]
        body += [f'<g class="run" data-label={chart._attr(name(one))}>',
                 f'<path d="{chart._polyline(points)}" stroke="{colour}" stroke-width="2" '
                 f'fill="none"/>']
        for point, (px, py) in zip(one["curve"], points, strict=True):
            hover = (f"{name(one)}: within {point['round']} round(s), {point['fixed']} fixed "
                     f"for {point['tokens']:,} tokens")
            body.append(f'<circle cx="{chart._n(px)}" cy="{chart._n(py)}" r="3.5" '
                        f'fill="{colour}" data-round="{point["round"]}" '
                        f'data-fixed="{point["fixed"]}" data-tokens="{point["tokens"]}">'
                        f'<title>{chart._text(hover)}</title></circle>')
        body += [chart._label(x0 + 10, y0 + 18 + 18 * number, name(one), anchor="start",
                              extra=f' fill="{colour}"'), "</g>"]
    return chart._svg(width, height, f"humanfix: {title}", body)


def write_chart(compared: SideBySide, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomically(path, render(compared))


def labels_of(paths: Sequence[Path]) -> tuple[str, str]:
    """The runs' names: their files, told apart by their folders when the names agree."""
    names = [path.name for path in paths]
    if names[0] == names[1]:
        names = [f"{path.parent.name}/{path.name}" for path in paths]
    return names[0], names[1]
