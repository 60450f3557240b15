"""--humanfix-resume: which tasks a results JSONL already holds, under which fingerprint.

The controller alone reads and repairs the file, once, before any task runs; the finished
records then travel to xdist workers through `workerinput`, so every process agrees on what is
done and no worker ever reads a file the controller is appending to.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

FINISHED = ("fixed", "unfixed")


class ResumeError(Exception):
    """The results file cannot be resumed; the message says why and what to do."""


def fingerprint(model: str | None, protocol: dict[str, Any], dataset_hash: str) -> dict[str, Any]:
    """What must agree for an old record to stand for a task in this run."""
    return {"model": model, "protocol": protocol, "dataset_hash": dataset_hash}


def record_fingerprint(record: dict[str, Any]) -> dict[str, Any]:
    return fingerprint(record.get("model"), record.get("protocol"), record.get("dataset_hash"))


def differences(found: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """`name: found -> wanted` for each field of two fingerprints (protocol field by field)."""
    lines = []
    for key in wanted:
        if key == "protocol" and isinstance(found.get(key), dict):
            for name, value in wanted[key].items():
                if found[key].get(name) != value:
                    lines.append(f"{name}: {found[key].get(name)!r} there, {value!r} here")
        elif found.get(key) != wanted[key]:
            lines.append(f"{key}: {found.get(key)!r} there, {wanted[key]!r} here")
    return lines


def load_finished(path: Path, wanted: dict[str, Any],
                  selected: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Finished records by task id, after repairing the file in place.

    A run killed during a write leaves a torn last line: it is cut off. Records of selected
    tasks that ended in a harness error are removed, since those tasks run again and the file
    must end with exactly one record per task. Any other change to the file is refused.
    """
    if not path.exists():
        return {}
    raw = path.read_bytes()
    *complete, tail = raw.split(b"\n")
    rerun = set(selected)
    kept: list[bytes] = []
    finished: dict[str, dict[str, Any]] = {}
    changed = bool(tail.strip())
    for number, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ResumeError(
                f"--humanfix-resume: {path} line {number} is not JSON, and it is not the last "
                "line, so it is not a torn write. Remove the line, or start afresh without "
                "--humanfix-resume.") from None
        task_id = record.get("task_id")
        mismatch = differences(record_fingerprint(record), wanted)
        if mismatch:
            raise ResumeError(
                f"--humanfix-resume: {path} line {number} ({task_id}) was made under another "
                f"protocol: {'; '.join(mismatch)}. Resume with the same options, or write to "
                "another file with --humanfix-jsonl.")
        if task_id in finished or (record.get("outcome") not in FINISHED and task_id in rerun):
            changed = True
            continue
        if record.get("outcome") in FINISHED:
            finished[task_id] = record
        kept.append(line)
    if changed:
        _rewrite(path, kept)
    return finished


def _rewrite(path: Path, lines: list[bytes]) -> None:
    """Replace the file atomically, so a kill now still leaves the old or the new file."""
    temporary = path.with_name(path.name + ".resume-tmp")
    with temporary.open("wb") as handle:
        handle.write(b"".join(line + b"\n" for line in lines))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
