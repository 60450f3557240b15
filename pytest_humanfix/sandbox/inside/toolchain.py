"""A process of a toolchain execution (compiled languages and JavaScript), after `child.py`: its
program is a plan (JSON) whose files it writes in its working folder and whose steps (compile,
then run) it runs one after the other. A failing step ends the process with its status and a
last stderr line the harness shows first (`CompileError: ...`, `TestError: ...`); a `silent`
step fails when it writes anything (BigCode's rule for JavaScript). The run step gets the pipes
of the calls (docs/languages.md#execution)."""

import json as _humanfix_json
import os as _humanfix_os
import re as _humanfix_re
import signal as _humanfix_signal
import subprocess as _humanfix_subprocess
import sys as _humanfix_sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # at run time child.py's text comes first in the same program
    from .descriptors import CALLS_IN, CALLS_OUT


def _humanfix_read(path: str, cap: int) -> str:
    with open(path, "rb") as handle:
        data = handle.read(cap + 1)
    text = data[:cap].decode("utf-8", "replace")
    return text + ("\n[... cut ...]\n" if len(data) > cap else "")


def _humanfix_telling(output: str, pattern: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    found = [line for line in lines if _humanfix_re.search(pattern, line)]
    return (found or lines or [""])[0][:300]


def _humanfix_fail(step: dict, code: int, output: str, pattern: str, why: str = "") -> None:
    status = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    telling = _humanfix_telling(output, pattern)
    kind = "CompileError" if step["kind"] == "compile" else "TestError"
    # A traceback's shape: the harness shows the last line, the exception, alone.
    _humanfix_sys.stderr.write(f'\n  File "{step["argv"][0]}", the {step["kind"]} step\n'
                               f"{kind}: {why or status}" + (f": {telling}" if telling else "")
                               + "\n")
    _humanfix_sys.stderr.flush()
    _humanfix_sys.stdout.flush()
    if code < 0:  # die of the same signal, so the harness reads the same status
        _humanfix_signal.signal(-code, _humanfix_signal.SIG_DFL)
        _humanfix_os.kill(_humanfix_os.getpid(), -code)
    _humanfix_sys.exit(code or 1)


def run_steps(text: str) -> None:
    """Returns once every step ended with status 0, else ends the process."""
    plan = _humanfix_json.loads(text)
    for name, content in plan["files"].items():
        # A name of the plan's own, never a path: nothing is written outside the box.
        with open(_humanfix_os.path.basename(name), "x", encoding="utf-8") as handle:
            handle.write(content)
    env = dict(_humanfix_os.environ, **plan["env"])
    cap = plan["output_cap"]
    for number, step in enumerate(plan["steps"]):
        out_path, err_path = f"humanfix-{number}.out", f"humanfix-{number}.err"
        calls = (CALLS_IN, CALLS_OUT) if step["kind"] == "run" else ()
        if step.get("direct"):  # the candidate's run: its output is there whenever the
            # harness stops it and reads back, with no file in its folder to delete or replace
            code = _humanfix_subprocess.call(step["argv"], stdin=_humanfix_subprocess.DEVNULL,
                                             env=env, pass_fds=calls)
            stdout = stderr = ""
        else:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                code = _humanfix_subprocess.call(
                    step["argv"], stdin=_humanfix_subprocess.DEVNULL, stdout=out, stderr=err,
                    env=env, pass_fds=calls)
            stdout, stderr = _humanfix_read(out_path, cap), _humanfix_read(err_path, cap)
            _humanfix_sys.stdout.write(stdout)
            _humanfix_sys.stderr.write(stderr)
        if code != 0:
            _humanfix_fail(step, code, stderr + "\n" + stdout, plan["pattern"])
        if step.get("silent") and (stdout or stderr):
            _humanfix_fail(step, 0, stderr + "\n" + stdout, plan["pattern"],
                           "the program wrote output, which fails the tests (any output is "
                           "a failed console.assert)")
