"""The candidate's process, after `child.py` and `wire.py`: it runs the candidate's program
once, then answers each call of the tests with what the entry point returns, as plain data,
until the tests close their end. Nothing here decides a verdict: a candidate that patches,
traces, exits or writes anything it likes can only change its answers
(docs/sandbox.md#the-tests-and-the-candidate-apart).

A call is {"args": [...], "kwargs": [[name, value], ...], "limit": seconds or null}; the answer
{"value": v, "cpu": seconds}, {"raise": {"type": name, "args": [...]}} for an exception of the
candidate's, {"refused": why} for a value that is not plain data, or {"limit": seconds} when the
call ran past its CPU limit (HumanEval+'s per-input limits).
"""

import builtins as _humanfix_builtins
import linecache as _humanfix_linecache
import signal as _humanfix_signal
import sys as _humanfix_sys
import time as _humanfix_time
import traceback as _humanfix_traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time child.py's and wire.py's texts come first in the same program
    from .descriptors import CALLS_IN, CALLS_OUT
    from .wire import (
        HumanfixReader,
        HumanfixWireError,
        _humanfix_plain,
        _humanfix_rebuilt,
        _humanfix_send,
    )

_HUMANFIX_MESSAGE_CHARS = 2000


class HumanfixCallLimit(BaseException):
    """Raised by SIGPROF in the candidate's call: a BaseException, so an `except Exception` of
    the candidate's lets it by."""


def _humanfix_limit_reached(signum: int, frame: object) -> None:
    raise HumanfixCallLimit


def _humanfix_print_frames(exc: BaseException, name: str) -> None:
    """The exception as the candidate's own traceback: the frames of its program only."""
    frames = [frame for frame in _humanfix_traceback.extract_tb(exc.__traceback__)
              if frame.filename == name]
    lines = ["Traceback (most recent call last):\n",
             *_humanfix_traceback.format_list(frames),
             *_humanfix_traceback.format_exception_only(type(exc), exc)]
    _humanfix_sys.stderr.write("".join(lines))
    _humanfix_sys.stderr.flush()


def _humanfix_raised(exc: BaseException) -> dict:
    try:
        args = _humanfix_plain(list(exc.args))
    except Exception:
        args = [str(exc)[:_HUMANFIX_MESSAGE_CHARS]]
    return {"raise": {"type": type(exc).__name__, "args": args}}


def answer_calls(text: str, name: str, entry_point: str) -> None:
    _humanfix_linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": _humanfix_builtins}
    broken: dict | None = None
    try:
        exec(compile(text, name, "exec"), namespace)
    except Exception as exc:  # every call then raises it, where the tests make their first
        _humanfix_print_frames(exc, name)
        broken = _humanfix_raised(exc)
    _humanfix_signal.signal(_humanfix_signal.SIGPROF, _humanfix_limit_reached)
    reader = HumanfixReader(CALLS_IN)
    while (call := reader.read()) is not None:
        _humanfix_send(CALLS_OUT, broken or _humanfix_answer(namespace, entry_point, call, name))


def _humanfix_answer(namespace: dict, entry_point: str, call: dict, name: str) -> dict:
    limit = call.get("limit")
    began = _humanfix_time.process_time()
    try:
        # Looked up at each call, as the tests' global name would be.
        function = namespace.get(entry_point)
        if function is None:
            raise NameError(f"name '{entry_point}' is not defined")
        args = [_humanfix_rebuilt(arg) for arg in call["args"]]
        kwargs = {key: _humanfix_rebuilt(value) for key, value in call.get("kwargs", [])}
        if limit:
            _humanfix_signal.setitimer(_humanfix_signal.ITIMER_PROF, limit)
        try:
            value = function(*args, **kwargs)
        finally:
            _humanfix_signal.setitimer(_humanfix_signal.ITIMER_PROF, 0)
        return {"value": _humanfix_plain(value),
                "cpu": round(_humanfix_time.process_time() - began, 6)}
    except HumanfixCallLimit:
        return {"limit": limit}
    except HumanfixWireError as exc:
        return {"refused": f"{entry_point} returned a value that cannot reach the tests: {exc}"}
    except Exception as exc:
        _humanfix_print_frames(exc, name)
        return _humanfix_raised(exc)
