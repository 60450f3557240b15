"""What a run with --humanfix-repeat-check must show, for tests/runs/test_repeat_check.py and for
tests/runs/test_real_model.py, whose llama.cpp run asks for the repeats of its real model so
that one engine start serves both tests' claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_humanfix.reporting.terminal import share


def summary_json(folder: Path) -> dict:
    return json.loads((folder / "reports" / "summary.json").read_text())


def assert_every_repeat_made_and_counted(result: pytest.RunResult, records: list[dict],
                                         folder: Path, engine: str) -> None:
    """Each task's repeat was made by `engine` and graded, and the summary's counts and line are
    the records' own."""
    checks = [r["repeat_check"] for r in records]
    assert all(c["error"] == "" for c in checks), checks
    for record, check in zip(records, checks, strict=True):
        assert check["engine"] == engine and check["reply"].strip()
        assert check["first_outcome"] == record["outcome"]
        assert check["reply_differs"] == (check["reply"] != record["attempts"][0]["reply"])
    repeat = summary_json(folder)["repeat_check"]
    assert repeat["tasks"] == len(records)
    assert repeat["replies_differ"]["count"] == sum(c["reply_differs"] for c in checks)
    assert repeat["outcomes_flipped"]["count"] == sum(c["outcome_flipped"] for c in checks)
    # An exact line: the intervals' brackets are fnmatch character classes.
    assert (f"repeat check ({engine}): replies differ {share(repeat['replies_differ'])}, "
            f"outcomes flip {share(repeat['outcomes_flipped'])}") in result.outlines
