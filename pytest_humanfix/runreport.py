"""The end-of-run report: summary.json, summary.md, an optional PNG chart, extra terminal lines.

`build` turns result records (and, when given, the baseline comparison and the gate checks) into
one plain dict, the content of summary.json; everything else renders that dict. The controller
calls it at the end of a run, `humanfix-report` on a JSONL, so both give the same files.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from .gates import Comparison, GateCheck
from .stats import mean_pass_at_k, wilson_interval

SLOWEST_SHOWN = 5
VERSIONED = ("pytest-humanfix", "pytest", "torch", "transformers")


def versions() -> dict[str, str | None]:
    """Installed versions, read from package metadata (nothing heavy is imported)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _counts(record: dict[str, Any]) -> tuple[int, int]:
    """(samples, fixed samples) of a record; records from before samples existed hold one."""
    n = record.get("n") or 1
    c = record.get("n_fixed")
    return n, int(record["outcome"] == "fixed") if c is None else c


def rate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """pass@1 over the scored records (the unbiased mean of c/n) with a 95% Wilson interval
    over the tasks: samples of one task are not independent, so the interval counts tasks."""
    counts = [_counts(r) for r in records if r["outcome"] != "error"]
    value = mean_pass_at_k(counts, 1) if counts else 0.0
    low, high = wilson_interval(value * len(counts), len(counts))
    return {"value": value, "ci95": [low, high], "tasks": len(counts)}


def _tokens(record: dict[str, Any]) -> int:
    tokens = record.get("tokens") or {}
    return int(tokens.get("prompt", 0)) + int(tokens.get("completion", 0))


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0, "median": 0, "max": 0}
    return {"mean": statistics.fmean(values),
            "median": statistics.median(values), "max": max(values)}


def build(records: list[dict[str, Any]], run: dict[str, Any],
          comparison: Comparison | None = None,
          gates: list[GateCheck] | None = None) -> dict[str, Any]:
    """The content of summary.json. `run` holds what records do not: start, end, wall time."""
    scored = [r for r in records if r["outcome"] != "error"]
    errors = [r for r in records if r["outcome"] == "error"]
    samples = max((_counts(r)[0] for r in scored), default=1)
    counts = [_counts(r) for r in scored]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_type.setdefault(record["bug_type"], []).append(record)
    first = records[0] if records else {}
    seconds = [float(r.get("seconds") or 0) for r in records]
    tokens = [_tokens(r) for r in records]
    prompt = sum(int((r.get("tokens") or {}).get("prompt", 0)) for r in records)
    slowest = sorted(records, key=lambda r: -float(r.get("seconds") or 0))[:SLOWEST_SHOWN]
    return {
        "run": {
            "model": first.get("model"), "protocol": first.get("protocol"),
            "dataset": first.get("dataset"), "dataset_hash": first.get("dataset_hash"),
            "run_ids": sorted({r.get("run_id") for r in records if r.get("run_id")}),
            "versions": versions(), **run,
        },
        "tasks": {"total": len(records), "scored": len(scored), "errors": len(errors),
                  "fixed": sum(r["outcome"] == "fixed" for r in records),
                  "unfixed": sum(r["outcome"] == "unfixed" for r in records)},
        "samples": samples,
        "pass_at_1": rate(records),
        "pass_at_k": {str(k): mean_pass_at_k(counts, k) for k in range(1, samples + 1)},
        "by_bug_type": [
            {"bug_type": name, "fixed": sum(r["outcome"] == "fixed" for r in rows),
             "scored": sum(r["outcome"] != "error" for r in rows),
             "errors": sum(r["outcome"] == "error" for r in rows),
             "pass_at_1": rate(rows)}
            for name, rows in sorted(by_type.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ],
        "tokens": {"prompt": prompt, "completion": sum(tokens) - prompt, "total": sum(tokens),
                   "per_task": _spread([float(t) for t in tokens])},
        "seconds": {"total": sum(seconds), "per_task": _spread(seconds)},
        "slowest": [{"task_id": r["task_id"], "seconds": r.get("seconds")} for r in slowest],
        "errors": [{"task_id": r["task_id"], "error": r.get("error", "")} for r in errors],
        "baseline": comparison.to_dict() if comparison is not None else None,
        "gates": [vars(g) for g in gates or []],
        "gate_failed": any(not g.passed for g in gates or []),
    }


def run_times(started: datetime, ended: datetime) -> dict[str, Any]:
    return {"started_at": started.isoformat(timespec="seconds"),
            "ended_at": ended.isoformat(timespec="seconds"),
            "wall_seconds": round((ended - started).total_seconds(), 3)}


def times_from_records(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
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


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _interval(rate: dict[str, Any]) -> str:
    low, high = rate["ci95"]
    return f"{_pct(rate['value'])} [{_pct(low)}, {_pct(high)}]"


def terminal_lines(summary: dict[str, Any]) -> list[str]:
    """What the terminal summary adds to the pass@1 line: interval, pass@k, tokens, slowest,
    the baseline comparison."""
    rate = summary["pass_at_1"]
    lines = [f"pass@1 {_interval(rate)} (95% Wilson interval over {rate['tasks']} tasks"
             + (f", unbiased over {summary['samples']} samples" if summary["samples"] > 1 else "")
             + ")"]
    if summary["samples"] > 1:
        lines.append("  ".join(f"pass@{k} = {_pct(v)}" for k, v in summary["pass_at_k"].items()))
    tokens, seconds = summary["tokens"], summary["seconds"]
    lines.append(f"tokens: {tokens['total']} ({tokens['prompt']} prompt, {tokens['completion']} "
                 f"completion), {tokens['per_task']['mean']:.0f} per task; seconds: "
                 f"{seconds['total']:.1f} in tasks, {seconds['per_task']['mean']:.2f} per task")
    if summary["slowest"]:
        lines.append("slowest: " + ", ".join(f"{s['task_id']} {float(s['seconds'] or 0):.2f}s"
                                             for s in summary["slowest"]))
    lines.extend(baseline_lines(summary.get("baseline")))
    return lines


def baseline_lines(baseline: dict[str, Any] | None) -> list[str]:
    if baseline is None:
        return []
    return [
        f"baseline: {baseline['paired']} paired tasks, {len(baseline['regressions'])} "
        f"regression(s), {len(baseline['improvements'])} improvement(s), "
        f"{len(baseline['unpaired'])} unpaired; exact McNemar one-sided p={baseline['p_value']:.4g}",
        "regressions: " + (", ".join(baseline["regressions"]) or "none"),
        "improvements: " + (", ".join(baseline["improvements"]) or "none"),
    ]


def markdown(summary: dict[str, Any]) -> str:
    run, tasks, rate = summary["run"], summary["tasks"], summary["pass_at_1"]
    protocol = " ".join(f"{k}={v}" for k, v in (run.get("protocol") or {}).items())
    lines = [
        f"## HumanEvalFix: `{run.get('model')}`", "",
        f"**pass@1 {_interval(rate)}** (95% Wilson interval), "
        f"{tasks['fixed']} fixed of {tasks['scored']} scored, {tasks['errors']} harness error(s)",
        "",
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
        lines.append("| pass@k | " + ", ".join(f"pass@{k} {_pct(v)}"
                                               for k, v in summary["pass_at_k"].items()) + " |")
    lines += ["", "| bug type | fixed | scored | errors | pass@1 [95% CI] |", "|---|---:|---:|---:|---|"]
    for row in summary["by_bug_type"]:
        lines.append(f"| {row['bug_type']} | {row['fixed']} | {row['scored']} | {row['errors']} "
                     f"| {_interval(row['pass_at_1'])} |")
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
