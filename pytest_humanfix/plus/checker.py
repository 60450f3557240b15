"""The program that grades a candidate on every HumanEval+ input: EvalPlus's comparison, written
into the sandboxed program after the candidate (docs/trust.md#humanevalfix-humanfix-tests-plus)."""

from __future__ import annotations

# The line on which the reference's calibration run gives its CPU seconds on each input.
TIMES = "humanfix-plus-times"
TIMEOUT_ERROR = "_HumanfixPlusTimeoutError"

# EvalPlus's comparison (evalplus/eval/__init__.py, unsafe_execute, v0.1.x), in the tests'
# process, names prefixed so that the test's helpers cannot clash with them; a failure names the
# input that failed. Each input runs under its own limit, as in unsafe_execute (`with
# time_limit(time_limits[i])`, evalplus/eval/utils.py), but on the candidate's process's CPU
# clock (the call's `limit`, inside/tests.py): other workers and a model run beside the harness
# take wall-clock time from it, not CPU time. Without limits (the reference's calibration run)
# each input's CPU seconds in the candidate's process are printed instead.
CHECKER = '''
import json as _humanfix_plus_json


class _HumanfixPlusTimeoutError(BaseException):
    pass


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
    times = []
    for i, inp in enumerate(inputs):
        exp = reference(*copy.deepcopy(inp)) if reference is not None else results[i]
        candidate.limit = None if limits is None else limits[i] if i < len(limits) else floor
        try:
            out = candidate(*inp)
        except _HumanfixCallLimitError:
            raise _HumanfixPlusTimeoutError(
                f"{_humanfix_plus_input(i, inputs, name)} ran past its limit, "
                f"{candidate.limit:g} s of CPU") from None
        times.append(round(candidate.cpu, 4))
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
