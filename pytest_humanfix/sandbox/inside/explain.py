"""What a failed assert of the tests shows, computed where the values live: in the sandbox.

`agent/feedback.explained_tests` rewrites each `assert` of the tests' `check`: every call in it
goes through `_humanfix_note`, which records the call as written and its value and returns the
value itself; `_humanfix_begin` forgets the calls of the assert before; a failing assert raises
`AssertionError(_humanfix_explain(...))`, whose message reads

    assert truncate_number(3.5) == 0.5
    assert 1.5 == 0.5
     +  where 1.5 = truncate_number(3.5)

as pytest's assertion introspection shows it, without running anything again. The verdict is
the original assert's: the same expressions, evaluated once, in the same order. `check` binds
these functions to locals as its first statement, so a candidate that rebinds the globals while
the tests run changes nothing of what they compare. Each value shown is cut to a bounded length.
"""

from typing import Any as _HumanfixAny

_HUMANFIX_REPR_CHARS = 160
_HUMANFIX_WHERE_SHOWN = 4
_humanfix_calls: list[tuple[str, _HumanfixAny]] = []


def _humanfix_begin() -> None:
    _humanfix_calls.clear()


def _humanfix_note(text: str, value: _HumanfixAny) -> _HumanfixAny:
    _humanfix_calls.append((text, value))
    return value


def _humanfix_repr(value: object) -> str:
    try:
        shown = repr(value)
    except BaseException as exc:  # a candidate's object may refuse repr()
        shown = f"<unprintable {type(value).__name__}: {type(exc).__name__}>"
    if len(shown) > _HUMANFIX_REPR_CHARS:
        shown = shown[:_HUMANFIX_REPR_CHARS - 3] + "..."
    return shown


def _humanfix_explain(text: str, shown: str | None, *message: object) -> str:
    """The failure message: the assert as written, the comparison with its operands' values
    (`shown`), the calls that made them, and the assert's own message if it has one."""
    lines = [f"assert {text}"]
    if shown:
        lines.append(f"assert {shown}")
    for call, value in _humanfix_calls[-_HUMANFIX_WHERE_SHOWN:]:
        lines.append(f" +  where {_humanfix_repr(value)} = {call}")
    lines += [f"message: {_humanfix_repr(said)}" for said in message]
    return "\n".join(lines)


def _humanfix_compared(left: object, operator: str, right: object) -> str:
    return f"{_humanfix_repr(left)} {operator} {_humanfix_repr(right)}"
