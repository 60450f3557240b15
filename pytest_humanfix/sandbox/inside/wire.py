"""The calls between the tests and the candidate, which run in two processes: one JSON line per
message on a pipe, values as plain data (docs/sandbox.md#the-tests-and-the-candidate-apart).

A value is JSON where JSON can say it and a one-key object where it cannot ({"tuple": [...]},
{"dict": [[key, value], ...]}, "set", "frozenset", {"bytes": "<hex>"}, {"complex": [re, im]},
{"int": "<hex>"} past 64 bits: decimal is quadratic, HumanEval+'s Python/83 answers have a
million digits). `plain` turns what the candidate returns into that form (no object of the
candidate's crosses); `rebuilt` turns a message back into builtin values and refuses anything
else. A message is at most `_HUMANFIX_WIRE_BYTES` long.
"""

import json as _humanfix_json
import os as _humanfix_wire_os
from typing import Any as _HumanfixWireAny

_HUMANFIX_WIRE_BYTES = 16 << 20
_HUMANFIX_WIRE_DEPTH = 100


class HumanfixWireError(Exception):
    """A message that is not plain data, or too large, or cut off."""


def _humanfix_plain(value: _HumanfixWireAny, depth: int = 0) -> _HumanfixWireAny:
    if depth > _HUMANFIX_WIRE_DEPTH:
        raise HumanfixWireError(f"a value nested more than {_HUMANFIX_WIRE_DEPTH} deep")
    if value is None or type(value) in (bool, str):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        number = int.__int__(value)
        return number if number.bit_length() <= 64 else {"int": format(number, "x")}
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, complex):
        return {"complex": [complex.__complex__(value).real, complex.__complex__(value).imag]}
    if isinstance(value, list):
        return [_humanfix_plain(item, depth + 1) for item in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"tuple": [_humanfix_plain(item, depth + 1) for item in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"dict": [[_humanfix_plain(k, depth + 1), _humanfix_plain(v, depth + 1)]
                         for k, v in dict.items(value)]}
    if isinstance(value, frozenset):
        return {"frozenset": [_humanfix_plain(item, depth + 1)
                              for item in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"set": [_humanfix_plain(item, depth + 1) for item in set.__iter__(value)]}
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and callable(item) and not getattr(value, "shape", ()):
        return _humanfix_plain(item(), depth + 1)  # a numpy scalar: the Python value it holds
    raise HumanfixWireError(f"{type(value).__qualname__} is not plain data (None, bool, int, "
                            "float, complex, str, bytes, list, tuple, dict, set, frozenset)")


_HUMANFIX_TAGS = ("tuple", "dict", "set", "frozenset", "bytes", "complex", "int")


def _humanfix_rebuilt(value: _HumanfixWireAny, depth: int = 0) -> _HumanfixWireAny:
    if depth > _HUMANFIX_WIRE_DEPTH:
        raise HumanfixWireError(f"a value nested more than {_HUMANFIX_WIRE_DEPTH} deep")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is list:
        return [_humanfix_rebuilt(item, depth + 1) for item in value]
    if kind is not dict or len(value) != 1:
        raise HumanfixWireError("a message holds a value that is not plain data")
    (tag, inner), = value.items()
    if tag not in _HUMANFIX_TAGS:
        raise HumanfixWireError(f"a message holds an unknown kind of value: {tag[:40]!r}")
    if tag in ("bytes", "int"):
        if type(inner) is not str:
            raise HumanfixWireError(f"{tag} not given as hex")
        try:
            return bytes.fromhex(inner) if tag == "bytes" else int(inner, 16)
        except ValueError:
            raise HumanfixWireError(f"{tag} not given as hex") from None
    if type(inner) is not list:
        raise HumanfixWireError(f"a {tag} not given as a list")
    if tag == "complex":
        if len(inner) != 2 or any(type(part) not in (int, float) for part in inner):
            raise HumanfixWireError("a complex not given as [real, imag]")
        return complex(inner[0], inner[1])
    if tag == "dict":
        rebuilt = {}
        for pair in inner:
            if type(pair) is not list or len(pair) != 2:
                raise HumanfixWireError("a dict item not given as [key, value]")
            rebuilt[_humanfix_rebuilt(pair[0], depth + 1)] = _humanfix_rebuilt(pair[1], depth + 1)
        return rebuilt
    items = [_humanfix_rebuilt(item, depth + 1) for item in inner]
    return tuple(items) if tag == "tuple" else set(items) if tag == "set" else frozenset(items)


def _humanfix_send(fd: int, message: dict) -> None:
    data = (_humanfix_json.dumps(message, separators=(",", ":")) + "\n").encode()
    if len(data) > _HUMANFIX_WIRE_BYTES:
        raise HumanfixWireError(f"a message of {len(data)} bytes, more than the "
                                f"{_HUMANFIX_WIRE_BYTES} a call or an answer may hold")
    view = memoryview(data)
    while view:
        view = view[_humanfix_wire_os.write(fd, view):]


class HumanfixReader:
    """Reads one message at a time from a pipe, never more than the cap of one message; None
    once the other side has closed its end."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def read(self) -> "dict | None":
        while b"\n" not in self.buffer:
            if len(self.buffer) > _HUMANFIX_WIRE_BYTES:
                raise HumanfixWireError(f"a message longer than {_HUMANFIX_WIRE_BYTES} bytes")
            chunk = _humanfix_wire_os.read(self.fd, 1 << 16)
            if not chunk:
                if self.buffer:
                    raise HumanfixWireError("a message cut off before its end")
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = _humanfix_json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise HumanfixWireError(f"a message that is not JSON: {exc}") from None
        if type(message) is not dict:
            raise HumanfixWireError("a message that is not a JSON object")
        return message
