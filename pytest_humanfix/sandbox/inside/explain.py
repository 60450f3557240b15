"""What a failed assert of the tests shows, computed where the values live: in the sandbox.

`agent/feedback.explained_tests` sends each call of an `assert` in the tests' `check` through
`_humanfix_note` (which records it and returns its value) and makes a failing assert raise
`AssertionError(_humanfix_explain(...))`: the assert, its operands' values and the calls that
made them, as pytest's assertion introspection shows it, each value cut to a bounded length.
Nothing runs twice; why a candidate cannot bend it: docs/sandbox.md#programs-inside-the-sandbox.
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
