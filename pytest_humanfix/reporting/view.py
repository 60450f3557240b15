"""The run's page, reports/index.html (`humanfix-report view`): the summary and its chart, then
every task's trajectory, filterable, and against a baseline the flipped tasks first, side by
side. One file, no network: the records ride as JSON in the page and view.html's script
renders a task when it is opened. Everything from a record is shown as text. docs/reports.md.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping
from importlib.resources import files as package_files
from pathlib import Path
from typing import Any

from ..atomic import write_atomically
from ..datafiles import HUMANEVALPACK, PACKAGED
from ..dataset import DatasetError, is_local, load_tasks
from ..records import Record, attempt_round, graded_round
from .chart import render
from .gates import pairable
from .sections import Summary, model_text
from .summary import computed_by_text
from .terminal import summary_lines

PAGE = "index.html"
# A verdict's output is cut at the sandbox's output limit already; the page keeps less of it.
OUTPUT_CHARS = 4000


def script_json(value: object) -> str:
    """JSON that a <script> element holds as data: no `</script>`, `<!--` or line separator
    in a string can end the element or the script early."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def cut(text: object) -> str:
    text = str(text or "")
    return text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "\n[... cut]"


def verdict_of(verdict: Any) -> dict[str, Any] | None:
    if not isinstance(verdict, dict):
        return None
    return {"status": verdict.get("status"), "exit": verdict.get("exit_code"),
            "seconds": verdict.get("seconds"), "stdout": cut(verdict.get("stdout")),
            "stderr": cut(verdict.get("stderr"))}


def attempt_of(attempt: Mapping[str, Any], index: int) -> dict[str, Any]:
    return {"round": attempt_round(attempt, index), "status": attempt.get("status", ""),
            "reply": attempt.get("reply", ""), "diff": attempt.get("diff", ""),
            "check": attempt.get("check", ""), "feedback": attempt.get("feedback", ""),
            "verdict": verdict_of(attempt.get("verdict")),
            "tokens": int(attempt.get("prompt_tokens") or 0)
            + int(attempt.get("completion_tokens") or 0),
            "seconds": float(attempt.get("generate_seconds") or 0)
            + float(attempt.get("execute_seconds") or 0)}


def last_round(record: Record) -> int | None:
    """The round a task ended in: the one that fixed it, else its last attempt's."""
    attempts = record.get("attempts") or []
    if record["outcome"] == "fixed":
        return graded_round(record)
    return attempt_round(attempts[-1], len(attempts) - 1) if attempts else None


def final_of(record: Record) -> dict[str, Any]:
    """What a side-by-side shows of a run: its final code, verdict and feedback."""
    attempts = record.get("attempts") or []
    return {"outcome": record["outcome"], "code": record.get("code", ""),
            "failure": record.get("failure", "") or record.get("error", ""),
            "feedback": attempts[-1].get("feedback", "") if attempts else "",
            "verdict": verdict_of(record.get("verdict")), "round": last_round(record)}


def task_of(record: Record, buggy: dict[str, str], baseline: dict[str, Record] | None
            ) -> dict[str, Any]:
    tokens = record.get("tokens") or {}
    task: dict[str, Any] = {
        "id": record["task_id"], "language": record.get("language", "python"),
        "bug_type": record.get("bug_type", ""), "flags": list(record.get("flags") or []),
        "tokens": int(tokens.get("prompt", 0)) + int(tokens.get("completion", 0)),
        "seconds": record.get("seconds"), "buggy": buggy.get(record["task_id"]),
        "diff": record.get("diff", ""), **final_of(record),
        "attempts": [attempt_of(a, i) for i, a in enumerate(record.get("attempts") or [])]}
    earlier = (baseline or {}).get(record["task_id"])
    if earlier is not None:
        task["baseline"] = final_of(earlier)
        # As the baseline gate pairs tasks (gates.compare): a known failure on either side is
        # no regression or improvement; an error is not fixed.
        paired = pairable(earlier) and pairable(record)
        then, now = earlier["outcome"] == "fixed", record["outcome"] == "fixed"
        task["flip"] = ("" if not paired or then == now
                        else "regression" if then else "improvement")
    return task


