"""The tests' process, after `child.py` and `wire.py`: it runs the task's tests with the entry
point's name bound to `HumanfixCandidate`, which sends each call to the candidate's process and
rebuilds its answer as plain data. The tests' program comes from the harness, never from a
file the candidate could reach, and nothing of the candidate's runs here
(docs/sandbox.md#the-tests-and-the-candidate-apart).
"""

import ast as _humanfix_tests_ast
import builtins as _humanfix_tests_builtins
import linecache as _humanfix_tests_linecache
import os as _humanfix_tests_os
import sys as _humanfix_tests_sys
import traceback as _humanfix_tests_traceback
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

_HUMANFIX_SHOWN_CHARS = 200


class CandidateError(Exception):
    """The candidate's answer is no value: its process ended, or what it sent is not plain
    data. Also the base of an exception of the candidate's own class, rebuilt by name."""


class CallLimitError(CandidateError):
    """A call ran past the CPU limit the tests gave it (`HumanfixCandidate.limit`)."""


def _humanfix_exception(raised: Any) -> Exception:
    """The candidate's exception rebuilt: a builtin exception type by its name, with its
    arguments; any other class as a CandidateError named like it."""
    kind = raised.get("type") if type(raised) is dict else None
    kind = kind if type(kind) is str and kind.isidentifier() and len(kind) <= 100 else "Exception"
    try:
        args = _humanfix_rebuilt(raised.get("args", []))
    except HumanfixWireError:
        args = []
    args = args if type(args) is list else []
    found = getattr(_humanfix_tests_builtins, kind, None)
    if isinstance(found, type) and issubclass(found, Exception):
        try:
            rebuilt: Exception = found(*args)
            return rebuilt
        except Exception:
            pass
    named: type[Exception] = type(kind, (CandidateError,), {"__module__": "builtins"})
    return named(*args)


class HumanfixCandidate:
    """The candidate's entry point as the tests see it. `limit` (CPU seconds) bounds the next
    calls, `cpu` holds the last call's CPU seconds in the candidate's process."""

    def __init__(self, entry_point: str) -> None:
        self.__name__ = self.__qualname__ = entry_point
        self.reader = HumanfixReader(CALLS_IN)
        self.limit: float | None = None
        self.cpu = 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = {"args": [_humanfix_plain(arg) for arg in args],
                "kwargs": [[key, _humanfix_plain(value)] for key, value in kwargs.items()],
                "limit": self.limit}
        try:
            _humanfix_send(CALLS_OUT, call)
            answer = self.reader.read()
        except BrokenPipeError:
            answer = None
        except HumanfixWireError as exc:
            raise CandidateError(f"the candidate's answer to {self.shown(args, kwargs)} is "
                                 f"unreadable: {exc}") from None
        if answer is None:
            raise CandidateError("the candidate's process ended before it answered "
                                 f"{self.shown(args, kwargs)}") from None
        if "value" in answer:
            cpu = answer.get("cpu")
            self.cpu = float(cpu) if isinstance(cpu, (int, float)) else 0.0
            try:
                return _humanfix_rebuilt(answer["value"])
            except HumanfixWireError as exc:
                raise CandidateError(f"the candidate's answer to {self.shown(args, kwargs)} "
                                     f"is not plain data: {exc}") from None
        if "raise" in answer:
            raise _humanfix_exception(answer["raise"]) from None
        if "limit" in answer:
            raise CallLimitError(f"{self.shown(args, kwargs)} ran past its limit, "
                                 f"{self.limit:g} s of CPU") from None
        refused = answer.get("refused")
        raise CandidateError(str(refused)[:_HUMANFIX_SHOWN_CHARS * 5] if refused else
                             f"the candidate's answer to {self.shown(args, kwargs)} is not "
                             "plain data")

    def shown(self, args: tuple, kwargs: dict) -> str:
        """The call as a failure names it; written only for a failure, as an argument's repr
        can be long, or refused (an int past Python's 4,300 digits)."""
        try:
            text = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        except ValueError:
            text = "..."
        cut = text if len(text) <= _HUMANFIX_SHOWN_CHARS else text[:_HUMANFIX_SHOWN_CHARS] + "..."
        return f"{self.__name__}({cut})"


def _humanfix_written(line: str) -> str:
    """A line of explained tests as the tests wrote it: an assert's call that an explained
    assert took apart (agent/feedback) shows as the call, which `_hf_note` holds as text."""
    if not line.startswith("_hf_"):
        return line
    try:
        for node in _humanfix_tests_ast.walk(_humanfix_tests_ast.parse(line)):
            if isinstance(node, _humanfix_tests_ast.Call) and getattr(node.func, "id", "") == \
                    "_hf_note" and isinstance(node.args[0], _humanfix_tests_ast.Constant):
                return str(node.args[0].value)
    except (SyntaxError, IndexError):
        pass
    return line


def run_tests(text: str, name: str, entry_point: str) -> None:
    _humanfix_tests_linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": _humanfix_tests_builtins,
                                 entry_point: HumanfixCandidate(entry_point),
                                 "_HumanfixCallLimitError": CallLimitError}
    try:
        exec(compile(text, name, "exec"), namespace)
    except Exception as exc:
        # The tests' own frames: the statement that failed, never this driver's.
        frames = [frame for frame in _humanfix_tests_traceback.extract_tb(exc.__traceback__)
                  if frame.filename == name]
        _humanfix_tests_sys.stderr.write("".join([
            "Traceback (most recent call last):\n",
            *(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n'
              f"    {_humanfix_written(frame.line or '')}\n" for frame in frames),
            *_humanfix_tests_traceback.format_exception_only(type(exc), exc)]))
        _humanfix_tests_sys.stderr.flush()
        _humanfix_tests_sys.exit(1)
    # The candidate's process reads the end of the calls, and ends.
    _humanfix_tests_os.close(CALLS_OUT)
