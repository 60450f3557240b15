"""Small literal records for the reporting unit tests: only the fields a test is about."""

from __future__ import annotations

from typing import Any, cast

from pytest_humanfix.records import Record


def record(task_id: str, outcome: str = "fixed", bug_type: str = "value misuse",
           **fields: Any) -> Record:
    """A record as the JSONL holds one, with the fields every reader needs and `fields`."""
    made: dict[str, Any] = {"task_id": task_id, "entry_point": "f", "bug_type": bug_type,
                            "outcome": outcome, **fields}
    return cast(Record, made)
