"""A candidate that plants a link, a named pipe or a huge file where the harness reads its
outputs back (stdout, stderr, the done file), in either layer and with either executor: the
harness reads only the files it opened itself, is neither fooled nor hung, and names the
attack in the verdict. Before sandbox/outputs, the link was followed (the run's stdout held
/etc/passwd) and the pipe hung the harness."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pytest_humanfix.sandbox.choose import make_sandbox
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.fresh import DONE_NAME, STARTED_NAME
from pytest_humanfix.sandbox.outputs import Outputs

# Each candidate ends with status 0 and prints a line; the done file is replaced by an exit
# handler, so after the bootstrap wrote the nonce to it (and the handler can read it back).
PLANTS = {
    "a link at stdout": """
import os
os.unlink("../stdout"); os.symlink("/etc/passwd", "../stdout")
""",
    "a named pipe at stderr": """
import os
os.unlink("../stderr"); os.mkfifo("../stderr")
""",
    "a huge file at stdout": """
import os
os.unlink("../stdout")
with open("../stdout", "wb") as f:
    f.truncate(15 << 20)
""",
    "a link at done to a file with the nonce": """
import atexit, os
def plant():
    nonce = open(".humanfix-done").read()
    open("../fake", "w").write(nonce)
    os.unlink(".humanfix-done"); os.symlink(os.path.abspath("../fake"), ".humanfix-done")
atexit.register(plant)
""",
    "a named pipe at done": """
import atexit, os
def plant():
    os.unlink(".humanfix-done"); os.mkfifo(".humanfix-done")
atexit.register(plant)
""",
    "a socket at done": """
import atexit, os, socket
def plant():
    os.unlink(".humanfix-done"); socket.socket(socket.AF_UNIX).bind(".humanfix-done")
atexit.register(plant)
""",
    "a huge done file": """
import atexit
def plant():
    nonce = open(".humanfix-done").read()
    with open(".humanfix-done", "a") as f:
        f.write(" " * 300000)
atexit.register(plant)
""",
}
ATTACKS = {
    "a link at stdout": "its stdout was replaced with a symbolic link",
    "a named pipe at stderr": "its stderr was replaced with a named pipe",
    "a huge file at stdout": "its stdout was replaced with a regular file",
    "a link at done to a file with the nonce": ".humanfix-done is a symbolic link",
    "a named pipe at done": ".humanfix-done is a named pipe",
    "a socket at done": ".humanfix-done cannot be opened: No such device or address",
    "a huge done file": ".humanfix-done holds 300032 bytes, more than the 256 the harness "
                        "reads",
}


@pytest.fixture(scope="module", params=[("bwrap", "fresh"), ("bwrap", "warm"),
                                        ("process", "fresh"), ("process", "warm")],
                ids="-".join)
def sandbox(request: pytest.FixtureRequest):
    layer, executor = request.param
    choice = make_sandbox(layer, executor, Limits(timeout=10))
    assert (choice.sandbox.layer.name, choice.sandbox.executor) == (layer, executor)
    yield choice.sandbox
    choice.sandbox.shutdown()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("plant", PLANTS)
def test_a_planted_file_is_never_read_and_is_recorded_as_an_attack(sandbox, plant: str) -> None:
    verdict = sandbox.run(PLANTS[plant] + "\nprint('planted')\n")
    assert verdict.attack == ATTACKS[plant]
    assert verdict.status == "failed" and not verdict.passed
    assert verdict.first_failure() == ("the program tampered with the files the harness reads "
                                       "back: " + ATTACKS[plant])
    # What the program wrote, read from the harness's own descriptor: not /etc/passwd, not
    # 15 MiB of zeros.
    assert verdict.stdout == "planted\n"


def test_a_program_that_plants_nothing_passes_with_no_attack(sandbox) -> None:
    verdict = sandbox.run("print('honest')\n")
    assert verdict.passed and verdict.attack == "" and verdict.stdout == "honest\n"


def test_output_over_the_cap_is_cut_and_says_how_much(tmp_path: Path) -> None:
    (tmp_path / "box").mkdir()
    outputs = Outputs(tmp_path, tmp_path / "box")
    os.write(outputs.stdout, b"a" * 10 + b"b" * 10)
    assert outputs.text(outputs.stdout, 10, tail=False) == "a" * 10 + "\n[... 10 bytes cut ...]"
    assert outputs.text(outputs.stdout, 10, tail=True) == "[... 10 bytes cut ...]\n" + "b" * 10
    outputs.close()


def test_outputs_refuse_a_file_already_at_their_name(tmp_path: Path) -> None:
    """A link left at the name before the harness opens it is never opened through."""
    (tmp_path / "box").mkdir()
    (tmp_path / "stdout").symlink_to("/etc/passwd")
    with pytest.raises(FileExistsError):
        Outputs(tmp_path, tmp_path / "box")


@pytest.mark.parametrize("name", [STARTED_NAME, DONE_NAME])
def test_a_file_that_cannot_be_opened_is_an_attack_not_an_error(tmp_path: Path, name: str,
                                                              monkeypatch) -> None:
    """Before, opening a socket planted at the name raised ENXIO (as root too) out of the
    verdict: the task became an error, left out of pass@1."""
    (tmp_path / "box").mkdir()
    outputs = Outputs(tmp_path, tmp_path / "box")
    monkeypatch.chdir(tmp_path / "box")  # a socket's path must be short; a relative one is
    with socket.socket(socket.AF_UNIX) as planted:
        planted.bind(name)
        assert outputs.small_file(name, 256) is None
    assert outputs.attacks == [f"{name} cannot be opened: No such device or address"]
    outputs.close()
