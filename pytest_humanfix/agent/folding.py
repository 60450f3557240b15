"""What a candidate's Python expressions amount to, read from its syntax tree without running
any of it: string expressions folded to their values (concatenation, f-strings, join, format,
slicing, decode, chr, base64) and names followed through assignments and imports to the objects
they alias (`_E = eval`, `from os import _exit as q`). A value is the set of what it may be, or
None where the reading cannot tell; every binding of a name counts whatever the order, so what
straight-line code computes is always among them. suspicion.py reads the flags with it
(docs/trust.md#fixes-that-defeat-the-tests-are-flagged).
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import itertools
import string
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .scopes import Binding, Ref, Scope, Scopes


@dataclass(frozen=True)
class Namespace:
    """The dict of a named object's attributes (`vars(os)`, `os.__dict__`, `globals()`)."""
    path: str


Value = Any  # a constant (str, bytes, int, float, bool, None, tuple of these), a Ref, a Namespace
Values = frozenset[Value] | None  # None: the reading cannot tell

# Bounds that keep a hostile expression ("a" * 10**9) from costing the reading: past them the
# value is not known.
MAX_CHOICES = 16
MAX_LENGTH = 2048
MAX_ITEMS = 256
MAX_INT = 1 << 21
# Methods of str and bytes whose result depends on their constant operands alone.
TEXT_METHODS = frozenset({
    "join", "format", "replace", "lower", "upper", "strip", "lstrip", "rstrip", "title",
    "capitalize", "swapcase", "casefold", "removeprefix", "removesuffix", "decode", "encode",
    "split", "rsplit", "zfill", "center", "ljust", "rjust"})
TEXT_CODECS = frozenset({"rot13", "rot_13", "hex", "base64", "utf-8", "utf8", "ascii", "latin-1",
                         "latin1"})


def _decode(data: Any, encoding: Any = "utf-8") -> Any:
    if encoding not in TEXT_CODECS:
        raise ValueError(encoding)
    return codecs.decode(data, encoding)


def _range(*args: int) -> tuple[int, ...]:
    numbers = range(*args)
    if len(numbers) > MAX_ITEMS:
        raise ValueError("too long")
    return tuple(numbers)


# Functions whose result depends on their constant arguments alone, by the path they are named by.
PURE_CALLS: dict[str, Callable[..., Any]] = {
    "builtins.chr": chr, "builtins.ord": ord, "builtins.str": str, "builtins.bytes": bytes,
    "builtins.bytearray": bytes, "builtins.list": tuple, "builtins.tuple": tuple,
    "builtins.reversed": lambda items: tuple(reversed(items)), "builtins.int": int,
    "builtins.sorted": lambda items: tuple(sorted(items)), "builtins.range": _range,
    "builtins.len": len, "builtins.bytes.fromhex": bytes.fromhex,
    "builtins.str.join": str.join, "builtins.bytes.decode": bytes.decode,
    "base64.b64decode": base64.b64decode, "base64.b32decode": base64.b32decode,
    "base64.b16decode": base64.b16decode, "base64.b85decode": base64.b85decode,
    "base64.a85decode": base64.a85decode, "base64.urlsafe_b64decode": base64.urlsafe_b64decode,
    "binascii.unhexlify": binascii.unhexlify, "binascii.a2b_hex": binascii.a2b_hex,
    "codecs.decode": _decode, "codecs.encode": lambda data, encoding="utf-8":
        codecs.encode(data, encoding) if encoding in TEXT_CODECS else _decode(None, encoding),
}
BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
          ast.Mult: lambda a, b: a * b, ast.Mod: lambda a, b: a % b,
          ast.FloorDiv: lambda a, b: a // b, ast.BitXor: lambda a, b: a ^ b,
          ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b}
UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Invert: lambda a: ~a}
CONVERSIONS: dict[int, Callable[[Any], str]] = {ord("r"): repr, ord("a"): ascii, ord("s"): str}


def _small(value: Any) -> bool:
    """A constant within the bounds, or a name; a bool counts as the int it is."""
    if isinstance(value, (str, bytes)):
        return len(value) <= MAX_LENGTH
    if isinstance(value, int):
        return abs(value) <= MAX_INT
    if isinstance(value, tuple):
        return len(value) <= MAX_ITEMS and all(_small(item) for item in value)
    return value is None or isinstance(value, (float, Ref, Namespace))


