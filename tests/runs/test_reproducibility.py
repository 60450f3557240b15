"""The main job's model computes, byte for byte, the replies recorded in the repository, on the
portable llama.cpp build and in two layouts (two engines of one thread; one engine of two).

A change to the prompts, the engine or the build that changes a reply fails this test until the
recording is made again on purpose:

    HUMANFIX_RECORD_REPLIES=1 pytest tests/runs/test_reproducibility.py

which writes tests/recorded/qwen-coder-replies.json and fails, so that a recording is never
made silently; commit the file with the change that moved the replies. A machine whose build
is not the portable one fails with what it runs instead (docs/trust.md, "Same command, same
number").
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_humanfix.computed_by import PORTABLE_NAME

RECORDING = Path(__file__).resolve().parents[1] / "recorded" / "qwen-coder-replies.json"
# Two the main job fixes and one it does not, short replies all (README's main job). Three, not
# the four once recorded (Python/12, fixed, was dropped): a quarter fewer tokens in each layout.
TASKS = ("Python/5", "Python/8", "Python/11")


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 1], ids=["two-engines-of-one-thread",
                                                 "one-engine-of-all-threads"])
def test_the_main_jobs_replies_are_the_recorded_ones(humanfix_pytester, read_records, workers):
    humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "qwen-coder",
                                "--humanfix-serve", "--humanfix-task", ",".join(TASKS),
                                "-n", str(workers))
    records = {r["task_id"]: r for r in read_records()}
    assert set(records) == set(TASKS) and all(r["outcome"] != "error" for r in records.values()), \
        [r["error"] for r in records.values()]
    computed = {json.dumps(r["computed_by"], sort_keys=True) for r in records.values()}
    assert len(computed) == 1, computed
    described = json.loads(computed.pop())
    assert described["kernels"].startswith(PORTABLE_NAME + ":"), (
        f"this environment's llama.cpp computes with {described['kernels']}, not the portable "
        "x86-64-v3 kernels the recording was made with: rebuild it with `bash scripts/setup` "
        "(HUMANFIX_KERNELS unset)")
    found = {
        "computed_by": {key: described[key] for key in ("engine", "version", "kernels", "dtype")},
        "replies": {task: [a["reply"] for a in r["attempts"]] for task, r in records.items()},
        "outcomes": {task: r["outcome"] for task, r in records.items()}}
    if os.environ.get("HUMANFIX_RECORD_REPLIES"):
        RECORDING.parent.mkdir(exist_ok=True)
        RECORDING.write_text(json.dumps(found, indent=2, ensure_ascii=False) + "\n")
        pytest.fail(f"recorded anew in {RECORDING}: commit it, and run again without "
                    "HUMANFIX_RECORD_REPLIES")
    recorded = json.loads(RECORDING.read_text())
    assert found["computed_by"] == recorded["computed_by"], (
        "the engine or its build changed since the recording: if on purpose, record again "
        "(HUMANFIX_RECORD_REPLIES=1)")
    for task, replies in recorded["replies"].items():
        assert found["replies"][task] == replies, f"{task}'s reply is not the recorded one"
    assert found["outcomes"] == recorded["outcomes"]
