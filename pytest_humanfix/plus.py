"""HumanEvalFix+: the final candidate graded on HumanEval+'s inputs as well (issue 22).

HumanEval's hidden tests hold about 7 asserts a task and pass many wrong programs; EvalPlus's
HumanEval+ holds the same 164 problems with about 1,000 more inputs a task. HumanEvalFix's
`Python/N` is HumanEval's `HumanEval/N` with a bug put in, so a fix can be graded on both.

The data is read in EvalPlus's OriginFmt (the form the Hub's `evalplus/humanevalplus` serves):
its `test` already holds each input with the output EvalPlus's own reference solution gives,
so nothing is computed here before a run. EvalPlus's native form holds only the inputs: grading
with it would first need every task's reference run on ~1,000 inputs in the sandbox, and the
outputs kept somewhere between runs, for the same expected values. Its `check` is not run as
written: it drops the task's `atol` (always 0) and its find_zero oracle swaps its arguments
and forgets `abs`. The program keeps its inputs and outputs as written (Python literals, one
compile per execution: at most ~50-60 ms of CPU for the largest, ~2 s for all 164, as
benchmarks/bench_plus.py prints) and compares them as EvalPlus's `unsafe_execute` does
(`CHECKER`). Six tasks (Python/14, 15, 83, 100, 130, 139) hold no outputs: their `ref_func`
computes each expected one at run time, as EvalPlus's own check does.

Time limits are EvalPlus's (evalplus/eval/__init__.py, untrusted_check; evalplus/config.py):
each input runs under its own limit, max(4 s, 4 × the reference's time on that input), the
reference being EvalPlus's canonical solution, timed on each input in the sandbox once per
machine (session/calibration, as evaluate.py's get_groundtruth times it with trusted_exec), and
the whole program under min(60 s, the sum of those) + 1 s, a backstop. Where we differ:
- the input limits count the program's CPU time (ITIMER_PROF), where EvalPlus's `time_limit`
  counts wall-clock time (ITIMER_REAL), and the reference's time on an input is its CPU time
  too: a busy machine, more workers than cores, takes wall-clock time from a candidate, not CPU
  time;
- an input past its limit gives the verdict `timeout` (EvalPlus's is `fail`, the input's detail
  False), run once more alone before it counts, as every timeout here is (sandbox/rerun);
- the whole program's limit is the calibrated one of the hidden tests' kind, max(floor,
  --humanfix-timeout-factor × the reference's time on the whole program), where that is larger:
  the six programs without outputs run their reference as they go, which EvalPlus does before;
- the floor is EvalPlus's current 4 s (af49138, "to minimize false positives"); its last
  release, v0.3.1, had 1 s.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dataset import DatasetError, Task
from .sandbox.environment import Layer, Sandbox, Verdict
from .sandbox.program import build_program
from .settings import HUB_PLUS_DATASET

PLUS_SUFFIXES = (".jsonl", ".jsonl.gz")

# EvalPlus's defaults (evalplus/config.py: DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR;
# evalplus/eval/__init__.py, untrusted_check: EVALPLUS_TIMEOUT_PER_TASK), set as the module's
# docstring says.
MIN_TIME_LIMIT = 4.0
GT_TIME_LIMIT_FACTOR = 4.0
TIMEOUT_PER_TASK = 60.0
# The line on which the reference's calibration run gives its CPU seconds on each input.
TIMES = "humanfix-plus-times"
TIMEOUT_ERROR = "_HumanfixPlusTimeoutError"

# EvalPlus's comparison (evalplus/eval/__init__.py, unsafe_execute, v0.1.x), names prefixed so
# that a candidate's own cannot clash with them; a failure names the input that failed. Each
# input runs under its own limit, as in unsafe_execute (`with time_limit(time_limits[i])`,
# evalplus/eval/utils.py), but on the process's CPU clock (ITIMER_PROF, not ITIMER_REAL): other
# workers and a model run beside the harness take wall-clock time from it, not CPU time. The
# limit's exception is a BaseException, so that a candidate's `except Exception` lets it by.
# Without limits (the reference's calibration run) each input's CPU seconds are printed instead.
CHECKER = '''
import json as _humanfix_plus_json
import signal as _humanfix_plus_signal
import time as _humanfix_plus_time


class _HumanfixPlusTimeoutError(BaseException):
    pass


def _humanfix_plus_alarm(signum, frame):
    raise _HumanfixPlusTimeoutError


def _humanfix_plus_floats(x):
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


def _humanfix_plus_short(value, most=300):
    text = repr(value)
    return text if len(text) <= most else text[:most] + "..."


def _humanfix_plus_input(i, inputs, name):
    args = ", ".join(_humanfix_plus_short(a, 120) for a in inputs[i])
    return f"HumanEval+ input {i + 1} of {len(inputs)}: {name}({args})"


def _humanfix_plus_check(candidate, name, inputs, results, atol, reference, oracle, limits,
                         floor):
    _humanfix_plus_signal.signal(_humanfix_plus_signal.SIGPROF, _humanfix_plus_alarm)
    times = []
    for i, inp in enumerate(inputs):
        exp = reference(*copy.deepcopy(inp)) if reference is not None else results[i]
        limit = None if limits is None else limits[i] if i < len(limits) else floor
        began = _humanfix_plus_time.process_time()
        try:
            if limit is not None:
                _humanfix_plus_signal.setitimer(_humanfix_plus_signal.ITIMER_PROF, limit)
            out = candidate(*inp)
        except _HumanfixPlusTimeoutError:
            raise _HumanfixPlusTimeoutError(
                f"{_humanfix_plus_input(i, inputs, name)} ran past its limit, {limit:g} s of "
                "CPU") from None
        finally:
            _humanfix_plus_signal.setitimer(_humanfix_plus_signal.ITIMER_PROF, 0)
        times.append(round(_humanfix_plus_time.process_time() - began, 4))
        tol = atol
        try:
            if oracle is not None:
                ok = oracle(inp, out, tol)
            else:
                ok = out == exp
                if tol == 0 and _humanfix_plus_floats(exp):
                    tol = 1e-6
                if not ok and tol != 0:
                    ok = type(out) == type(exp) and (
                        not isinstance(exp, (list, tuple)) or len(out) == len(exp)) and \\
                        bool(np.allclose(out, exp, rtol=1e-07, atol=tol))
        except Exception as exc:
            ok, out = False, f"{out!r} (comparing it raised {type(exc).__name__}: {exc})"
        if not ok:
            raise AssertionError(
                f"{_humanfix_plus_input(i, inputs, name)} returned {_humanfix_plus_short(out)}, "
                f"expected {_humanfix_plus_short(exp)}" + (f" (atol {tol:g})" if tol else ""))
    if limits is None:
        print(TIMES_MARKER, _humanfix_plus_json.dumps(times))
'''.replace("TIMES_MARKER", repr(TIMES))

# EvalPlus's special oracle for find_zero: any root will do, within atol.
FIND_ZERO_ORACLE = "lambda inp, out, tol: abs(_poly(*inp, out)) <= tol"


class PlusDataError(DatasetError):
    """The HumanEval+ data cannot be used with this run (a usage error)."""


@dataclass(frozen=True)
class PlusTask:
    """One HumanEval+ task, ready to grade a HumanEvalFix candidate with."""

    task_id: str        # HumanEvalFix's: Python/N
    entry_point: str
    atol: float
    helpers: str        # the test's own definitions (ref_func, _poly), at top level
    inputs: str         # a Python literal: the list of argument lists
    results: str | None  # a Python literal: the expected outputs; None: ref_func computes them
    reference: str      # EvalPlus's own solution (prompt + canonical), for calibration

    def program(self, code: str, limits: Sequence[float] | None) -> str:
        """The execution that grades `code` on every HumanEval+ input, each under its CPU
        seconds in `limits` (an input past them under MIN_TIME_LIMIT); without limits, the
        reference's calibration run, which gives its seconds on each input."""
        reference = "ref_func" if self.results is None else "None"
        oracle = FIND_ZERO_ORACLE if self.entry_point == "find_zero" else "None"
        # The candidate is bound before the test's helpers, which could shadow its name.
        return (build_program(code, "_humanfix_plus_candidate = " + self.entry_point)
                + CHECKER + "\n" + self.helpers + "\n"
                + f"_humanfix_plus_inputs = {self.inputs}\n"
                + f"_humanfix_plus_results = {self.results or 'None'}\n"
                + f"_humanfix_plus_check(_humanfix_plus_candidate, {self.entry_point!r}, "
                f"_humanfix_plus_inputs, _humanfix_plus_results, {self.atol!r}, "
                f"{reference}, {oracle}, {limits if limits is None else list(limits)}, "
                f"{MIN_TIME_LIMIT!r})\n")

    @property
    def reference_program(self) -> str:
        return self.program(self.reference, None)


