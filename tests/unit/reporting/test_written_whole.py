"""Every report file is written whole or not at all (atomic.write_atomically): a process killed,
or failing, while it writes one leaves the file as it was, whichever writer it was: the summary
files, the merged JSONL and its JUnit, compare's files, the calibration times, and the results
file resume rewrites."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from reporting_records import record
from test_reporting_compare import run

from pytest_humanfix import atomic
from pytest_humanfix.jsonl import jsonl_bytes, rewrite_jsonl
from pytest_humanfix.reporting.cli import main
from pytest_humanfix.session.calibration import CalibrationFile

KILLED_WRITER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from pytest_humanfix.atomic import write_atomically

    def written(fd):  # the whole content is in the temporary file: say so, and wait for the kill
        print("written", flush=True)
        time.sleep(60)

    os.fsync = written
    write_atomically(Path(sys.argv[1]), "new " * 5_000_000)
""")


def test_a_writer_killed_mid_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text('{"old": true}\n', encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)],
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert child.stdout is not None
    assert child.stdout.readline() == "written\n"
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    assert target.read_text(encoding="utf-8") == '{"old": true}\n'
    # What it was writing lies beside it, whole, under a name no reader looks for.
    [partial] = [path for path in tmp_path.iterdir() if path != target]
    assert partial.name == f"summary.json.partial-{child.pid}"
    assert partial.stat().st_size == len("new ") * 5_000_000


def test_a_writer_that_fails_mid_write_leaves_the_old_file_and_nothing_else(tmp_path,
                                                                            monkeypatch):
    target = tmp_path / "compare.md"
    target.write_text("old\n", encoding="utf-8")

    def fails(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", fails)
    with pytest.raises(OSError, match="No space left"):
        atomic.write_atomically(target, "new\n")
    assert [path.name for path in tmp_path.iterdir()] == ["compare.md"]
    assert target.read_text(encoding="utf-8") == "old\n"
    monkeypatch.undo()
    assert atomic.write_atomically(target, "new\n").read_text(encoding="utf-8") == "new\n"


def merged(folder: Path, outcome: str) -> None:
    shard = {"index": 1, "count": 1, "selection": "s", "selected": 2,
             "tasks": ["Python/0", "Python/1"]}
    records = [record(task, outcome, shard=shard, model="m", dataset_hash="h", run_id="r")
               for task in shard["tasks"]]
    shard_file = folder.parent / f"shard-{outcome}.jsonl"
    shard_file.write_bytes(jsonl_bytes(records))
    assert main(["merge", str(shard_file), "--out", str(folder)]) == 0


def compared(folder: Path, outcome: str) -> None:
    first, second = folder.parent / "a.jsonl", folder.parent / "b.jsonl"
    first.write_bytes(jsonl_bytes(run("repair", {"t0": 0, "t1": None}, [100] * 4)))
    second.write_bytes(jsonl_bytes(run("resample", {"t0": 0 if outcome == "fixed" else None,
                                                    "t1": 1}, [100] * 4)))
    assert main(["compare", str(first), str(second), "--out", str(folder)]) == 0


def calibrated(folder: Path, outcome: str) -> None:
    CalibrationFile("hash", folder).store({"Python/0": 0.5 if outcome == "fixed" else 0.7})


def resumed(folder: Path, outcome: str) -> None:
    results = folder / "humanfix.jsonl"
    if not results.exists():
        results.write_bytes(b"")
    rewrite_jsonl(results, [record("Python/0", outcome)])


WRITERS: dict[str, tuple[Callable[[Path, str], None], set[str]]] = {
    "merge": (merged, {"humanfix.jsonl", "junit.xml", "summary.json", "summary.md",
                       "summary.svg", "index.html"}),
    "compare": (compared, {"compare.json", "compare.md", "compare.svg"}),
    "calibration": (calibrated, {"hash.json"}),
    "resume": (resumed, {"humanfix.jsonl"}),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_report_writer_leaves_its_files_whole_when_a_write_fails(tmp_path, monkeypatch,
                                                                      capsys, writer):
    """Each writer puts each of its files in place by renaming a file written beside it (one
    written in place would be missing from the renames); writing them again with other content
    then fails where a kill would land (before the new file takes the old one's place): every
    file is still the first, whole, with nothing left beside it."""
    write, names = WRITERS[writer]
    folder = tmp_path / "out"
    folder.mkdir()
    renamed: list[str] = []
    rename = os.replace

    def spied(source: str | Path, target: str | Path) -> None:
        renamed.append(Path(target).name)
        rename(source, target)

    monkeypatch.setattr(atomic.os, "replace", spied)
    write(folder, "fixed")
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert set(before) == set(renamed) == names

    def killed(source: object, target: object) -> None:
        raise KeyboardInterrupt("killed before the rename")  # what no writer catches

    monkeypatch.setattr(atomic.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt, match="killed before the rename"):
        write(folder, "unfixed")
    capsys.readouterr()
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    monkeypatch.undo()
    write(folder, "unfixed")  # and without the failure, the second content replaces the first
    assert {path.name: path.read_bytes() for path in folder.iterdir()} != before
