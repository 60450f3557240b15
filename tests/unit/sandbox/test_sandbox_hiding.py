"""What a candidate can read: one that searches for a HumanEval file holding its entry point and
runs the canonical solution it finds. Inside bwrap the whole folder of the run's data is hidden,
and the package's data, the Hugging Face cache and the report folder with it; before, only the
exact dataset file was, and the file beside it (HumanEval+) gave the answer. The process layer
cannot hide them: it says so at the start of the run."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_humanfix.sandbox import choose, layers
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.fresh import FreshSandbox
from pytest_humanfix.sandbox.layers import BwrapLayer, ProcessLayer, hidden_folders, probe_bwrap
from pytest_humanfix.sandbox.warm import WarmSandbox

# Outside /tmp and the home folder, which bwrap masks whole, as /work/shared/data was.
CHECKOUT = Path(__file__).resolve().parents[3]
ANSWER = {"task_id": "HumanEval/0", "entry_point": "add_secret",
          "prompt": "def add_secret(a, b):\n", "canonical_solution": "    return a + b + 7\n"}
SEARCH = """
import glob, json, os
found = None
for path in glob.glob(os.path.join({root!r}, "**", "*.jsonl"), recursive=True):
    try:
        rows = [json.loads(line) for line in open(path) if line.strip()]
    except (OSError, ValueError):
        continue
    for row in rows:
        if row.get("entry_point") == "add_secret" and row.get("canonical_solution"):
            exec(row["prompt"] + row["canonical_solution"])
            found = path
print("found", found)
assert add_secret(1, 2) == 10
"""


@pytest.fixture
def data_folder() -> Iterator[Path]:
    """The run's dataset (its answers blanked) with a HumanEval+ file beside it."""
    folder = Path(tempfile.mkdtemp(prefix=".humanfix-test-data-", dir=CHECKOUT))
    blank = dict(ANSWER, canonical_solution="")
    (folder / "humanevalpack-python.jsonl").write_text(json.dumps(blank) + "\n")
    (folder / "humanevalplus.jsonl").write_text(json.dumps(ANSWER) + "\n")
    yield folder
    shutil.rmtree(folder)


def bwrap() -> str:
    found, why = probe_bwrap()
    assert found is not None, f"these tests need bwrap: {why}"
    return found


WHERE = ["beside the run's dataset", "in the package's data", "in the Hugging Face cache",
         "in the report folder"]


def hidden_for(where: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """What the run passes as hidden when the answers lie `where`."""
    if where == "in the package's data":
        monkeypatch.setattr(layers, "PACKAGED_DATA", folder)
        return ()
    if where == "in the Hugging Face cache":
        monkeypatch.setenv("HF_DATASETS_CACHE", str(folder))
        return ()
    if where == "in the report folder":
        return (str(folder),)
    return (str(folder / "humanevalpack-python.jsonl"),)


@pytest.mark.parametrize("where", WHERE)
def test_a_candidate_searching_for_the_answer_finds_nothing_inside_bwrap(
        where: str, data_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layer = BwrapLayer(bwrap(), hidden=hidden_for(where, data_folder, monkeypatch))
    sandbox = FreshSandbox(layer, Limits(timeout=10))
    verdict = sandbox.run(SEARCH.format(root=str(data_folder)))
    assert verdict.stdout == "found None\n"
    assert not verdict.passed and "NameError: name 'add_secret'" in verdict.stderr


def test_the_warm_executor_hides_the_answers_as_well(data_folder: Path) -> None:
    cgroups, why = open_cgroups()
    assert cgroups is not None, f"the warm executor needs cgroups: {why}"
    layer = BwrapLayer(bwrap(), hidden=(str(data_folder / "humanevalpack-python.jsonl"),))
    sandbox = WarmSandbox(layer, Limits(timeout=10), cgroups)
    try:
        verdict = sandbox.run(SEARCH.format(root=str(data_folder)))
    finally:
        sandbox.shutdown()
    assert verdict.stdout == "found None\n" and not verdict.passed


def test_the_process_layer_lets_it_read_them_and_says_so(data_folder: Path) -> None:
    """The limit stated at the start of a run in the process layer, measured."""
    layer, notes = choose.choose_layer("process")
    verdict = FreshSandbox(layer, Limits(timeout=10)).run(SEARCH.format(root=str(data_folder)))
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
        verdict = FreshSandbox(layer, Limits(timeout=10)).run(program)
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


def test_a_data_folder_near_the_root_is_hidden_file_by_file(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch):
    """/data is not hidden whole (it may hold anything); its data files are."""
    monkeypatch.setattr(layers, "MIN_HIDDEN_DEPTH", len(tmp_path.parts) + 2)
    (tmp_path / "run.jsonl").write_text("{}")
    (tmp_path / "plus.jsonl.gz").write_text("")
    (tmp_path / "notes.txt").write_text("")
    folders, files = hidden_folders((str(tmp_path / "run.jsonl"),), masked=[])
    assert tmp_path not in folders
    assert sorted(f for f in files if f.parent == tmp_path) == [tmp_path / "plus.jsonl.gz",
                                                               tmp_path / "run.jsonl"]


def test_what_a_masked_folder_hides_already_or_is_not_there_is_left_out(tmp_path: Path):
    folders, files = hidden_folders((str(tmp_path / "data.jsonl"), str(tmp_path / "absent")),
                                    masked=[tmp_path.parent])
    assert tmp_path not in folders and not files