def reference_times(verdict: Verdict) -> dict[str, Any]:
    """What calibration keeps of the reference's run (plain JSON for the cache and the
    workers): its seconds on the whole program and its CPU seconds on each input; none where
    it did not pass, and each input then runs under the floor."""
    line = next((line for line in reversed(verdict.stdout.splitlines())
                 if line.startswith(TIMES + " ")), "")
    try:
        inputs = json.loads(line.removeprefix(TIMES + " ")) if verdict.passed else []
    except ValueError:  # cut by the output cap: ~8 characters an input, 16 KiB of them
        inputs = []
    return {"seconds": verdict.seconds, "inputs": inputs}


def is_reference_times(value: object) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("seconds"), (int, float))
            and isinstance(value.get("inputs"), list)
            and all(isinstance(t, (int, float)) for t in value["inputs"]))


def input_limits(reference_inputs: Sequence[float]) -> list[float]:
    """Each input's limit in CPU seconds, as EvalPlus sets it from its reference's time."""
    return [round(max(MIN_TIME_LIMIT, GT_TIME_LIMIT_FACTOR * t), 3) for t in reference_inputs]


def program_limit(limits: Sequence[float]) -> float:
    """EvalPlus's wall-clock limit of the whole check, a backstop behind the inputs' own."""
    return min(TIMEOUT_PER_TASK, sum(limits)) + 1.0


