"""Results on disk and in the terminal: the JSONL log and the summary built from its records.

Only the controller writes files. Each finished task becomes one JSON line, written and flushed at
once, so a run that crashes or is interrupted leaves every finished task on disk.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, TextIO


class ReportError(Exception):
    """A report file cannot be written; raised at start, before any work is done."""


class JsonlWriter:
    """Appends one flushed line per record, pytest-reportlog style."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: TextIO | None = None

    def open(self, append: bool = False) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not append and self.path.exists() and self.path.stat().st_size:
                # Keep the previous run's results rather than overwrite them silently.
                self.path.replace(self.path.with_name(self.path.name + ".prev"))
            self._handle = self.path.open("a" if append else "w", encoding="utf-8")
        except OSError as exc:
            raise ReportError(
                f"cannot write results to {self.path}: {exc.strerror or exc}. "
                "Choose a writable place with --humanfix-report-dir or --humanfix-jsonl."
            ) from None

    def write(self, record: dict[str, Any]) -> None:
        assert self._handle is not None, "JsonlWriter.open() first"
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a results file; a torn last line (a kill during a write) is skipped."""
    records = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


@dataclass
class BugTypeRow:
    bug_type: str
    fixed: int = 0
    scored: int = 0
    errors: int = 0

    @property
    def rate(self) -> float:
        return self.fixed / self.scored if self.scored else 0.0


@dataclass
class Summary:
    fixed: int
    unfixed: int
    errors: int
    by_bug_type: list[BugTypeRow] = field(default_factory=list)

    @property
    def scored(self) -> int:
        return self.fixed + self.unfixed

    @property
    def total(self) -> int:
        return self.scored + self.errors

    @property
    def pass_at_1(self) -> float:
        return self.fixed / self.scored if self.scored else 0.0


def summarize(records: Iterable[dict[str, Any]]) -> Summary:
    """pass@1 over the scored tasks (fixed or not); harness errors are counted apart."""
    outcomes: Counter[str] = Counter()
    rows: dict[str, BugTypeRow] = {}
    for record in records:
        outcome = record["outcome"]
        outcomes[outcome] += 1
        row = rows.setdefault(record["bug_type"], BugTypeRow(record["bug_type"]))
        if outcome == "error":
            row.errors += 1
        else:
            row.scored += 1
            row.fixed += outcome == "fixed"
    ordered = sorted(rows.values(), key=lambda r: (-(r.scored + r.errors), r.bug_type))
    return Summary(fixed=outcomes["fixed"], unfixed=outcomes["unfixed"],
                   errors=outcomes["error"], by_bug_type=ordered)


def pass_line(summary: Summary, protocol: dict[str, Any] | None = None) -> str:
    line = (f"pass@1 = {100 * summary.pass_at_1:.1f}% ({summary.fixed}/{summary.scored})"
            f" = {summary.pass_at_1:.4f}")
    if protocol:
        line += "  [" + " ".join(f"{k}={v}" for k, v in protocol.items()) + "]"
    return line


def summary_lines(summary: Summary, protocol: dict[str, Any] | None, model: str | None,
                  wall_seconds: float) -> list[str]:
    lines = [f"model: {model}", pass_line(summary, protocol)]
    lines.append(f"fixed {summary.fixed}, not fixed {summary.unfixed}, "
                 f"errors {summary.errors} (harness faults, not scored)")
    if summary.errors:
        lines.append(f"WARNING: {summary.errors} task(s) ended in a harness error; "
                     "pass@1 covers the scored tasks only.")
    if summary.by_bug_type:
        width = max(len("bug type"), *(len(r.bug_type) for r in summary.by_bug_type))
        lines.append(f"{'bug type':<{width}}  fixed  scored  errors  pass@1")
        for row in summary.by_bug_type:
            lines.append(f"{row.bug_type:<{width}}  {row.fixed:>5}  {row.scored:>6}  "
                         f"{row.errors:>6}  {100 * row.rate:5.1f}%")
    lines.append(f"wall time: {wall_seconds:.1f} s")
    return lines