def tasks_of(records: list[Record], buggy: dict[str, str],
             baseline: dict[str, Record] | None) -> list[dict[str, Any]]:
    """Every task, the regressions first, then the improvements, then the rest in run order."""
    order = {"regression": 0, "improvement": 1}
    tasks = [task_of(r, buggy, baseline) for r in records]
    return sorted(tasks, key=lambda task: order.get(task.get("flip", ""), 2))


def packaged_language(label: str) -> str | None:
    """The language of the packaged file a record's `dataset` label names (None: another
    copy, or a packaged file of other content than this package's)."""
    return next((language for language, file in HUMANEVALPACK.items() if file.label == label),
                None)


def buggy_codes(records: list[Record]) -> dict[str, str]:
    """Each task's buggy code, from the packaged files and the dataset files the records name
    that are still on this machine (a record holds only diffs against it); none from the Hub,
    which may be far."""
    codes: dict[str, str] = {}
    for source in {str(r.get("dataset") or "") for r in records}:
        language = packaged_language(source)
        if language is None and (not source or not is_local(source)
                                 or not Path(source).is_file()):
            continue
        try:
            tasks = load_tasks(source) if language is None else load_tasks(PACKAGED, language)
            codes.update({task.task_id: task.buggy_code for task in tasks})
        except (DatasetError, OSError):
            continue  # the page says the buggy code is not at hand; the diffs still show
    return codes


def chart_image(summary: Summary, records: list[Record]) -> str:
    """summary.svg as an <img>: an image's scripts never run, whatever its text held."""
    try:
        svg = render(summary, records)
    except Exception as exc:  # the figures are printed above it; the chart only shows them
        return f"<p>the chart could not be drawn: {html.escape(str(exc))}</p>"
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img class="chart" alt="summary chart" src="data:image/svg+xml;base64,{data}">'


def baseline_html(summary: Summary, baseline: dict[str, Record] | None) -> str:
    """The gate's verdict, the paired test's p-value and what computed each run."""
    figures = summary["baseline"]
    if baseline is None or figures is None:
        return ""
    rows = [("regressions", ", ".join(figures["regressions"]) or "none"),
            ("improvements", ", ".join(figures["improvements"]) or "none"),
            ("exact McNemar one-sided p", f"{figures['p_value']:.4g}"),
            *((f"gate {g['name']}", ("held: " if g["passed"] else "FAILED: ") + g["reason"])
              for g in summary["gates"]),
            ("computed by (this run)", computed_by_text(summary)),
            # As summary.md says it: one description, computed once (gates.Comparison.figures).
            ("computed by (baseline)", figures["computed_by"])]
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                    for k, v in rows)
    return f'<h2>Against the baseline</h2><table class="gate" id="gate">{cells}</table>'


def page(summary: Summary, records: list[Record], baseline: dict[str, Record] | None = None,
         buggy: dict[str, str] | None = None) -> str:
    """The whole page, as text."""
    template = package_files(__package__).joinpath("view.html").read_text(encoding="utf-8")
    model = model_text(summary["run"]["model"])
    head = (f"<h1>HumanEvalFix: {html.escape(model)}</h1>"
            f'<pre class="summary">{html.escape(chr(10).join(summary_lines(summary)))}</pre>'
            + chart_image(summary, records) + baseline_html(summary, baseline))
    data = {"tasks": tasks_of(records, buggy or {}, baseline), "baseline": baseline is not None}
    return (template.replace("<!--SUMMARY-->", head)
            .replace("<!--TITLE-->", html.escape(f"humanfix: {model}"))
            .replace("/*DATA*/null", script_json(data)))


def write_page(summary: Summary, records: list[Record], path: Path,
               baseline: dict[str, Record] | None = None,
               buggy: dict[str, str] | None = None) -> Path:
    """The page at PATH, written whole (a reader never finds half a page)."""
    return write_atomically(path, page(summary, records, baseline, buggy))