def stopped_input(verdict: Verdict) -> str:
    """The checker's message for an input past its limit, "" if none was."""
    for line in reversed(verdict.stderr.splitlines()):
        if line.startswith(TIMEOUT_ERROR):
            return line.removeprefix(TIMEOUT_ERROR).removeprefix(":").strip() or \
                "a HumanEval+ input ran past its limit"
    return ""


@dataclass
class InputLimits:
    """A sandbox whose verdicts read an input stopped by its own limit as the timeout it is,
    so that, as a program past its whole limit, it runs once more alone before it counts
    (sandbox/rerun)."""

    sandbox: Sandbox

    @property
    def layer(self) -> Layer:
        return self.sandbox.layer

    def run(self, program: str, timeout: float | None = None) -> Verdict:
        verdict = self.sandbox.run(program, timeout)
        if verdict.status == "failed" and stopped_input(verdict):
            verdict.status = "timeout"
        return verdict

    def shutdown(self) -> None:
        """The process's sandbox outlives the task; the runner shuts it down."""


def failure(verdict: Verdict) -> str:
    """What failed on HumanEval+: the input, the output and the expected one, or the input
    past its limit (the checker's own messages, without the statement that raised them), else
    the candidate's own error."""
    stopped = stopped_input(verdict)
    if stopped:
        return stopped + ("; re-run alone, it ran past it again" if verdict.rerun else "")
    marker = "AssertionError: HumanEval+ input "
    failure = verdict.first_failure()
    for line in failure.splitlines():
        if line.startswith(marker):
            return line.removeprefix("AssertionError: ")
    return failure


def fix_id(plus_id: str) -> str:
    """HumanEvalFix's id of a HumanEval(+) task: HumanEval/N is Python/N."""
    prefix, _, number = plus_id.partition("/")
    return f"Python/{number}" if prefix == "HumanEval" else plus_id


def _atol(entry_point: str, test: str) -> float:
    """The task's atol: OriginFmt's loop passes 0 (EvalPlus then uses 1e-6 for floats, as the
    native form's 1e-6 for HumanEval/2 and /4 does), except find_zero's oracle, whose bound
    (the native form's atol, 1e-4) is written in its assert."""
    if entry_point == "find_zero":
        return float(test.rsplit("<=", 1)[1].strip())
    return 0.0


