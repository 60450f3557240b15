"""--humanfix-resume: which tasks a results JSONL already holds, under which fingerprint.

The controller alone reads and repairs the file, once, before any task runs; the finished
records then travel to xdist workers in the run's state (session/state), so no worker ever reads
a file the controller is appending to (docs/reports.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..jsonl import JsonlError, rewrite_jsonl
from ..protocol import Fingerprint, language_differences, options_of
from ..records import SCORED, Record, latest_per_task, read_records


class ResumeError(Exception):
    """The results file cannot be resumed; the message says why and what to do."""


def load_finished(path: Path, wanted: dict[str, Fingerprint],
                  selected: Iterable[str]) -> dict[str, Record]:
    """Finished records by task id, after repairing the file in place; `wanted` is the
    fingerprint each language's records must have.

    A task's record is its last one, as every reader of results takes it (`latest_per_task`):
    the file is left with that one alone. A run killed during a write leaves a torn last line:
    it is cut off. A selected task whose record ended in a harness error runs again, so its
    records are removed. Any other change to the file is refused.
    """
    if not path.exists():
        return {}
    try:
        records = read_records(path, bad_lines="torn-tail")
    except JsonlError as exc:
        raise ResumeError(
            f"--humanfix-resume: {exc}, and it is not the last line, so it is not a torn "
            "write. Remove the line, or start afresh without --humanfix-resume.") from None
    for number, record in enumerate(records, 1):
        task_id = str(record.get("task_id", "?"))
        other_language, mismatch = language_differences(record, wanted)
        if other_language:
            raise ResumeError(
                f"--humanfix-resume: {path} record {number} ({task_id}) is of language "
                f"{other_language}, and this run evaluates {', '.join(wanted)}. Resume with "
                f"--humanfix-language {other_language}, or write to another file with "
                "--humanfix-jsonl.")
        if mismatch:
            raise ResumeError(
                f"--humanfix-resume: {path} record {number} ({task_id}) was made under another "
                f"protocol: {'; '.join(mismatch)}. Resume with the same options "
                f"({options_of(mismatch)}), or write to another file with --humanfix-jsonl.")
    rerun = set(selected)
    kept: list[Record] = []
    finished: dict[str, Record] = {}
    for record in latest_per_task(records):
        if record.get("outcome") in SCORED:
            finished[record["task_id"]] = record
        elif record["task_id"] in rerun:
            continue
        kept.append(record)
    rewrite_jsonl(path, kept)
    return finished
