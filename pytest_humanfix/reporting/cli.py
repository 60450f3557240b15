"""`humanfix-report RESULTS.jsonl [--baseline OTHER.jsonl]`: the end-of-run summary and files,
rebuilt from a results JSONL without running anything."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..records import JsonlError, read_jsonl, record_fingerprint
from . import files, summary as summary_mod, terminal
from .gates import BaselineError, check_gates, compare, load_baseline, verdict_line


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="humanfix-report",
        description="Render summary.json, summary.md and summary.png from a humanfix results "
                    "JSONL; with --baseline, compare task by task. Exit status 1 when a gate "
                    "given here fails, 2 on bad input.")
    parser.add_argument("results", type=Path, help="results JSONL of a run")
    parser.add_argument("--baseline", type=Path, help="results JSONL of an earlier run")
    parser.add_argument("--out", type=Path,
                        help="folder for the summary files (default: the results file's folder)")
    parser.add_argument("--fail-under", type=float, help="gate: fail when pass@1 is below F")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the paired regression test (default 0.05)")
    parser.add_argument("--max-regressions", type=int,
                        help="gate: fail when more than N tasks regress against the baseline")
    return parser.parse_args(argv)


def latest_per_task(records: list[dict]) -> list[dict]:
    """One record per task (the last one written), in first-seen order."""
    by_task: dict[str, dict] = {}
    for record in records:
        by_task[record["task_id"]] = record
    return list(by_task.values())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.results.is_file():
        print(f"humanfix-report: {args.results} is not a file.", file=sys.stderr)
        return 2
    try:
        records = latest_per_task(read_jsonl(args.results, bad_lines="torn-tail"))
    except JsonlError as exc:
        print(f"humanfix-report: {exc}; only a torn last line is skipped.", file=sys.stderr)
        return 2
    if not records:
        print(f"humanfix-report: {args.results} holds no result records.", file=sys.stderr)
        return 2
    comparison = None
    if args.baseline is not None:
        try:
            ran = record_fingerprint(records[0])
            baseline = load_baseline(args.baseline, ran["protocol"], ran["dataset_hash"])
        except BaselineError as exc:
            print(f"humanfix-report: {exc}", file=sys.stderr)
            return 2
        comparison = compare(records, baseline)
    if args.max_regressions is not None and comparison is None:
        print("humanfix-report: --max-regressions needs --baseline.", file=sys.stderr)
        return 2
    run = summary_mod.times_from_records(records)
    rate = summary_mod.build(records, run, comparison)["pass_at_1"]
    gated = args.fail_under is not None or comparison is not None
    checks = check_gates(rate["value"], rate["tasks"], args.fail_under, comparison, args.alpha,
                         args.max_regressions) if gated else []
    summary = summary_mod.build(records, run, comparison, checks)
    written = files.write_reports(summary, records, args.out or args.results.parent)
    lines = terminal.summary_lines(summary)
    lines += [f"wrote {path}" for path in written]
    if checks:
        lines.append(verdict_line(checks))
    print("\n".join(lines))
    return 1 if summary["gate_failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