def task_from_row(row: dict[str, Any], source: str) -> PlusTask:
    missing = [key for key in ("task_id", "entry_point", "test", "prompt",
                               "canonical_solution") if not isinstance(row.get(key), str)]
    if "plus_input" in row:
        raise PlusDataError(
            f"--humanfix-plus-dataset {source}: this is EvalPlus's native form (inputs "
            "without outputs); pass the OriginFmt file (humanevalplus-*-originfmt.jsonl.gz) "
            f"or the Hub id {HUB_PLUS_DATASET}.")
    if missing:
        raise PlusDataError(f"--humanfix-plus-dataset {source}: row {row.get('task_id', '?')} "
                            f"lacks {', '.join(missing)}.")
    lines = row["test"].splitlines()
    inputs = next((line.split("=", 1)[1].strip() for line in lines
                   if line.startswith("    inputs = ")), None)
    results = next((line.split("=", 1)[1].strip() for line in lines
                    if line.startswith("    results = ")), None)
    # find_zero's test has no `assertion`: its definitions start at the top.
    start = next((i for i, line in enumerate(lines) if line.startswith("def assertion(")), -1)
    end = next((i for i, line in enumerate(lines) if line.startswith("def check(")), -1)
    # The test's own definitions follow `assertion`: the first line back at column 0.
    body = next((i for i in range(start + 1, end) if lines[i][:1] not in ("", " ", "\t")), end)
    helpers = "\n".join(lines[body:end])
    if inputs is None or end < 0 or (results is None and "def ref_func" not in helpers):
        raise PlusDataError(f"--humanfix-plus-dataset {source}: the test of {row['task_id']} "
                            "is not EvalPlus's OriginFmt check (inputs, results, assertion).")
    return PlusTask(task_id=fix_id(row["task_id"]), entry_point=row["entry_point"],
                    atol=_atol(row["entry_point"], row["test"]), helpers=helpers,
                    inputs=inputs, results=results,
                    reference=row["prompt"] + row["canonical_solution"])


def _read_rows(source: str) -> list[dict[str, Any]]:
    path = Path(source)
    if source.endswith(PLUS_SUFFIXES) or path.exists():
        if not path.is_file():
            raise PlusDataError(f"--humanfix-plus-dataset {source}: no such file.")
        if not source.endswith(PLUS_SUFFIXES):
            raise PlusDataError(f"--humanfix-plus-dataset {source}: use a .jsonl or .jsonl.gz "
                                "file.")
        opener = gzip.open if source.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as exc:
            raise PlusDataError(f"--humanfix-plus-dataset {source}: unreadable "
                                f"({type(exc).__name__}: {exc}).") from None
    try:
        import datasets
    except ImportError:
        raise PlusDataError(f"--humanfix-plus-dataset {source}: loading from the Hub needs the "
                            "`datasets` package; or pass a local .jsonl.gz file.") from None
    try:
        return list(datasets.load_dataset(source, split="test"))
    except Exception as exc:
        raise PlusDataError(f"--humanfix-plus-dataset {source}: could not load it from the Hub "
                            f"({type(exc).__name__}: {exc}); pass a local .jsonl.gz file."
                            ) from None


@dataclass(frozen=True)
class PlusData:
    source: str
    tasks: dict[str, PlusTask]  # by HumanEvalFix id
    hash: str


def load_plus(source: str, fix_tasks: Sequence[Task]) -> PlusData:
    """HumanEval+ for the run's HumanEvalFix tasks; PlusDataError (one line) when its task ids
    or entry points do not match theirs."""
    rows = _read_rows(source)
    tasks = {}
    for row in rows:
        task = task_from_row(row, source)
        tasks[task.task_id] = task
    for fix in fix_tasks:
        plus = tasks.get(fix.task_id)
        if plus is None:
            raise PlusDataError(f"--humanfix-plus-dataset {source} has no task for "
                                f"{fix.task_id} (HumanEval/{fix.number}): it is not HumanEval+.")
        if plus.entry_point != fix.entry_point:
            raise PlusDataError(f"--humanfix-plus-dataset {source}: {fix.task_id}'s entry point "
                                f"is {plus.entry_point!r}, HumanEvalFix's {fix.entry_point!r}.")
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([row["task_id"], row["entry_point"], row["test"],
                                  row["canonical_solution"]]).encode())
    return PlusData(source, tasks, digest.hexdigest()[:16])


