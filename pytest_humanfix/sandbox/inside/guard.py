"""Put between a fixed candidate and its tests for the second, guarded run: every value the
entry point returns must be plain builtin data (exact builtin types, all the way down). An object
of the candidate's own type can answer `==` and truth tests as it likes, so the tests would
check nothing; the guard stops the program there and names the type on stderr
(docs/trust.md#fixes-that-defeat-the-tests-are-flagged)."""

import os as _humanfix_os
from collections.abc import Callable as _HumanfixCallable
from typing import Any as _HumanfixAny

_HUMANFIX_PLAIN = (bool, int, float, complex, str, bytes, type(None), list, tuple, dict, set,
                   frozenset)
_HUMANFIX_GUARD_MARK = "HUMANFIX-GUARD: the entry point returned a "
_HUMANFIX_GUARD_EXIT = 3


def _humanfix_plain(value: object, depth: int = 0) -> type | None:
    if type(value) not in _HUMANFIX_PLAIN:
        return type(value)
    if depth > 50:
        return None
    items: _HumanfixAny = ()
    if isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    for item in items:
        found = _humanfix_plain(item, depth + 1)
        if found is not None:
            return found
    return None


def _humanfix_guard(function: _HumanfixCallable[..., object]) -> _HumanfixCallable[..., object]:
    def guarded(*args: object, **kwargs: object) -> object:
        result = function(*args, **kwargs)
        found = _humanfix_plain(result)
        if found is not None:
            # Straight to fd 2: the candidate may have rebound sys.stderr. Where it closed or
            # redirected fd 2 too, the exit status still says the guard stopped the program.
            try:
                _humanfix_os.write(2, f"{_HUMANFIX_GUARD_MARK}{found.__qualname__}\n".encode())
            finally:
                _humanfix_os._exit(_HUMANFIX_GUARD_EXIT)
        return result

    return guarded
