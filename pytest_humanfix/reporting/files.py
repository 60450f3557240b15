"""The report files: summary.json, summary.md (also appended to $GITHUB_STEP_SUMMARY) and, with
matplotlib, summary.png, all rendered from the summary dict (`summary.build`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .terminal import baseline_lines, coverage_lines, interval, pct


def markdown(summary: dict[str, Any]) -> str:
    run, tasks, rate = summary["run"], summary["tasks"], summary["pass_at_1"]
    protocol = " ".join(f"{k}={v}" for k, v in (run.get("protocol") or {}).items())
    lines = [
        f"## HumanEvalFix: `{run.get('model')}`", "",
        f"**pass@1 {interval(rate)}** (95% Wilson interval), "
        f"{tasks['fixed']} fixed of {tasks['scored']} scored, {tasks['errors']} harness error(s)",
        "", *(f"**{line}**\n" for line in coverage_lines(summary)),
        "| | |", "|---|---|",
        f"| protocol | {protocol} |",
        f"| dataset | `{run.get('dataset')}` (hash `{run.get('dataset_hash')}`) |",
        f"| started / ended | {run.get('started_at')} / {run.get('ended_at')} |",
        f"| wall time | {run.get('wall_seconds')} s |",
        f"| tokens | {summary['tokens']['total']} total, "
        f"{summary['tokens']['per_task']['mean']:.0f} per task |",
        f"| seconds | {summary['seconds']['total']:.1f} total, "
        f"{summary['seconds']['per_task']['mean']:.2f} per task |",
        "| versions | " + ", ".join(f"{k} {v}" for k, v in run["versions"].items() if v) + " |",
    ]
    if summary["samples"] > 1:
        lines.append("| pass@k | " + ", ".join(f"pass@{k} {pct(v)}"
                                               for k, v in summary["pass_at_k"].items()) + " |")
    lines += ["", "| bug type | fixed | scored | errors | pass@1 [95% CI] |",
              "|---|---:|---:|---:|---|"]
    for row in summary["by_bug_type"]:
        lines.append(f"| {row['bug_type']} | {row['fixed']} | {row['scored']} | {row['errors']} "
                     f"| {interval(row['pass_at_1'])} |")
    if summary["errors"]:
        lines += ["", "Harness errors (not scored): "
                  + ", ".join(e["task_id"] for e in summary["errors"])]
    baseline = baseline_lines(summary.get("baseline"))
    if baseline:
        lines += ["", *(f"- {line}" for line in baseline)]
    if summary["gates"]:
        lines += ["", *(f"- gate {g['name']}: {'held' if g['passed'] else '**FAILED**'}: "
                        f"{g['reason']}" for g in summary["gates"])]
    return "\n".join(lines) + "\n"


def write_reports(summary: dict[str, Any], records: list[dict[str, Any]],
                  folder: Path) -> list[Path]:
    """summary.json, summary.md and (with matplotlib) summary.png; summary.md is also appended
    to $GITHUB_STEP_SUMMARY when a GitHub Actions job sets it."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / "summary.json", folder / "summary.md"
    json_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    text = markdown(summary)
    md_path.write_text(text, encoding="utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(text)
    written = [json_path, md_path]
    from .chart import write_chart

    chart = write_chart(summary, records, folder / "summary.png")
    if chart is not None:
        written.append(chart)
    return written
