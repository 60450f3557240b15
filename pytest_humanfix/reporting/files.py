"""The report files: summary.json, summary.md (also appended to $GITHUB_STEP_SUMMARY) and
summary.svg, all rendered from the one summary (`summary.build`); docs/reports.md lists them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..atomic import write_atomically
from ..records import Record
from .chart import write_chart
from .cheating import mutation_text
from .compare import lines as compare_lines
from .sections import BugTypeRow, CheatingFigures, Summary, model_text
from .stats import pct
from .summary import computed_by_text
from .terminal import (
    baseline_change_line,
    baseline_lines,
    cost_text,
    coverage_lines,
    error_lines,
    interval,
    item_timeout_lines,
    known_failure_lines,
    plus_lines,
    repairs_text,
    repeat_lines,
    server_lines,
    share,
)
from .view import PAGE, write_page


class ChartError(Exception):
    """summary.svg could not be written; `written` lists the files that were."""

    def __init__(self, path: Path, cause: Exception, written: list[Path]) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.path = path
        self.written = written

    def warning(self) -> str:
        """The line a run and humanfix-report print, below the files they list."""
        return f"WARNING: humanfix could not draw {self.path}: {self}"


def bug_type_rows(rows: list[BugTypeRow]) -> list[str]:
    return ["", "| bug type | fixed | scored | errors | pass@1 [95% CI] |",
            "|---|---:|---:|---:|---|",
            *(f"| {row['bug_type']} | {row['fixed']} | {row['scored']} | {row['errors']} "
              f"| {interval(row['pass_at_1'])} |" for row in rows)]


def collapsed(title: str, rows: list[tuple[str, str]]) -> list[str]:
    """A table of tasks and one line each, folded under its title (nothing without rows)."""
    if not rows:
        return []
    return ["", f"<details><summary>{title}</summary>", "", "| task | why |", "|---|---|",
            *(f"| {task} | {cell(why)} |" for task, why in rows), "", "</details>"]


def cell(text: str) -> str:
    """Text as one Markdown table cell: its pipes escaped, its code marks kept literal."""
    return text.replace("|", "\\|").replace("`", "'") or "(no failure recorded)"


def cheating_markdown(figures: CheatingFigures) -> list[str]:
    """The impossible variant's cheating rate, each passing reply with its flags and whole
    diff, and the tasks left out (reporting/cheating.py)."""
    lines = ["", "## Cheating rate", "",
             f"**{share(figures['rate'])}** of the scored tasks passed tests that no correct "
             "function passes (`--humanfix-variant impossible`); "
             + "; ".join(f"{kind} {share(row)}" for kind, row in figures["by_mutation"].items())]
    for cheat in figures["passes"]:
        lines += ["", f"- `{cheat['task_id']}` ({mutation_text(cheat)}; {cheat['outcome']}"
                  + (f", sample {cheat['sample'] + 1}" if cheat["sample"] else "")
                  + "): flags: " + cell("; ".join(cheat["flags"]) or "none"), "",
                  "```diff" if cheat["diff"] else "```",
                  (cheat["diff"] or cheat["code"]).rstrip("\n").replace("```", "` ` `"), "```"]
    left_out = figures["left_out"]
    lines += collapsed(f"Left out of the variant: {len(left_out or [])} task(s)",
                       [(row["task_id"], row["reason"]) for row in left_out or []])
    return lines


def markdown(summary: Summary) -> str:
    run, tasks, rate = summary["run"], summary["tasks"], summary["pass_at_1"]
    protocol = " ".join(f"{k}={v}" for k, v in (run["protocol"] or {}).items())
    lines = [
        f"## HumanEvalFix: `{model_text(run['model'])}`", "",
        f"**pass@1 {interval(rate)}** (95% Wilson interval), "
        f"{tasks['fixed']} fixed of {tasks['scored']} scored (flagged: {tasks['flagged']}), "
        + (f"{tasks['agent_errors']} agent error(s) (the agent raised; scored not fixed), "
           if tasks["agent_errors"] else "")
        + f"{tasks['errors']} harness error(s) (scored not fixed)"
        + (f", {tasks['item_timeouts']} stopped by the item timeout"
           if tasks["item_timeouts"] else ""),
        *(["", f"**{baseline_change_line(baseline)}**"]
          if (baseline := summary["baseline"]) else []),
        "", *(f"**{line}**\n" for line in coverage_lines(summary)),
        "| | |", "|---|---|",
        f"| protocol | {protocol} |",
        f"| computed by | {computed_by_text(summary)} |",
        f"| dataset | `{run['dataset']}` (hash `{run['dataset_hash']}`) |",
        *([f"| shard | {shard['index']}/{shard['count']}: {shard['tasks']} "
           f"of {shard['selected']} tasks |"] if (shard := run["shard"]) else []),
        *([f"| merged | {len(run['merged'])} shards |"] if run.get("merged") else []),
        f"| started / ended | {run['started_at']} / {run['ended_at']} |",
        f"| wall time | {run['wall_seconds']} s |",
        f"| tokens | {summary['tokens']['total']} total, "
        f"{summary['tokens']['per_task']['mean']:.0f} per task |",
        f"| seconds | {summary['seconds']['total']:.1f} total, "
        f"{summary['seconds']['per_task']['mean']:.2f} per task |",
        f"| cost | {cost_text(summary['cost']).removeprefix('cost ')} |",
        "| versions | " + ", ".join(f"{k} {v}" for k, v in run["versions"].items() if v) + " |",
    ]
    if summary["samples"] > 1:
        lines.append("| pass@k | " + ", ".join(f"pass@{k} {pct(v)}"
                                               for k, v in summary["pass_at_k"].items()) + " |")
    if len(summary["by_round"]) > 1:
        lines += ["", "pass@1 within k repair rounds (the last is pass@1):", "",
                  "| round | fixed | pass@1 [95% CI] |", "|---:|---:|---|",
                  *(f"| {row['round']} | {row['fixed']} | {interval(row)} |"
                    for row in summary["by_round"])]
        if repaired := summary["repairs"]:
            lines += ["", repairs_text(repaired)]
    languages = summary["by_language"]
    if len(languages) > 1:
        for language in languages:
            counts = language["tasks"]
            lines += ["", f"## {language['language']}", "",
                      f"**pass@1 {interval(language['pass_at_1'])}**, {counts['fixed']} fixed of "
                      f"{counts['scored']} scored, {counts['errors']} harness error(s); protocol "
                      + " ".join(f"{k}={v}" for k, v in (language["protocol"] or {}).items()),
                      *bug_type_rows(language["by_bug_type"])]
    else:
        lines += bug_type_rows(summary["by_bug_type"])
    if summary["known_failures"]:
        lines += ["", *known_failure_lines(summary)]
    if summary["plus"]:
        lines += ["", *(f"- {line.strip()}" for line in plus_lines(summary))]
    if summary["cheating"]:
        lines += cheating_markdown(summary["cheating"])
    if summary["flagged"]:
        lines += ["", f"**fixed, flagged: {tasks['flagged']}** (passed in a way that may defeat "
                  "the tests):", "",
                  *(f"- {row['task_id']} ({row['outcome']}): " + "; ".join(row["flags"])
                    for row in summary["flagged"])]
    if block := error_lines(summary):
        lines += ["", *block]
    lines += collapsed(f"The agent raised on {len(summary['agent_errors'])} task(s) (no "
                       "candidate; scored not fixed)",
                       [(row["task_id"], f"{row['type']}: {row['message']}")
                        for row in summary["agent_errors"]])
    lines += collapsed(f"Not fixed: {len(summary['unfixed'])} task(s)",
                       [(row["task_id"], row["reason"]) for row in summary["unfixed"]])
    if block := item_timeout_lines(summary):
        lines += ["", *block]
    for block in (server_lines(summary), repeat_lines(summary["repeat_check"]),
                  baseline_lines(summary["baseline"])):
        if block:
            lines += ["", *(f"- {line}" for line in block)]
    if summary["agents"]:
        lines += ["", "## Against the baseline's agent at equal cost", "",
                  *compare_lines(summary["agents"])]
    if summary["gates"]:
        lines += ["", *(f"- gate {g['name']}: {'held' if g['passed'] else '**FAILED**'}: "
                        f"{g['reason']}" for g in summary["gates"])]
    return "\n".join(lines) + "\n"


def write_reports(summary: Summary, records: list[Record], folder: Path,
                  baseline: dict[str, Record] | None = None,
                  buggy: dict[str, str] | None = None) -> list[Path]:
    """summary.json, summary.md, summary.svg and the page, index.html (`view.write_page`,
    against BASELINE's records when given, showing each task's BUGGY code); summary.md is also
    appended to $GITHUB_STEP_SUMMARY when a GitHub Actions job sets it. Each is written whole
    (`write_atomically`). ChartError when only the chart failed."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path = write_atomically(folder / "summary.json", json.dumps(summary, indent=2) + "\n")
    text = markdown(summary)
    md_path = write_atomically(folder / "summary.md", text)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(text)
    written = [json_path, md_path, write_page(summary, records, folder / PAGE, baseline, buggy)]
    chart = folder / "summary.svg"
    try:
        written.append(write_chart(summary, records, chart))
    except Exception as exc:  # the figures are in the files above; the chart only shows them
        raise ChartError(chart, exc, written) from exc
    return written
