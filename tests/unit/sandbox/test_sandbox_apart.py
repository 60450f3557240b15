"""The tests and the candidate run apart: nothing the candidate's code does but its answers
reaches the verdict (docs/sandbox.md#the-tests-and-the-candidate-apart). Each attack below, in
either layer and with either executor, is a wrong function (it answers 0.0 where the tests want
0.5) with a way around the tests that passed before the tests ran apart: each is a failure of
the candidate, never a pass and never a harness error, and the sandbox serves the next execution
as before. An honest fix beside them passes."""

from __future__ import annotations

import os

import pytest

from pytest_humanfix.sandbox.choose import make_sandbox
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.outputs import Channel
from pytest_humanfix.sandbox.program import python_job

TESTS = "def check(candidate):\n    assert candidate(3.5) == 0.5\n    assert candidate(1.25) == 0.25\n\ncheck(f)\n"
WRONG = "\ndef f(x):\n    return 0.0\n"
HONEST = "def f(x):\n    return x % 1.0\n"

ATTACKS = {
    "exit 0 at load": "import os\nos._exit(0)\n" + WRONG,
    "exit 0 from an exit handler": "import atexit, os\natexit.register(os._exit, 0)\n" + WRONG,
    "exit 0 from a thread": (
        "import os, threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.01), os._exit(0)), daemon=True).start()\n"
        + WRONG),
    "exit 0 from a signal handler": (
        "import os, signal\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(0))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.001)\n" + WRONG),
    "exit 0 from a destructor": (
        "import os\nclass Leaving:\n    def __del__(self):\n        os._exit(0)\n"
        "keep = Leaving()\n" + WRONG),
    "the runner's frames searched for a secret": (
        "import os, sys\n\ndef f(x):\n    frame = sys._getframe()\n    while frame:\n"
        "        for name, value in list(frame.f_locals.items()):\n"
        "            if isinstance(value, str) and len(value) == 32:\n"
        "                for path in ('.humanfix-done', '.humanfix-finished'):\n"
        "                    open(path, 'w').write(value)\n"
        "        frame = frame.f_back\n    os._exit(0)\n"),
    "a tracer that rewrites the compared values": (
        "import sys\n\ndef tracer(frame, event, arg):\n"
        "    if frame.f_code.co_name == 'check':\n        frame.f_locals['candidate'] = "
        "lambda x: x % 1.0\n    return tracer\nsys.settrace(tracer)\n" + WRONG),
    "builtins patched": (
        "import builtins\nbuiltins.AssertionError = type('Quiet', (BaseException,), {})\n"
        "builtins.isinstance = lambda *a: True\n" + WRONG),
    "an object equal to everything": (
        "class Equal:\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = None\n\ndef f(x):\n    return Equal()\n"),
    "a float subclass equal to everything": (
        "class Equal(float):\n    def __eq__(self, other):\n        return True\n"
        "\ndef f(x):\n    return Equal(0.0)\n"),
    "the tests read by file name": (
        "import glob, os, re\n\ndef f(x):\n    for path in glob.glob('**', recursive=True) + "
        "glob.glob('../**', recursive=True) + ['tests.py', 'program.py', '/tmp/humanfix']:\n"
        "        try:\n            text = open(path).read()\n        except OSError:\n"
        "            continue\n        found = re.search(r'candidate\\(' + repr(x) + r'\\) == "
        "([0-9.]+)', text)\n        if found:\n            return float(found.group(1))\n"
        "    return 0.0\n"),
    "the call pipes closed": "import os\nos.close(3)\nos.close(4)\n" + WRONG,
    "garbage on the answer pipe": "import os\nos.write(4, b'{garbage\\n')\n" + WRONG,
    "a forged pass on the status pipe": (
        "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'passed\\n')\n"
        "    except OSError:\n        pass\n" + WRONG),
    "its folder emptied": (
        "import os, shutil\nfor name in os.listdir('..'):\n"
        "    shutil.rmtree(os.path.join('..', name), ignore_errors=True)\n" + WRONG),
    "its parent killed": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + WRONG,
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
@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_is_the_candidates_failure_and_the_next_execution_runs(sandbox, attack) -> None:
    if attack == "its parent killed" and (sandbox.layer.name, sandbox.executor) == \
            ("process", "fresh"):
        # Its parent is the harness itself, of the same user: the limit the layer states.
        assert any("kills the harness" in limit for limit in sandbox.layer.limits())
        return
    verdict = sandbox.run(python_job(ATTACKS[attack], TESTS, "f"))
    assert verdict.status == "failed" and not verdict.passed, verdict
    honest = sandbox.run(python_job(HONEST, TESTS, "f"))
    assert honest.passed, honest.stderr


def test_an_honest_fix_passes_and_its_tests_ran_apart(sandbox) -> None:
    """Each in a working folder of its own; the tests see nothing of the candidate's module."""
    candidate = "import os\nSPOIL = 1\nprint('candidate', os.stat('.').st_ino)\n" + HONEST
    tests = TESTS + "import os\nassert 'SPOIL' not in globals()\nprint('tests', os.stat('.').st_ino)\n"
    verdict = sandbox.run(python_job(candidate, tests, "f"))
    assert verdict.passed, verdict.stderr
    said = dict(line.split() for line in verdict.stdout.splitlines())
    assert said["candidate"] != said["tests"]


def test_what_the_tests_show_of_a_wrong_answer_and_of_the_candidates_exception(sandbox) -> None:
    wrong = sandbox.run(python_job(WRONG, TESTS, "f"))
    assert wrong.first_failure() == "assert candidate(3.5) == 0.5\nAssertionError"
    raising = sandbox.run(python_job("def f(x):\n    return [][1]\n", TESTS, "f"))
    # The tests' own traceback, then the candidate's, with its line.
    assert "IndexError: list index out of range" in raising.first_failure()
    assert 'File "program.py"' in raising.stderr and "return [][1]" in raising.stderr


def test_the_plain_values_of_every_kind_cross_as_they_are(sandbox) -> None:
    values = ("[None, True, 3, -0.0, 1.5, float('inf'), 'é\\x00', b'\\xff', 2j, (1, (2,)), "
              "{1: 'a', (2, 3): [4]}, {5}, frozenset({6}), 10 ** 40]")
    tests = (f"check = {values}\nresult = f(check)\nassert result == check and "
             "[type(v) for v in result] == [type(v) for v in check], result\n"
             "assert str(result[3]) == '-0.0'\n")
    verdict = sandbox.run(python_job("def f(values):\n    return values\n", tests, "f"))
    assert verdict.passed, verdict.stderr


def test_an_int_of_a_million_digits_crosses_both_ways(sandbox) -> None:
    """HumanEval+ asks Python/83 for 18 * 10 ** 999998: it crosses as hex, where its million
    decimal digits would take the sandbox's whole limit to write and to read."""
    tests = ("for n in (10 ** 999998 * 18, -(10 ** 999998), 2 ** 64, -(2 ** 64), 2 ** 63):\n"
             "    assert f(n) == n + 1 and type(f(n)) is int\n")
    verdict = sandbox.run(python_job("def f(n):\n    return n + 1\n", tests, "f"))
    assert verdict.passed, verdict.stderr


def test_numpy_scalars_cross_as_the_python_values_they_hold(sandbox) -> None:
    code = "def f(x):\n    return [np.int64(3), np.float64(0.5), np.bool_(True)]\n"
    tests = "r = f(1)\nassert r == [3, 0.5, True] and [type(v) for v in r] == [int, float, bool]\n"
    assert sandbox.run(python_job(code, tests, "f")).passed


def test_output_over_the_cap_is_cut_and_says_how_much() -> None:
    channel = Channel(python_job(HONEST, TESTS, "f"))
    try:
        stdout = channel.kept["candidate"]["stdout"]
        os.write(stdout, b"a" * 10 + b"b" * 10)
        assert channel.text("candidate", "stdout", 10) == "a" * 10 + "\n[... 10 bytes cut ...]"
        stderr = channel.kept["tests"]["stderr"]
        os.write(stderr, b"a" * 10 + b"b" * 10)
        assert channel.text("tests", "stderr", 10) == "[... 10 bytes cut ...]\n" + "b" * 10
    finally:
        channel.close()
