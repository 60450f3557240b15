"""`humanfix-report`: the end-of-run summary, files and gates rebuilt from a results JSONL
(`humanfix-report RESULTS.jsonl`), the shards of a run joined into one (`merge`), several
runs' pass@1 by repair round on one chart (`rounds`), and two agents at equal cost (`compare`).
Usage: docs/reports.md and docs/beyond.md ("merge").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..jsonl import JsonlError
from ..protocol import fingerprint_differences, record_fingerprint, record_language, without_model
from ..records import Record, latest_per_task, read_records
from . import compare as compare_mod, files, rates, summary as summary_mod, terminal
from .chart import write_rounds_chart
from .gates import (
    BaselineError,
    compare,
    gate_checks,
    load_baseline,
    verdict_line,
)
from .junit import write_junit
from .merge import MergeError, merge
from .sections import RunFacts

MERGED_JSONL = "humanfix.jsonl"


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", type=Path, help="results JSONL of an earlier run")
    parser.add_argument("--fail-under", type=float, help="gate: fail when pass@1 is below F")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the paired regression test (default 0.05)")
    parser.add_argument("--max-regressions", type=int,
                        help="gate: fail when more than N tasks regress against the baseline")
    parser.add_argument("--computed-by-mismatch", choices=("warn", "error"), default="warn",
                        help="when the baseline was computed otherwise than the results (engine, "
                             "build, kernels, device, dtype, determinism): warn (default) or "
                             "error (the gate fails)")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="humanfix-report",
        description="Render summary.json, summary.md and summary.svg from a humanfix results "
                    "JSONL; with --baseline, compare task by task. Exit status 1 when a gate "
                    "given here fails, 2 on bad input. `humanfix-report merge SHARD.jsonl...` "
                    "joins the results of --humanfix-shard runs first; `humanfix-report rounds "
                    "RESULTS.jsonl...` draws several runs' pass@1 by repair round.")
    parser.add_argument("results", type=Path, help="results JSONL of a run")
    parser.add_argument("--out", type=Path,
                        help="folder for the summary files (default: the results file's folder)")
    add_gate_options(parser)
    return parser.parse_args(argv)


def parse_merge_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="humanfix-report merge",
        description=f"Join the results JSONL of every shard of a --humanfix-shard run into "
                    f"DIR/{MERGED_JSONL}, and write junit.xml and the summary files of the "
                    "whole run there. Refuses shards of different runs, a task given twice, "
                    "and a missing shard or task. Exit status 1 when a gate given here fails, "
                    "2 on bad input.")
    parser.add_argument("shards", type=Path, nargs="+", help="results JSONL of each shard")
    parser.add_argument("--accept-computed-by-differences", action="store_true",
                        help="merge shards whose replies were computed otherwise (another "
                             "engine build, kernels, device, dtype or determinism); the summary "
                             "then lists each with its tasks")
    parser.add_argument("--out", type=Path, default=Path("reports"),
                        help="folder for the merged JSONL and the reports (default reports)")
    add_gate_options(parser)
    return parser.parse_args(argv)


def parse_rounds_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="humanfix-report rounds",
        description="Draw pass@1 within k repair rounds (k = 0 .. --humanfix-iters) of each "
                    "run on one SVG chart, a curve per run labelled by its model, and print "
                    "the figures. Warns when the runs differ in protocol, dataset or tasks. "
                    "Exit status 2 on bad input.")
    parser.add_argument("results", type=Path, nargs="+", help="results JSONL of each run")
    parser.add_argument("-o", "--out", type=Path, default=Path("rounds.svg"),
                        help="the chart to write (default rounds.svg)")
    return parser.parse_args(argv)


def parse_compare_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="humanfix-report compare",
        description="Two runs of the same tasks side by side at matched cost (pass@1 within k "
                    "rounds against the tokens and seconds spent, the tasks only one fixes with "
                    "an exact McNemar test, the cost of a fix), written to DIR/compare.json, "
                    "compare.md and compare.svg. Refuses runs of other tasks, model, dataset or "
                    "protocol (but for the agent, its rounds and temperatures). Exit status 2 on "
                    "bad input.")
    parser.add_argument("first", type=Path, help="results JSONL of the first run (A)")
    parser.add_argument("second", type=Path, help="results JSONL of the second run (B)")
    parser.add_argument("--out", type=Path, default=Path("."),
                        help="folder for compare.json, compare.md and compare.svg (default .)")
    return parser.parse_args(argv)


def main_compare(args: argparse.Namespace) -> int:
    runs = [load_results(path) for path in (args.first, args.second)]
    for records in runs:
        if isinstance(records, str):
            return fail(records)
    first, second = (r for r in runs if not isinstance(r, str))
    try:
        compared = compare_mod.side_by_side(first, second,
                                            compare_mod.labels_of((args.first, args.second)))
    except compare_mod.CompareError as exc:
        return fail(f"{args.first} and {args.second} do not compare: {exc}")
    args.out.mkdir(parents=True, exist_ok=True)
    text = compare_mod.lines(compared)
    (args.out / "compare.json").write_text(json.dumps(compared, indent=2) + "\n",
                                           encoding="utf-8")
    (args.out / "compare.md").write_text("\n".join(text) + "\n", encoding="utf-8")
    chart = compare_mod.write_chart(compared, args.out / "compare.svg")
    print("\n".join([*text, "", f"wrote {args.out / 'compare.json'}, {args.out / 'compare.md'}, "
                     f"{chart}"]))
    return 0


def fail(message: str) -> int:
    print(f"humanfix-report: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return main_merge(parse_merge_args(argv[1:]))
    if argv[:1] == ["rounds"]:
        return main_rounds(parse_rounds_args(argv[1:]))
    if argv[:1] == ["compare"]:
        return main_compare(parse_compare_args(argv[1:]))
    args = parse_args(argv)
    records = load_results(args.results)
    if isinstance(records, str):
        return fail(records)
    return report(records, {}, args, args.out or args.results.parent, junit=False)


def load_results(path: Path) -> list[Record] | str:
    """The records of a results JSONL, one per task, or why there are none to read."""
    if not path.is_file():
        return f"{path} is not a file."
    try:
        records = latest_per_task(read_records(path, bad_lines="torn-tail"))
    except JsonlError as exc:
        return f"{exc}; only a torn last line is skipped."
    return records or f"{path} holds no result records."


def main_rounds(args: argparse.Namespace) -> int:
    runs: list[tuple[Path, list[Record]]] = []
    for path in args.results:
        records = load_results(path)
        if isinstance(records, str):
            return fail(records)
        runs.append((path, records))
    models = [str(records[0].get("model")) for _, records in runs]
    # A model given twice (two protocols, two dates) is told apart by its file.
    labels = [model if models.count(model) == 1 else f"{model} ({path.name})"
              for model, (path, _) in zip(models, runs, strict=True)]
    curves = [(label, rates.by_round(records))
              for label, (_, records) in zip(labels, runs, strict=True)]
    lines = [f"{label}: pass@1 by round: {terminal.by_round_text(rows)} "
             f"(over {rows[-1]['tasks']} scored task(s))" for label, rows in curves]
    lines += rounds_warnings(runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    lines.append(f"wrote {write_rounds_chart(curves, args.out)}")
    print("\n".join(lines))
    return 0


def rounds_warnings(runs: list[tuple[Path, list[Record]]]) -> list[str]:
    """Where a run's curve is not comparable with the first's: another protocol or dataset in
    a language both ran, or other tasks."""
    first_path, first = runs[0]
    wanted = {record_language(r): without_model(record_fingerprint(r)) for r in first}
    tasks = {r["task_id"] for r in first if rates.scored(r)}
    lines = []
    for path, records in runs[1:]:
        found = {record_language(r): without_model(record_fingerprint(r)) for r in records}
        differences = [f"{language} {line}" for language in wanted if language in found
                       for line in fingerprint_differences(found[language], wanted[language])]
        if differences:
            lines.append(f"WARNING: {path} was run otherwise than {first_path}: "
                         + "; ".join(differences))
        if {r["task_id"] for r in records if rates.scored(r)} != tasks:
            lines.append(f"WARNING: {path} scores other tasks than {first_path}")
    return lines


def main_merge(args: argparse.Namespace) -> int:
    try:
        records, shards = merge(args.shards, args.accept_computed_by_differences)
    except MergeError as exc:
        return fail(str(exc))
    args.out.mkdir(parents=True, exist_ok=True)
    merged = args.out / MERGED_JSONL
    if merged.resolve() in {path.resolve() for path in args.shards}:
        return fail(f"--out {args.out} would overwrite the shard {merged}; choose another folder.")
    merged.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                      encoding="utf-8")
    print(f"merged {len(shards)} shard(s), {len(records)} task(s) into {merged}")
    # The whole run is no shard; the shards it came from are listed instead.
    facts: RunFacts = {"shard": None, "merged": [shard.label() for shard in shards]}
    return report(records, facts, args, args.out, junit=True)


def report(records: list[Record], facts: RunFacts, args: argparse.Namespace,
           out: Path, junit: bool) -> int:
    """Compares with the baseline, checks the gates, writes the report files and prints the
    summary; the exit status."""
    comparison = None
    baseline: dict[str, Record] = {}
    if args.baseline is not None:
        try:
            baseline = load_baseline(args.baseline, {
                record_language(r): without_model(record_fingerprint(r)) for r in records})
        except BaselineError as exc:
            return fail(str(exc))
        comparison = compare(records, baseline)
    if args.max_regressions is not None and comparison is None:
        return fail("--max-regressions needs --baseline.")
    run: RunFacts = {**summary_mod.times_from_records(records), **facts}
    summary = summary_mod.build(records, run, comparison, alpha=args.alpha,
                                baseline=list(baseline.values()) if baseline else None)
    gated = args.fail_under is not None or comparison is not None
    checks = gate_checks(summary, comparison, args.fail_under, args.alpha,
                         args.max_regressions, args.computed_by_mismatch, baseline.values(),
                         records)
    summary_mod.attach_gates(summary, checks)
    problem = None
    try:
        written = files.write_reports(summary, records, out)
    except files.ChartError as exc:  # as in a run: the summary files stand without it
        written, problem = exc.written, exc.warning()
    if junit:
        written.insert(0, write_junit(summary, records, out / "junit.xml", gated))
    lines = terminal.summary_lines(summary)
    lines += [f"wrote {path}" for path in written]
    if problem:
        lines.append(problem)
    if checks:
        lines.append(verdict_line(checks))
    print("\n".join(lines))
    return 1 if summary["gate_failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