def _plain(value: Any) -> bool:
    """A constant a pure function may be given (not a name, whose str() means nothing)."""
    if isinstance(value, tuple):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, (str, bytes, int, float))


def _format_is_plain(text: Any) -> bool:
    """No field of a format string reaches into its argument (`{0.__class__}`, `{0[k]}`)."""
    if not isinstance(text, str):
        return True
    try:
        return all(not name or name.isdigit() or name.isidentifier()
                   for _, name, _, _ in string.Formatter().parse(text) if name is not None)
    except ValueError:
        return False


def _apply(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Value:
    """`function` on constants within the bounds; a ValueError where it fails or grows past
    them."""
    if not all(_plain(a) and _small(a) for a in (*args, *kwargs.values())):
        raise ValueError("not a small constant")
    try:
        result = function(*args, **kwargs)
    except Exception as exc:  # any failure of a pure function means: not known
        raise ValueError(str(exc)) from exc
    if isinstance(result, list):
        result = tuple(result)
    if not (_plain(result) and _small(result)):
        raise ValueError("not a small constant")
    return result


def _combine(parts: list[Values], make: Callable[..., Value]) -> Values:
    """make(*choice) for every choice of one value per part; None if a part, or any result, is
    unknown, or if there are too many."""
    if any(not p for p in parts):
        return None
    results: set[Value] = set()
    for choice in itertools.product(*parts):  # type: ignore[arg-type]
        try:
            results.add(make(*choice))
        except (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError,
                OverflowError, RecursionError):
            return None
        if len(results) > MAX_CHOICES:
            return None
    return frozenset(results)


class Reader:
    """`values` of any expression of a module, its scopes and bindings read once."""

    def __init__(self, tree: ast.Module) -> None:
        self.scopes = Scopes(tree)
        self._cache: dict[int, Values] = {}
        # A name's value, once read: a chain of names each read twice (a = b + b) stays linear.
        self._names: dict[tuple[int, str], Values] = {}

    def values(self, node: ast.expr) -> Values:
        """What `node` may be: a set of constants and names, or None where unknown."""
        try:
            return self._values(node, {}, frozenset())
        except RecursionError:
            return None

    def _values(self, node: ast.expr, env: Mapping[str, Values],
                guard: frozenset[tuple[int, str]]) -> Values:
        if env:
            return self._evaluate(node, env, guard)
        # Read once: each enclosing expression reads it again.
        if id(node) not in self._cache:
            self._cache[id(node)] = self._evaluate(node, env, guard)
        return self._cache[id(node)]

    def _evaluate(self, node: ast.expr, env: Mapping[str, Values],
                  guard: frozenset[tuple[int, str]]) -> Values:
        def of(child: ast.expr) -> Values:
            return self._values(child, env, guard)

        if isinstance(node, ast.Constant):
            return frozenset({node.value}) if _small(node.value) and (
                _plain(node.value)) else None
        if isinstance(node, ast.Name):
            return self._name(node, env, guard)
        if isinstance(node, ast.JoinedStr):
            return _combine([self._piece(p, env, guard) for p in node.values],
                            lambda *parts: _apply("".join, parts))
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            operation = BINARY[type(node.op)]
            return _combine([of(node.left), of(node.right)],
                            lambda a, b: _apply(operation, a, b))
        if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
            unary = UNARY[type(node.op)]
            return _combine([of(node.operand)], lambda a: _apply(unary, a))
        if isinstance(node, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in node.elts) or len(node.elts) > MAX_ITEMS:
                return None
            return _combine([of(e) for e in node.elts], lambda *items: tuple(items))
        if isinstance(node, ast.Attribute):
            return self._attribute(of(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, of(node.value), env, guard)
        if isinstance(node, ast.Call):
            return self._call(node, env, guard)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._comprehension(node, env, guard)
        return None

    def _piece(self, node: ast.expr, env: Mapping[str, Values],
               guard: frozenset[tuple[int, str]]) -> Values:
        """One part of an f-string, as text."""
        if not isinstance(node, ast.FormattedValue):
            return self._values(node, env, guard)
        spec = self._values(node.format_spec, env, guard) if node.format_spec else \
            frozenset({""})
        conversion = CONVERSIONS.get(node.conversion)
        return _combine([self._values(node.value, env, guard), spec],
                        lambda value, how: _apply(
                            format, conversion(value) if conversion else value, how))

    def _name(self, node: ast.Name, env: Mapping[str, Values],
              guard: frozenset[tuple[int, str]]) -> Values:
        if node.id in env:
            return env[node.id]
        scope = self.scopes.scope_of.get(id(node), self.scopes.module)
        found = self.scopes.lookup(node.id, scope)
        if found is None:
            return frozenset({Ref("builtins" if node.id == "__builtins__" else
                                  f"builtins.{node.id}")})
        where, bindings = found
        key = (id(where), node.id)
        if key in guard or node.id in where.parameters or not bindings:
            return None
        if key not in self._names:
            self._names[key] = self._bound(node.id, where, bindings, guard | {key})
        return self._names[key]

    def _bound(self, name: str, scope: Scope, bindings: list[Binding],
               guard: frozenset[tuple[int, str]]) -> Values:
        """The union of a name's bindings; one that reads the name itself (s = s + "x",
        s += "x") reads what the bindings before it give, and in a loop may repeat: unknown."""
        so_far: set[Value] = set()
        for binding in bindings:
            if binding.ref is not None:
                found: Values = frozenset({binding.ref})
            elif binding.expr is None:
                return None
            elif binding.operator is not None or any(
                    isinstance(n, ast.Name) and n.id == name for n in ast.walk(binding.expr)):
                if binding.in_loop or not so_far:
                    # Repeated, or reading a binding this reading has not seen (a builtin's).
                    return None
                before = frozenset(so_far)
                expr = binding.expr if binding.operator is None else ast.BinOp(
                    left=ast.Name(id=name), op=binding.operator, right=binding.expr)
                found = self._values(expr, {name: before}, guard)
            else:
                found = self._values(binding.expr, {}, guard)
                if binding.element:
                    found = _elements(found)
            if found is None:
                return None
            so_far |= found
            if len(so_far) > MAX_CHOICES:
                return None
        return frozenset(so_far)

    def _attribute(self, base: Values, attr: str) -> Values:
        if base is None:
            return None
        results: set[Value] = set()
        for value in base:
            if isinstance(value, Ref):
                results.add(Namespace(value.path) if attr == "__dict__"
                            else Ref(f"{value.path}.{attr}"))
            elif isinstance(value, (str, bytes)) and attr in TEXT_METHODS:
                results.add(Ref(f"builtins.{type(value).__name__}.{attr}"))
            else:
                return None
        return frozenset(results)

    def _subscript(self, node: ast.Subscript, base: Values, env: Mapping[str, Values],
                   guard: frozenset[tuple[int, str]]) -> Values:
        index: Values
        if isinstance(node.slice, ast.Slice):
            bounds = [self._values(b, env, guard) if b is not None else frozenset({None})
                      for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            index = _combine(bounds, lambda *b: ("slice", *b))
        else:
            index = self._values(node.slice, env, guard)

        def item(container: Value, key: Value) -> Value:
            named = isinstance(container, Namespace) or (
                isinstance(container, Ref) and container.path == "sys.modules")
            if named and isinstance(key, str):
                return Ref(f"{container.path}.{key}" if isinstance(container, Namespace)
                           else key)
            if named:
                raise ValueError("a name that is not a string")
            if isinstance(key, tuple) and key[:1] == ("slice",):
                return _apply(lambda c: c[slice(*key[1:])], container)
            return _apply(lambda c, k: c[k], container, key)
        return _combine([base, index], item)

    def _call(self, node: ast.Call, env: Mapping[str, Values],
              guard: frozenset[tuple[int, str]]) -> Values:
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return None
        functions = self._values(node.func, env, guard)
        if functions is None or len(functions) != 1:
            return None
        (function,) = functions
        if not isinstance(function, Ref):
            return None
        if function.path == "builtins.map" and len(node.args) == 2:
            return self._map(node.args[0], node.args[1], env, guard)
        args = [self._values(a, env, guard) for a in node.args]
        keywords = {k.arg: self._values(k.value, env, guard) for k in node.keywords if k.arg}
        names = list(keywords)
        receiver = self._values(node.func.value, env, guard) \
            if isinstance(node.func, ast.Attribute) else None
        if receiver is not None and all(isinstance(r, (str, bytes)) for r in receiver):
            # A method of a constant (TEXT_METHODS): the receiver is its first argument.
            name = node.func.attr  # type: ignore[attr-defined]
            if name == "format" and not all(_format_is_plain(r) for r in receiver):
                return None
            return _combine([receiver, *args, *keywords.values()], lambda *rest: _apply(
                lambda own, *a, **k: getattr(own, name)(*a, **k), *rest[:len(args) + 1],
                **dict(zip(names, rest[len(args) + 1:], strict=True))))
        if function.path in ("builtins.getattr", "builtins.vars", "builtins.__import__",
                             "importlib.import_module"):
            return _combine(args[:2], lambda *a: _reach(function.path, *a))
        if function.path in ("builtins.globals", "builtins.locals"):
            return frozenset({Namespace("<candidate>")})
        pure = PURE_CALLS.get(function.path)
        if pure is None:
            return None
        return _combine([*args, *keywords.values()], lambda *rest: _apply(
            pure, *rest[:len(args)], **dict(zip(names, rest[len(args):], strict=True))))

    def _map(self, function: ast.expr, items: ast.expr, env: Mapping[str, Values],
             guard: frozenset[tuple[int, str]]) -> Values:
        sequences = _sequences(self._values(items, env, guard))
        if isinstance(function, ast.Lambda) and len(function.args.args) == 1:
            parameter = function.args.args[0].arg
            return self._each(sequences, lambda item: self._values(
                function.body, {**env, parameter: frozenset({item})}, guard))
        callees = self._values(function, env, guard)
        if callees is None or len(callees) != 1:
            return None
        (callee,) = callees
        pure = PURE_CALLS.get(callee.path) if isinstance(callee, Ref) else None
        if pure is None:
            return None
        return self._each(sequences, lambda item: _combine([frozenset({item})],
                                                           lambda a: _apply(pure, a)))

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp,
                       env: Mapping[str, Values], guard: frozenset[tuple[int, str]]) -> Values:
        """[f(c) for c in constant], one generator, no condition, one name: element by
        element."""
        if len(node.generators) != 1 or node.generators[0].ifs or \
                not isinstance(node.generators[0].target, ast.Name):
            return None
        generator = node.generators[0]
        name = generator.target.id  # type: ignore[attr-defined]
        sequences = _sequences(self._values(generator.iter, env, guard))
        return self._each(sequences, lambda item: self._values(
            node.elt, {**env, name: frozenset({item})}, guard))

    @staticmethod
    def _each(sequences: list[Any] | None,
              element: Callable[[Any], Values]) -> Values:
        """A tuple of element(item) for each item of each sequence, where each has one value."""
        if sequences is None:
            return None
        results: set[Value] = set()
        for sequence in sequences:
            items: list[Value] = []
            for item in sequence:
                found = element(item)
                if found is None or len(found) != 1:
                    return None
                items.extend(found)
            results.add(tuple(items))
        return frozenset(results)

def _elements(found: Values) -> Values:
    """What a `for` target takes over each sequence `found` may be."""
    sequences = _sequences(found)
    if sequences is None:
        return None
    items: set[Value] = set()
    for sequence in sequences:
        items.update(sequence)
    return frozenset(items) if 0 < len(items) <= MAX_CHOICES else None


def _sequences(found: Values) -> list[Any] | None:
    if found is None or not all(isinstance(v, (str, bytes, tuple)) for v in found):
        return None
    return [tuple(v) if isinstance(v, bytes) else v for v in found]


def _reach(path: str, first: Value, second: Value = None) -> Value:
    """getattr(ref, name), vars(ref), __import__(name), import_module(name)."""
    if path == "builtins.getattr" and isinstance(first, Ref) and isinstance(second, str):
        return Ref(f"{first.path}.{second}")
    if path == "builtins.vars" and isinstance(first, Ref):
        return Namespace(first.path)
    if path in ("builtins.__import__", "importlib.import_module") and isinstance(first, str):
        return Ref(first if path == "importlib.import_module" else first.split(".")[0])
    raise ValueError(path)


def text_values(found: Values) -> Iterator[str]:
    """The strings (bytes read as latin-1) among `found`, and those inside its tuples."""
    for value in found or ():
        if isinstance(value, str):
            yield value
        elif isinstance(value, bytes):
            yield value.decode("latin-1")
        elif isinstance(value, tuple):
            yield from text_values(frozenset(value))
