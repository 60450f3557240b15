"""The sandbox's shared vocabulary on its own (sandbox/environment.py, sandbox/program.py): the
rlimits a Limits sets, the line a person reads first of each kind of verdict, the programs of the
candidate and of the tests, and the program BigCode's harness assembles."""

from __future__ import annotations

import signal

import pytest

from pytest_humanfix.sandbox.environment import EXPLAINED_LINES, Limits, Verdict
from pytest_humanfix.sandbox.program import (PRELUDE, build_program, caller_program,
                                             from_first_statement, python_job, task_helpers)


def verdict(status: str = "failed", stderr: str = "", exit_code: int | None = 1,
            **fields) -> Verdict:
    return Verdict(status=status, exit_code=exit_code, seconds=3.04, stdout="", stderr=stderr,
                   network="none", **fields)


def test_rlimits_give_cpu_a_second_past_the_wall_clock_limit_and_no_core_files():
    rlimits = Limits(timeout=10.5, memory_bytes=1 << 30, processes=8, file_bytes=1024).rlimits()
    assert rlimits == {"RLIMIT_CPU": (11, 12), "RLIMIT_AS": (1 << 30, 1 << 30),
                       "RLIMIT_NPROC": (8, 8), "RLIMIT_FSIZE": (1024, 1024),
                       "RLIMIT_CORE": (0, 0)}


def test_a_timeout_names_its_limit_and_its_rerun():
    assert verdict("timeout", limit=3.0).first_failure() == \
        "timed out after 3.0 s (sandbox wall-clock limit 3 s)"
    assert verdict("timeout", limit=3.0, rerun=True).first_failure().endswith(
        "; re-run alone, it timed out again)")


def test_output_cut_by_the_file_size_limit_says_so_before_any_error():
    cut = verdict(stderr="ValueError: x\n", output_limited=True, exit_code=-25)
    assert cut.first_failure().startswith("the program's output reached the sandbox's file size")


def test_the_failing_statement_comes_before_the_exception():
    stderr = ('Traceback (most recent call last):\n  File "/tmp/x/program.py", line 12, in '
              "<module>\n    assert candidate([1.0, 2.0], 0.5) == False\n"
              "           ^^^^^^^^^^^^^^^^^^^^^^^\nAssertionError\n")
    assert verdict(stderr=stderr).first_failure() == \
        "assert candidate([1.0, 2.0], 0.5) == False\nAssertionError"


def test_an_exception_of_a_dotted_name_is_found():
    stderr = "Traceback (most recent call last):\nnumpy.linalg.LinAlgError: Singular matrix\n"
    assert verdict(stderr=stderr).first_failure() == "numpy.linalg.LinAlgError: Singular matrix"


def test_an_explained_assert_keeps_its_message_lines_and_no_more():
    message = [f"  line {n}" for n in range(EXPLAINED_LINES + 3)]
    stderr = "Traceback ...\nAssertionError: assert f(1) == 2\n" + "\n".join(message) + "\n"
    assert verdict(stderr=stderr).first_failure().splitlines() == \
        ["assert f(1) == 2", *message[:EXPLAINED_LINES]]


@pytest.mark.parametrize(("code", "said"), [
    (-signal.SIGKILL, "killed by SIGKILL (killed)"),
    (-signal.SIGSEGV, "killed by SIGSEGV (crash, e.g. stack overflow)"),
    (-signal.SIGXCPU, "killed by SIGXCPU (CPU time limit)"),
    (-signal.SIGUSR1, "killed by SIGUSR1"),
    (3, "exit status 3 with no error output"),
])
def test_a_death_without_an_exception_names_the_signal_or_the_status(code, said):
    assert verdict(exit_code=code).first_failure() == said


def test_the_last_line_is_shown_when_no_exception_is_recognised():
    assert verdict(stderr="warning: x\nsomething went wrong\n").first_failure() == \
        "something went wrong"


def test_passed_is_the_status_alone():
    assert verdict("passed", exit_code=0).passed and not verdict("failed").passed


def test_the_program_is_prelude_candidate_setup_then_test():
    program = build_program("def f():\n    return 1\n", "assert f() == 1", "SETUP = 1")
    assert program == (PRELUDE + "\ndef f():\n    return 1\nSETUP = 1\nassert f() == 1\n")
    assert build_program("", "assert True") == PRELUDE + "\nassert True\n"


def test_the_tests_get_the_tasks_helpers_and_never_the_entry_point():
    declaration = ("import math\n\n\ndef poly(xs: list, x: float):\n    return 1\n\n\n"
                   "def find_zero(xs: list):\n")
    assert task_helpers(declaration, "find_zero") == \
        "import math\n\n\ndef poly(xs: list, x: float):\n    return 1\n\n\n"
    assert task_helpers("def f(x):\n", "f") == ""
    program = caller_program("check(find_zero)", declaration, "find_zero", "SETUP = 1")
    assert program.startswith(PRELUDE + "\nimport math\n")
    assert "def poly" in program and "def find_zero" not in program
    assert program.endswith("SETUP = 1\ncheck(find_zero)\n")


def test_tests_begin_at_their_first_unindented_line():
    """Python/119's example test begins with its reference's body, indented."""
    assert from_first_statement("    x = 1\n    return x\ndef check(f):\n    pass\n") == \
        "def check(f):\n    pass\n"
    assert from_first_statement("\ncheck(f)\n") == "check(f)\n"


def test_a_python_job_puts_the_candidate_and_the_tests_in_two_programs():
    job = python_job("def f():\n    return 1\n", "assert f() == 1", "f")
    assert job.candidate.program == PRELUDE + "\ndef f():\n    return 1\n"
    assert "assert f() == 1" not in job.candidate.program
    assert job.tests is not None and job.tests.program.endswith("assert f() == 1\n")
    assert "return 1" not in job.tests.program and job.entry_point == "f"
    assert job.roles == ("candidate", "tests")


def test_the_prelude_is_bigcodes_import_helper():
    assert PRELUDE.startswith("import math\nimport re\nimport sys\nimport copy\n")
    assert "import numpy as np" in PRELUDE and "from typing import *" in PRELUDE
