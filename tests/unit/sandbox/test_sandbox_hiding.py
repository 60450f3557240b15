"""What a candidate can read: one that searches the machine for a HumanEval file holding its
entry point and runs the canonical solution it finds. Inside bwrap nothing is shown but the
system, the interpreter and numpy (deny by default): no copy of the data anywhere on the machine
is in reach, not only the run's own (before, only the run's own folders were hidden, and a copy
elsewhere gave the answer). The process layer cannot hide them: it says so at the start of the
run."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_jobs import script_job

from pytest_humanfix.sandbox import choose, layers
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.fresh import FreshSandbox
from pytest_humanfix.sandbox.layers import BwrapLayer, ProcessLayer, hidden_folders, probe_bwrap
from pytest_humanfix.sandbox.program import python_job
from pytest_humanfix.sandbox.warm import WarmSandbox

CHECKOUT = Path(__file__).resolve().parents[3]
ANSWER = {"task_id": "HumanEval/0", "entry_point": "add_secret",
          "prompt": "def add_secret(a, b):\n", "canonical_solution": "    return a + b + 7\n"}
# Where copies of the data may lie on a machine, none of them the run's: a checkout (as
# ../shared/data is), the home folder, /opt, /srv, /var/tmp and /tmp.
PLACES = [CHECKOUT, Path.home(), Path("/opt"), Path("/srv"), Path("/var/tmp"),
          Path(tempfile.gettempdir())]
# The candidate knows where the copies lie (the worst case) and looks there.
SEARCH = """
import glob, json, os
for root in {roots!r}:
    for path in glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True):
        try:
            rows = [json.loads(line) for line in open(path) if line.strip()]
        except (OSError, ValueError):
            continue
        for row in rows:
            if row.get("entry_point") == "add_secret" and row.get("canonical_solution"):
                exec(row["prompt"] + row["canonical_solution"])
                print("found", path)
"""
TESTS = "assert add_secret(1, 2) == 10\n"


@pytest.fixture
def copies() -> Iterator[list[Path]]:
    """A copy of the data (HumanEval+ beside a dataset whose answers are blanked) in a new
    folder of each place."""
    folders = [Path(tempfile.mkdtemp(prefix=".humanfix-test-data-", dir=place))
               for place in PLACES]
    for folder in folders:
        blank = dict(ANSWER, canonical_solution="")
        (folder / "humanevalpack-python.jsonl").write_text(json.dumps(blank) + "\n")
        (folder / "humanevalplus.jsonl").write_text(json.dumps(ANSWER) + "\n")
    yield folders
    for folder in folders:
        shutil.rmtree(folder)


def bwrap() -> str:
    found, why = probe_bwrap()
    assert found is not None, f"these tests need bwrap: {why}"
    return found


def searching(folders: list[Path]):
    return python_job(SEARCH.format(roots=[str(f) for f in folders]), TESTS, "add_secret")


@pytest.mark.parametrize("executor", ["fresh", "warm"])
def test_a_candidate_finds_no_copy_of_the_data_anywhere_inside_bwrap(
        executor: str, copies: list[Path]) -> None:
    layer = BwrapLayer(bwrap())
    if executor == "warm":
        cgroups, why = open_cgroups()
        assert cgroups is not None, f"the warm executor needs cgroups: {why}"
        sandbox: FreshSandbox | WarmSandbox = WarmSandbox(layer, Limits(timeout=10), cgroups)
    else:
        sandbox = FreshSandbox(layer, Limits(timeout=10))
    try:
        verdict = sandbox.run(searching(copies))
    finally:
        sandbox.shutdown()
    assert "found" not in verdict.stdout
    assert not verdict.passed and "NameError: name 'add_secret'" in verdict.stderr


def test_the_checkouts_records_and_the_packages_data_are_not_there_inside_bwrap() -> None:
    looked = [CHECKOUT / "README.md", CHECKOUT / "benchmarks" / "records",
              CHECKOUT / "pytest_humanfix" / "data", layers.PACKAGED_DATA]
    program = ("import os\nprint([os.path.exists(p) for p in "
               + repr([str(p) for p in looked]) + "])\n")
    verdict = FreshSandbox(BwrapLayer(bwrap()), Limits(timeout=10)).run(script_job(program))
    assert verdict.passed and verdict.stdout == f"{[False] * len(looked)}\n", verdict.stderr


def test_the_process_layer_lets_it_read_them_and_says_so(copies: list[Path]) -> None:
    """The limit stated at the start of a run in the process layer, measured."""
    layer, notes = choose.choose_layer("process")
    verdict = FreshSandbox(layer, Limits(timeout=10)).run(searching(copies))
    assert verdict.passed and "humanevalplus.jsonl" in verdict.stdout, verdict.stderr
    said = "\n".join(notes)
    assert "the dataset and the package's data (the canonical solutions)" in said
    assert "the Hugging Face cache, the run's reports and recorded replies" in said


GO_AROUND_THE_GUARD = """
import _socket, socket, subprocess, sys
try:
    socket.create_connection(("127.0.0.1", {port}))
