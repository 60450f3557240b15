"""`humanfix-report RESULTS.jsonl [--baseline OTHER.jsonl]`: the end-of-run summary and files,
rebuilt from a results JSONL without running anything.

`humanfix-report merge SHARD.jsonl... [--out DIR]`: the results of --humanfix-shard runs joined
into one JSONL and one report set (junit.xml rebuilt from the records), with the same gates, so
a CI matrix of shards ends in one gate job.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..records import (
    JsonlError,
    latest_per_task,
    read_jsonl,
    record_fingerprint,
    record_language,
    without_model,
)
from . import files, summary as summary_mod, terminal
from .gates import BaselineError, check_gates, compare, load_baseline, verdict_line
from .merge import MergeError, merge

MERGED_JSONL = "humanfix.jsonl"


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", type=Path, help="results JSONL of an earlier run")
    parser.add_argument("--fail-under", type=float, help="gate: fail when pass@1 is below F")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the paired regression test (default 0.05)")
    parser.add_argument("--max-regressions", type=int,
                        help="gate: fail when more than N tasks regress against the baseline")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="humanfix-report",
        description="Render summary.json, summary.md and summary.svg from a humanfix results "
                    "JSONL; with --baseline, compare task by task. Exit status 1 when a gate "
                    "given here fails, 2 on bad input. `humanfix-report merge SHARD.jsonl...` "
                    "joins the results of --humanfix-shard runs first.")
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
    parser.add_argument("--out", type=Path, default=Path("reports"),
                        help="folder for the merged JSONL and the reports (default reports)")
    add_gate_options(parser)
    return parser.parse_args(argv)


def fail(message: str) -> int:
    print(f"humanfix-report: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return main_merge(parse_merge_args(argv[1:]))
    args = parse_args(argv)
    if not args.results.is_file():
        return fail(f"{args.results} is not a file.")
    try:
        records = latest_per_task(read_jsonl(args.results, bad_lines="torn-tail"))
    except JsonlError as exc:
        return fail(f"{exc}; only a torn last line is skipped.")
    if not records:
        return fail(f"{args.results} holds no result records.")
    return report(records, {}, args, args.out or args.results.parent, junit=False)


def main_merge(args: argparse.Namespace) -> int:
    try:
        records, shards = merge(args.shards)
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
    facts = {"shard": None, "merged": [shard.label() for shard in shards]}
    return report(records, facts, args, args.out, junit=True)


def report(records: list[dict[str, Any]], facts: dict[str, Any], args: argparse.Namespace,
           out: Path, junit: bool) -> int:
    """Compares with the baseline, checks the gates, writes the report files and prints the
    summary; the exit status."""
    comparison = None
    if args.baseline is not None:
        try:
            baseline = load_baseline(args.baseline, {
                record_language(r): without_model(record_fingerprint(r)) for r in records})
        except BaselineError as exc:
            return fail(str(exc))
        comparison = compare(records, baseline)
    if args.max_regressions is not None and comparison is None:
        return fail("--max-regressions needs --baseline.")
    run = {**summary_mod.times_from_records(records), **facts}
    first = summary_mod.build(records, run, comparison, alpha=args.alpha)
    rate, repeat = first["pass_at_1"], first["repeat_check"]
    gated = args.fail_under is not None or comparison is not None
    checks = check_gates(rate["value"], rate["tasks"], args.fail_under, comparison, args.alpha,
                         args.max_regressions, terminal.noise_note(repeat) if repeat else None
                         ) if gated else []
    summary = summary_mod.build(records, run, comparison, checks, alpha=args.alpha)
    problem = None
    try:
        written = files.write_reports(summary, records, out)
    except files.ChartError as exc:  # as in a run: the summary files stand without it
        written, problem = exc.written, exc.warning()
    if junit:
        written.insert(0, files.write_junit(summary, records, out / "junit.xml", gated))
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
