"""The results JSONL on disk: the one reader of JSON lines (a torn last line told apart from a
damaged file), the one writer, which appends a flushed line per record so that a run that
crashes or is interrupted leaves every finished task on disk, and `storable`, what a row's texts
may hold whatever a model wrote: each a bounded size that UTF-8, execnet, XML and the page can
carry (docs/reports.md, "What a record keeps of a text"). records.py says what a line holds.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TextIO

from .atomic import write_atomically

# The most of a text a row keeps, in UTF-8 bytes: a reply, a program's output, feedback, code.
# Without it a 4 MiB reply made a 21 MB line (its reply, code and diff, the task's code and diff).
TEXT_CAP_BYTES = 256 * 1024
CUT_MARK = ("\n[... pytest-humanfix cut this text here: a record keeps its first {kept:,} bytes "
            "of {whole:,}]")


def storable_text(text: str) -> tuple[str, int | None]:
    """`text` as a row keeps it, and its whole size in UTF-8 bytes where it was cut (None
    where it was not): a lone surrogate, which UTF-8 cannot encode (so neither a file nor
    execnet can carry it), becomes the six characters `\\ud800`; past TEXT_CAP_BYTES bytes the
    text is cut, at a character's end, and CUT_MARK says so. NUL and the other control
    characters stay as they are: JSON escapes them, and XML writers show them as `#xNN`."""
    if text.isascii() and len(text) <= TEXT_CAP_BYTES:
        return text, None
    data = text.encode("utf-8", "backslashreplace")
    if len(data) <= TEXT_CAP_BYTES:
        return data.decode("utf-8"), None
    kept = data[:TEXT_CAP_BYTES].decode("utf-8", "ignore")
    return kept + CUT_MARK.format(kept=len(kept.encode()), whole=len(data)), len(data)


def storable(row: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    """A JSON-able row with every text in it (keys too, at any depth) made storable
    (`storable_text`), and the texts that were cut: each one's place in the row as a JSON
    Pointer (RFC 6901: `/attempts/0/reply`) with its whole size in bytes."""
    cut: dict[str, int] = {}

    def kept(value: Any, place: str) -> Any:
        if isinstance(value, str):
            text, whole = storable_text(value)
            if whole is not None:
                cut[place] = whole
            return text
        if isinstance(value, Mapping):
            keys = [storable_text(str(key))[0] for key in value]
            return {key: kept(v, place + "/" + key.replace("~", "~0").replace("/", "~1"))
                    for key, v in zip(keys, value.values(), strict=True)}
        if isinstance(value, (list, tuple)):
            return [kept(v, f"{place}/{n}") for n, v in enumerate(value)]
        return value

    return kept(row, ""), cut


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


# What json.dumps leaves raw that a line may not hold: the breaks str.splitlines (and readers
# built on it) ends a line at, and lone surrogates, which UTF-8 cannot encode. Only a string can
# hold them, where their JSON escapes read back as the same text.
_ESCAPED = re.compile("[\x85\u2028\u2029\ud800-\udfff]")


def json_line(row: Mapping[str, object]) -> str:
    """A row as one line of JSON, its newline included, that any text can be written in."""
    text = json.dumps(row, ensure_ascii=False)
    if not text.isascii():
        text = _ESCAPED.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
    return text + "\n"


def jsonl_bytes(rows: Sequence[Mapping[str, object]]) -> bytes:
    return b"".join(json_line(r).encode() for r in rows)


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
        self._handle.write(json_line(record))
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