except OSError as exc:
    print("socket.socket refused:", exc)
raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
raw.connect(("127.0.0.1", {port}))
print("_socket connected")
subprocess.run([sys.executable, "-c", "import socket; "
                "socket.create_connection(('127.0.0.1', {port}))"], check=True)
print("a subprocess connected")
"""


def test_the_socket_guard_stops_socket_only_as_the_header_says() -> None:
    """Where the process layer has no network namespace: measured, not assumed."""
    layer = ProcessLayer()
    layer.network = "guard"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.listen(4)
        program = GO_AROUND_THE_GUARD.format(port=listener.getsockname()[1])
        verdict = FreshSandbox(layer, Limits(timeout=10)).run(script_job(program))
    assert verdict.stdout.splitlines() == [
        "socket.socket refused: [Errno 101] network is disabled in the humanfix sandbox",
        "_socket connected", "a subprocess connected"], verdict.stderr
    assert any("_socket, ctypes or a subprocess such as curl" in limit
               for limit in layer.limits())


@pytest.mark.parametrize("network", ["namespace", "guard"])
def test_the_process_layer_states_its_network_limit_where_it_has_one(
        network: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layers, "network_mode", lambda python: network)
    _, notes = choose.choose_layer("process")
    limits = [n for n in notes if n.startswith("sandbox: the process layer does NOT protect")]
    assert len(limits) == len(ProcessLayer.NOT_PROTECTED) + (network == "guard")
    assert any("_socket, ctypes or a subprocess such as curl" in n for n in limits) \
        == (network == "guard")


def shown_as_system(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """`folder` is shown inside bwrap as a system folder would be."""
    system = layers.shown_paths
    monkeypatch.setattr(layers, "shown_paths", lambda python: (
        *system(python), ("--ro-bind", str(folder), str(folder))))


def test_a_data_folder_near_the_root_is_hidden_file_by_file(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch):
    """/data, were it shown, is not hidden whole (it may hold anything); its data files are."""
    shown_as_system(monkeypatch, tmp_path)
    monkeypatch.setattr(layers, "MIN_HIDDEN_DEPTH", len(tmp_path.parts) + 2)
    (tmp_path / "run.jsonl").write_text("{}")
    (tmp_path / "plus.jsonl.gz").write_text("")
    (tmp_path / "notes.txt").write_text("")
    folders, files = hidden_folders((str(tmp_path / "run.jsonl"),))
    assert tmp_path not in folders
    assert sorted(f for f in files if f.parent == tmp_path) == [tmp_path / "plus.jsonl.gz",
                                                               tmp_path / "run.jsonl"]


def test_what_is_not_shown_or_is_not_there_is_left_out(tmp_path: Path):
    (tmp_path / "data.jsonl").write_text("{}")
    folders, files = hidden_folders((str(tmp_path / "data.jsonl"), str(tmp_path / "absent")))
    assert tmp_path not in folders and not files


def test_an_interpreter_prefix_under_tmp_is_shown_and_the_rest_of_tmp_is_not(
        monkeypatch: pytest.MonkeyPatch):
    """A venv in a clone under /tmp (CI's layout) is bound on top of bwrap's fresh /tmp, not
    covered by it; what else lies in /tmp stays out of sight."""
    tmp = Path(tempfile.mkdtemp(prefix=".humanfix-test-prefix-", dir="/tmp"))
    try:
        venv, beside = tmp / "venv", tmp / "beside"
        venv.mkdir(), beside.mkdir()
        (venv / "marker").write_text("shown")
        (beside / "marker").write_text("hidden")
        shown = layers.shown_paths()
        monkeypatch.setattr(layers, "shown_paths", lambda python=sys.executable: (
            *shown, ("--ro-bind", str(venv), str(venv))))
        root = tmp / "box"
        root.mkdir()
        probe = ("import os\n"
                 f"print(open({str(venv / 'marker')!r}).read(), "
                 f"os.path.exists({str(beside / 'marker')!r}))\n")
        command = BwrapLayer(bwrap()).command([sys.executable, "-c", probe], root, root)
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["shown", "False"]
    finally:
        shutil.rmtree(tmp)
