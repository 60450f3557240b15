"""`humanfix-report`: the end-of-run summary, files and gates rebuilt from a results JSONL
(`humanfix-report RESULTS.jsonl`), the shards of a run joined into one (`merge`), several
runs' pass@1 by repair round on one chart (`rounds`), a run's page (`view`), and two agents at
equal cost (`compare`). Usage: docs/reports.md and docs/beyond.md ("merge").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from ..atomic import write_atomically
from ..jsonl import JsonlError, jsonl_bytes
from ..protocol import fingerprint_differences, record_fingerprint, record_language, without_model
from ..records import Record, latest_per_task, read_records
from ..settings import converters
from . import compare as compare_mod, files, rates, summary as summary_mod, terminal
from .chart import write_rounds_chart
from .gates import (
    BaselineError,
    GateCheck,
    compare,
    failure_lines,
    gate_checks,
    load_baseline,
    verdict_line,
)
from .junit import write_junit
from .merge import MergeError, merge
from .sections import RunFacts, Selection, Summary, model_text
from .view import PAGE, buggy_codes, write_page

MERGED_JSONL = "humanfix.jsonl"
OWN_FOLDER = "humanfix-report"  # humanfix-report's files, beside the results file by default


def checked(convert: Callable[[str], float]) -> Callable[[str], float]:
    """An option converter as argparse's `type`: its message, not argparse's "invalid value"."""
    def convert_text(text: str) -> float:
        try:
            return convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} {exc}") from None

    return convert_text


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", type=Path, help="results JSONL of an earlier run")
    parser.add_argument("--fail-under", type=checked(converters.fraction),
                        help="gate: fail when pass@1 is below F, a fraction (0.35) or a "
                             "percentage (35%%)")
    parser.add_argument("--alpha", type=checked(converters.level), default=0.05,
                        help="significance level of the paired regression test, a fraction or "
                             "a percentage (default 0.05)")
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
                    "RESULTS.jsonl...` draws several runs' pass@1 by repair round; "
                    "`humanfix-report view RESULTS.jsonl` writes a run's page.")
    parser.add_argument("results", type=Path, help="results JSONL of a run")
    parser.add_argument("--out", type=Path,
                        help=f"folder for the summary files (default: {OWN_FOLDER}/ beside the "
                             "results file, so that the run's own summary files stay as "
                             "written; name the run's folder to replace them)")
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


def parse_view_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="humanfix-report view",
        description="Write one self-contained HTML page of a run: the summary and its chart, "
                    "then every task's trajectory, filterable; with --baseline, the tasks that "
                    "flipped first, both runs side by side, and the verdict of the gates given "
                    "here. Exit status 2 on bad input.")
    parser.add_argument("results", type=Path, help="results JSONL of a run")
    parser.add_argument("--out", type=Path,
                        help=f"the page to write (default: {OWN_FOLDER}/{PAGE} beside the "
                             "results file)")
    add_gate_options(parser)
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
    parser.add_argument("--tasks", choices=compare_mod.HALVES, default=None,
                        help="only the even- or odd-numbered tasks: a change chosen on one half "
                             "is confirmed on the other")
    parser.add_argument("--common", action="store_true",
                        help="only the tasks both runs have finished, for runs under way or "
                             "stopped (the others are counted, not compared)")
    return parser.parse_args(argv)


def main_compare(args: argparse.Namespace) -> int:
    runs = [load_results(path) for path in (args.first, args.second)]
    for records in runs:
        if isinstance(records, str):
            return fail(records)
    loaded = [r for r in runs if not isinstance(r, str)]
    try:
        first, second, selection = compare_mod.selected(loaded[0], loaded[1], args.tasks,
                                                        args.common)
        compared = compare_mod.side_by_side(first, second,
                                            compare_mod.labels_of((args.first, args.second)),
                                            selection)
    except compare_mod.CompareError as exc:
        return fail(f"{args.first} and {args.second} do not compare: {exc}")
    args.out.mkdir(parents=True, exist_ok=True)
    text = compare_mod.lines(compared)
    write_atomically(args.out / "compare.json", json.dumps(compared, indent=2) + "\n")
    write_atomically(args.out / "compare.md", "\n".join(text) + "\n")
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
    if argv[:1] == ["view"]:
        return main_view(parse_view_args(argv[1:]))
    if argv[:1] == ["compare"]:
        return main_compare(parse_compare_args(argv[1:]))
    args = parse_args(argv)
    records = load_results(args.results)
    if isinstance(records, str):
        return fail(records)
    selection, note = run_selection(args.results.parent / "summary.json", records)
    return report(records, run_left_out(args.results.parent / "summary.json", records), args,
                  args.out or args.results.parent / OWN_FOLDER, junit=False,
                  selection=selection, note=note)


def run_left_out(path: Path, records: list[Record]) -> RunFacts:
    """The tasks the impossible variant left out, from the run's own summary.json beside its
    results (records hold only the tasks that ran): none where it is not that run's."""
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        ids, rows = set(summary["run"]["run_ids"]), summary["cheating"]["left_out"]
        left_out = {row["task_id"]: row["reason"] for row in rows}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    ran = {r["run_id"] for r in records if r.get("run_id")}
    return {"left_out": left_out} if ids == ran else {}