# HumanEvalFix's canonical solutions that fail HumanEval+ (found by the canonical control with
# --humanfix-tests plus; tests/test_plus.py checks the list is what the data gives): counted
# apart, shown, never in pass@1+. Seventeen return a wrong output (or raise); three are far too
# slow: an input takes them 30 s of CPU or more (hours, for two) against its limit, 4 s
# (EvalPlus's floor: its reference takes milliseconds there). Two more have an input near it: they
# time out on a busy or slow machine and may pass on a quiet or fast one, so they stay on the
# list, and pass@1+ does not depend on the machine it was measured on. Every other canonical
# solution takes 0.75 s at most on any input, busy (docs/trust.md, HumanEval+).
SLOW = "too slow: an input runs past its limit, 4 s of CPU, and again re-run alone: "
NEAR_LIMIT = ("near its limit: one input takes about its limit, 4 s of CPU, where EvalPlus's "
              "reference takes milliseconds, so it times out on a busy or slow machine and may "
              "pass on a quiet or fast one: ")
PLUS_KNOWN_FAILURES: dict[str, str] = {
    "Python/22": "keeps bools as integers: filter_integers([True, False, None, 0, ...]) "
                 "returns [True, False, 0, -10], HumanEval+ expects [0, -10]",
    "Python/31": NEAR_LIMIT + "is_prime(123456791), input 137 of 159, takes ~3.4 s on a quiet "
                 "2-core machine and 5-7 s beside a busy one: trial division up to n",
    "Python/32": "find_zero([9450000, 9, -7, ...]) returns 5.8984893224, outside EvalPlus's "
                 "oracle |poly(x)| <= 1e-4",
    "Python/39": NEAR_LIMIT + "prime_fib(12), input 12 of 12, takes ~8 s on a quiet 2-core "
                 "machine and 15 s beside a busy one: trial division of 99194853094755497 up to "
                 "its square root",
    "Python/44": "change_base(0, 3) returns '', HumanEval+ expects '0'",
    "Python/49": "modp(0, 1) returns 1, HumanEval+ expects 0 (input 605 of 989; its loop of n "
                 "doublings takes 0.07 s at most on an input)",
    "Python/55": SLOW + "fib(63), input 14 of 45, would take hours where EvalPlus's reference "
                 "takes milliseconds: fib recurses without memo, exponential in n",
    "Python/63": SLOW + "fibfib(57), input 16 of 65, would take hours where EvalPlus's "
                 "reference takes milliseconds: fibfib recurses without memo, exponential in n",
    "Python/64": "vowels_count raises IndexError (string index out of range) on a HumanEval+ "
                 "input",
    "Python/76": "is_simple_power(-2, -2) returns False, HumanEval+ expects True",
    "Python/91": "is_bored(' I am wearing a blue shirt today. ...') returns 3, HumanEval+ "
                 "expects 4",
    "Python/95": "check_dict_case({'FIRST_NAME': 'John', ..., '1': 35}) returns True, "
                 "HumanEval+ expects False",
    "Python/97": "multiply(-6, -9) returns 4: Python's % of a negative, HumanEval+ expects 54",
    "Python/111": "histogram('a b c  d ...') counts the empty word between two spaces",
    "Python/122": "add_elements([-99, -88, ..., -11], 5) returns 0, HumanEval+ expects -385",
    "Python/123": "get_odd_collatz(9999999999999999999999999999999999) returns another "
                  "sequence than HumanEval+ expects",
    "Python/124": "valid_date('12-31-1999') returns False, HumanEval+ expects True",
    "Python/125": "split_words('as,words,,a') drops the empty word, HumanEval+ keeps it",
    "Python/127": SLOW + "intersection([-1000000001, 20], [-1000000001, 20]), input 436 of "
                  "587, takes over 30 s where EvalPlus's reference takes milliseconds: the "
                  "length, 1000000021, tested for primality by trial division up to itself (on "
                  "a busy machine input 414, of length 100000007, ~5 s, is stopped first)",
    "Python/132": "is_nested('[][][]') returns True, HumanEval+ expects False",
    "Python/140": "fix_spaces('  spaces  every  where  ') ends in '_', HumanEval+ expects '__'",
    "Python/150": "x_or_y(-2, 0, 1) returns 0, HumanEval+ expects 1",
}
