"""The results JSONL on disk: the one reader of JSON lines (a torn last line told apart from a
damaged file) and the one writer, which appends a flushed line per record so that a run that
crashes or is interrupted leaves every finished task on disk (docs/reports.md). Rows here are
plain JSON; records.py says what a results line holds.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TextIO

from .atomic import write_atomically

# How `read_jsonl` treats a line that is not a JSON object: skip it, skip it only when it is the
# last line (a write torn by a kill) and refuse anything else, or refuse every one.
BadLines = Literal["skip", "torn-tail", "raise"]


class JsonlError(ValueError):
    """A line of a JSONL file is not a JSON object; `number` is its 1-based line number."""

    def __init__(self, path: Path, number: int) -> None:
        super().__init__(f"{path}: line {number} is not a JSON object")
        self.path = path
        self.number = number


def read_jsonl(path: Path, bad_lines: BadLines) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, blank lines skipped; what happens to any other line
    that is not a JSON object is the caller's explicit choice (`BadLines`)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        elif bad_lines == "raise" or (bad_lines == "torn-tail" and number != last):
            raise JsonlError(path, number)
    return rows


def jsonl_bytes(rows: Sequence[Mapping[str, object]]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in rows)


def rewrite_jsonl(path: Path, rows: Sequence[Mapping[str, object]]) -> None:
    """Make the file hold exactly `rows`, replaced atomically (a kill now still leaves the
    old or the new file); a file that already does is left alone."""
    content = jsonl_bytes(rows)
    if path.read_bytes() != content:
        write_atomically(path, content)


class ReportError(Exception):
    """A report file cannot be written; raised at start, before any work is done."""


class JsonlWriter:
    """Appends one flushed line per record, pytest-reportlog style: every finished record
    survives the death of the process. fsync, which also covers a crash of the machine, costs
    milliseconds a call, as much as a control task's whole run: it is done at most once every
    SYNC_SECONDS and at the end (a record lost with the machine is rerun by --humanfix-resume)."""

    SYNC_SECONDS = 1.0

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: TextIO | None = None
        self._synced = float("-inf")

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

    def write(self, record: Mapping[str, object]) -> None:
        assert self._handle is not None, "JsonlWriter.open() first"
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        if time.monotonic() - self._synced >= self.SYNC_SECONDS:
            self._sync()

    def _sync(self) -> None:
        assert self._handle is not None
        os.fsync(self._handle.fileno())
        self._synced = time.monotonic()

    def rewrite(self, rows: Sequence[Mapping[str, object]]) -> None:
        """Makes the file hold exactly `rows` (`rewrite_jsonl`), then appends after them."""
        self.close()
        rewrite_jsonl(self.path, rows)
        self.open(append=True)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            self._sync()
            self._handle.close()
            self._handle = None