def run_selection(path: Path, records: list[Record]) -> tuple[Selection | None, str | None]:
    """The tasks the run selected and why those without a record did not run, from the run's
    own summary.json (`path`, beside its results): the gates then judge coverage as the run
    did. Else None, and the line that says the selection is not known."""
    unknown = (f"the selection is not known, so the gates take the {len(records)} task(s) of "
               "the results file for the whole of it")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        run_ids, covered = summary["run"]["run_ids"], summary["coverage"]
    except FileNotFoundError:
        return None, f"NOTE: no summary.json of the run beside its results ({path}): {unknown}"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"WARNING: {path} is no run summary ({type(exc).__name__}: {exc}): {unknown}"
    ran = {r["task_id"] for r in records}
    if set(run_ids) != {r["run_id"] for r in records if r.get("run_id")}:
        return None, f"WARNING: {path} is of other runs than the results file: {unknown}"
    # A task the run did not run that has a record since (resumed, then the summary kept)
    # ran after all.
    not_run = {task: reason for reason, tasks in covered.get("not_run_tasks", {}).items()
               for task in tasks if task not in ran}
    return {"selected": sorted(ran | set(not_run)), "not_run": not_run}, None


def load_results(path: Path) -> list[Record] | str:
    """The records of a results JSONL, one per task, or why there are none to read."""
    if not path.is_file():
        return f"{path} is not a file."
    try:
        records = latest_per_task(read_records(path, bad_lines="torn-tail"))
    except JsonlError as exc:
        return f"{exc}; only a torn last line is skipped."
    return records or f"{path} holds no result records."


def main_view(args: argparse.Namespace) -> int:
    records = load_results(args.results)
    if isinstance(records, str):
        return fail(records)
    selection, _ = run_selection(args.results.parent / "summary.json", records)
    judged = judge(records, run_left_out(args.results.parent / "summary.json", records), args,
                   selection)
    if isinstance(judged, str):
        return fail(judged)
    summary, baseline, _ = judged
    # As humanfix-report's: beside the run's own page, which stays as the run wrote it.
    out = args.out or args.results.parent / OWN_FOLDER / PAGE
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"wrote {write_page(summary, records, out, baseline or None, buggy_codes(records))}")
    return 0


def main_rounds(args: argparse.Namespace) -> int:
    runs: list[tuple[Path, list[Record]]] = []
    for path in args.results:
        records = load_results(path)
        if isinstance(records, str):
            return fail(records)
        runs.append((path, records))
    models = [model_text(records[0].get("model")) for _, records in runs]
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
    write_atomically(merged, jsonl_bytes(records))
    print(f"merged {len(shards)} shard(s), {len(records)} task(s) into {merged}")
    # The whole run is no shard; the shards it came from are listed instead.
    facts: RunFacts = {"shard": None, "merged": [shard.label() for shard in shards]}
    return report(records, facts, args, args.out, junit=True)


def judge(records: list[Record], facts: RunFacts, args: argparse.Namespace,
          selection: Selection | None = None
          ) -> tuple[Summary, dict[str, Record], list[GateCheck]] | str:
    """The summary of RECORDS against the baseline the gate options name, with the gates they
    ask for decided and attached (coverage as `selection` gives it, as the run judged it); the
    baseline's records and the checks. Or why not."""
    comparison = None
    baseline: dict[str, Record] = {}
    if args.baseline is not None:
        try:
            baseline = load_baseline(args.baseline, {
                record_language(r): without_model(record_fingerprint(r)) for r in records})
        except BaselineError as exc:
            return str(exc)
        comparison = compare(records, baseline)
    if args.max_regressions is not None and comparison is None:
        return "--max-regressions needs --baseline."
    run: RunFacts = {**summary_mod.times_from_records(records), **facts}
    summary = summary_mod.build(records, run, comparison, selection, alpha=args.alpha,
                                baseline=list(baseline.values()) if baseline else None)
    gated = args.fail_under is not None or comparison is not None
    checks = gate_checks(summary, comparison, args.fail_under, args.alpha,
                         args.max_regressions, args.computed_by_mismatch, baseline.values(),
                         records, whole_selection=gated)
    summary_mod.attach_gates(summary, checks)
    return summary, baseline, checks


def report(records: list[Record], facts: RunFacts, args: argparse.Namespace,
           out: Path, junit: bool, selection: Selection | None = None,
           note: str | None = None) -> int:
    """Compares with the baseline, checks the gates, writes the report files and prints the
    summary, with `note` when a gate is asked for; the exit status."""
    judged = judge(records, facts, args, selection)
    if isinstance(judged, str):
        return fail(judged)
    summary, baseline, checks = judged
    gated = args.fail_under is not None or args.baseline is not None
    problem = None
    try:
        written = files.write_reports(summary, records, out, baseline or None,
                                      buggy_codes(records))
    except files.ChartError as exc:  # as in a run: the summary files stand without it
        written, problem = exc.written, exc.warning()
    if junit:
        written.insert(0, write_junit(summary, records, out / "junit.xml", gated))
    lines = terminal.summary_lines(summary)
    lines += [f"wrote {path}" for path in written]
    if problem:
        lines.append(problem)
    lines += failure_lines(summary, records, baseline, out / PAGE)
    if note and gated:
        lines.append(note)
    if checks:
        lines.append(verdict_line(checks))
    print("\n".join(lines))
    return 1 if summary["gate_failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
