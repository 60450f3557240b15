"""What a pytest-html report shows of a run, when that plugin is installed: each task's whole
trajectory (every attempt's reply, code, diff, verdict, timings; fixed tasks too) as the item's
extras, and pass@1 with the bug-type table in the report's summary (docs/reports.md). Extras are
built as pytest-html's plain dicts, so they cross xdist as builtins and nothing of the plugin is
imported.
"""

from __future__ import annotations

import json
from html import escape
from typing import TypedDict

from ..records import Record, RecordedAttempt
from .sections import Summary, model_text
from .terminal import coverage_lines, interval, pass_line, plus_lines, round_lines


def _pre(label: str, text: str, css_class: str) -> str:
    return (f'<div class="humanfix-{css_class}"><b>{escape(label)}</b>'
            f'<pre style="white-space: pre-wrap">{escape(text)}</pre></div>')


def _attempt_html(number: int, attempt: RecordedAttempt) -> str:
    timings = (f"generate {float(attempt.get('generate_seconds') or 0):.2f} s, execute "
               f"{float(attempt.get('execute_seconds') or 0):.2f} s, tokens "
               f"{attempt.get('prompt_tokens', 0)} prompt / {attempt.get('completion_tokens', 0)}"
               " completion")
    verdict = attempt.get("verdict")
    parts = [f"<h4>attempt {number}: {escape(str(attempt.get('status') or '?'))} ({timings})</h4>",
             _pre("reply", attempt.get("reply") or "", "reply"),
             _pre("extracted code", attempt.get("code") or "", "code"),
             _pre("diff against the buggy code",
                  attempt.get("diff") or "(unchanged)", "diff"),
             _pre("verdict", json.dumps(verdict, indent=1) if verdict else "(not run)",
                  "verdict")]
    if attempt.get("feedback"):
        parts.append(_pre("feedback", attempt["feedback"], "feedback"))
    if attempt.get("check"):
        parts.append(_pre("check", attempt["check"], "check"))
    return "".join(parts)


class HtmlExtra(TypedDict):
    """An extra as pytest-html takes it (pytest_html.extras.html builds the same dict)."""

    name: None
    format_type: str
    content: str
    mime_type: None
    extension: None


def trajectory_extras(record: Record) -> list[HtmlExtra]:
    """One html extra holding the task's outcome and its trajectory."""
    head = (f'<div class="humanfix-trajectory"><h3>{escape(record["task_id"])} '
            f'{escape(str(record.get("entry_point")))} [{escape(str(record.get("bug_type")))}]: '
            f'{escape(record["outcome"])} in {float(record.get("seconds") or 0):.2f} s</h3>')
    body = "".join(_attempt_html(n, a) for n, a in enumerate(record.get("attempts") or [], 1))
    if record.get("error"):
        body += _pre("harness error", record["error"], "error")
    for n, run in enumerate(record.get("reruns") or [], 1):
        body += _pre(f"earlier run {n}: {run['outcome']}",
                     run.get("error") or run.get("failure") or "", "rerun")
    return [{"name": None, "format_type": "html", "content": head + body + "</div>",
             "mime_type": None, "extension": None}]


def summary_html(summary: Summary) -> list[str]:
    """The report's summary section: pass@1 (by round, with repair rounds), the coverage
    warning and the bug-type table."""
    rows = "".join(
        f"<tr><td>{escape(row['bug_type'])}</td><td>{row['fixed']}</td><td>{row['scored']}</td>"
        f"<td>{row['errors']}</td><td>{escape(interval(row['pass_at_1']))}</td></tr>"
        for row in summary["by_bug_type"])
    return [f'<div class="humanfix-summary"><h2>HumanEvalFix: '
            f'{escape(model_text(summary["run"]["model"]))}</h2>'
            f"<p><b>{escape(pass_line(summary))}</b></p>"
            + "".join(f"<p>{escape(line)}</p>" for line in round_lines(summary))
            + f"<p>pass@1 {escape(interval(summary['pass_at_1']))} (95% Wilson interval)</p>"
            + "".join(f"<p>{escape(line)}</p>" for line in coverage_lines(summary))
            + "".join(f'<p class="humanfix-plus">{escape(line)}</p>'
                      for line in plus_lines(summary))
            + '<table class="humanfix-bug-types"><tr><th>bug type</th><th>fixed</th>'
            f"<th>scored</th><th>errors</th><th>pass@1 [95% CI]</th></tr>{rows}</table></div>"]
