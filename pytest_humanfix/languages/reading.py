"""A brace-language candidate as `Language.flags` reads it, from tree-sitter's syntax tree
(grammars.py) where the grammar is installed: the text normalised, string expressions folded
into one literal (`'ex' + 'it'`, `"a" "b"`, `concat!`, `[...].join('')`, escapes) and a name
that aliases what the rules look for replaced by it (`const p = process`, `import o "os"`,
`Runtime r = Runtime.getRuntime()`, `use std::{process as p}`), for the rules to read beside the
text as written; and what only the tree tells (a computed member of `process`, a Go package
initializer that runs code before the tests). Nothing of the candidate runs
(docs/trust.md#fixes-that-defeat-the-tests-are-flagged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .grammars import parser

if TYPE_CHECKING:
    from tree_sitter import Node

STRINGS = {"string", "template_string", "string_literal", "interpreted_string_literal",
           "raw_string_literal", "concatenated_string"}
CONTENT = {"string_fragment", "string_content", "interpreted_string_literal_content",
           "raw_string_literal_content", "raw_string_content"}
# Where a name is bound to a value: the node type, the name's field and the value's.
DECLARATIONS = {"variable_declarator": ("name", "value"),
                "init_declarator": ("declarator", "value"), "let_declaration": ("pattern", "value"),
                "const_item": ("name", "value"),
                "static_item": ("name", "value"), "assignment_expression": ("left", "right"),
                "short_var_declaration": ("left", "right"),
                "assignment_statement": ("left", "right"), "var_spec": ("name", "value"),
                "const_spec": ("name", "value")}
# What, assigned to a name, makes the name an alias the rules must see through.
ROOTS = {
    "js": re.compile(r"(?:process|console|globalThis|global|Reflect|require|module|Function|"
                     r"eval)\b"),
    "java": re.compile(r"(?:Runtime\s*\.\s*getRuntime\s*\(\s*\)|System\b|ProcessHandle\b|"
                       r"Class\s*\.\s*forName\b)"),
    "go": re.compile(r"(?:os|syscall|runtime|testing|unsafe|flag|reflect)\s*\."),
    "cpp": re.compile(r"(?:std\s*::\s*)?(?:exit|_exit|_Exit|quick_exit|abort|getenv|environ|"
                      r"__environ|system|syscall|kill|raise|signal|atexit|dlsym)\b"),
    "rust": re.compile(r"(?:::\s*)?(?:std|core|libc)\s*::"),
}
# JavaScript: a member of these reached by a key the reading cannot fold.
COMPUTED_ROOTS = re.compile(r"(?:process|console|globalThis|global|Reflect|module|require)\b")
ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|"
                    r"([0-7]{1,3})|(.))", re.S)
SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
MAX_LENGTH = 2048


@dataclass
class Reading:
    """The normalised text ("" without a grammar) and the flags only the tree tells."""
    text: str = ""
    flags: list[str] = field(default_factory=list)


def read(language: str, code: str) -> Reading:
    parse = parser(language)
    if parse is None:
        return Reading()
    source = code.encode()
    return _Reader(language, source, parse.parse(source).root_node).reading()


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        hex2, braced, hex4, octal, other = match.groups()
        if hex2 or braced or hex4:
            number = int(hex2 or braced or hex4, 16)
            return chr(number) if number < 0x110000 else ""
        if octal:
            return chr(int(octal, 8))
        return SIMPLE_ESCAPES.get(other, other)
    return ESCAPE.sub(one, text)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _walk(node: Node) -> list[Node]:
    found, pending = [], [node]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(reversed(current.children))
    return found


def _names(node: Node | None) -> list[Node]:
    """The identifiers a declaration's name field binds (a C++ declarator's innermost one; each
    of a Go name list)."""
    while node is not None and node.type in ("pointer_declarator", "reference_declarator",
                                             "array_declarator", "function_declarator",
                                             "parenthesized_declarator"):
        node = node.child_by_field_name("declarator") or (
            node.named_children[0] if node.named_children else None)
    if node is None:
        return []
    if node.type in ("identifier", "expression_list"):
        return [node] if node.type == "identifier" else \
            [c for c in node.named_children if c.type == "identifier"]
    return []


class _Reader:
    def __init__(self, language: str, source: bytes, root: Node) -> None:
        self.language, self.source, self.root = language, source, root
        self.nodes = _walk(root)
        # Each name's values, wherever bound (no scopes: a name bound twice is read as both).
        self.bound: dict[str, list[Node]] = {}
        # The positions of names being bound, not read.
        self.binding_sites: set[int] = set()
        self.aliases: dict[str, str] = {}
        self._collect()

    def _collect(self) -> None:
        for node in (n for n in self.nodes if n.type in DECLARATIONS):
            name_field, value_field = DECLARATIONS[node.type]
            values = node.children_by_field_name(value_field)
            if len(values) == 1 and values[0].type == "expression_list":
                values = values[0].named_children
            names = [n for name in node.children_by_field_name(name_field) for n in _names(name)]
            pattern = node.child_by_field_name("name")
            if pattern is not None and pattern.type == "object_pattern":
                self._destructured(node)
            for name, value in zip(names, values, strict=False):
                self.bound.setdefault(_text(name), []).append(value)
                self.binding_sites.add(name.start_byte)
        self._imports()
        roots = ROOTS[self.language]
        for bound, values in self.bound.items():
            for value in values:
                text = " ".join(self.normalised(value).split())
                if roots.match(text) and text != bound:
                    self.aliases[bound] = text

    def _destructured(self, declarator: Node) -> None:
        """const {exit: q, env} = process: q is process.exit, env is process.env."""
        value = declarator.child_by_field_name("value")
        pattern = declarator.child_by_field_name("name")
        if value is None or pattern is None:
            return
        base = _text(value)
        for part in pattern.named_children:
            key: Node | None
            target: Node | None
            if part.type == "shorthand_property_identifier_pattern":
                key = target = part
            elif part.type == "pair_pattern":
                key, target = part.child_by_field_name("key"), part.child_by_field_name("value")
            else:
                continue
            if key is not None and target is not None and target.type in (
                    "identifier", "shorthand_property_identifier_pattern"):
                member = self._string(key) if key.type in STRINGS else _text(key)
                if member is not None and ROOTS["js"].match(base):
                    self.aliases[_text(target)] = f"{base}.{member}"
                    self.binding_sites.add(target.start_byte)

    def _imports(self) -> None:
        """Go's `import o "os"` and Rust's `use std::process as p`, `use std::{env as e}`."""
        for node in self.nodes:
            if node.type == "import_spec":
                name, path = node.child_by_field_name("name"), node.child_by_field_name("path")
                if name is not None and name.type == "package_identifier" and path is not None:
                    self.aliases[_text(name)] = _text(path).strip('"`').split("/")[-1]
                    self.binding_sites.add(name.start_byte)
            elif node.type == "use_as_clause":
                path, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
                if path is None or alias is None:
                    continue
                prefix = ""
                outer = node.parent
                while outer is not None and outer.type in ("use_list", "scoped_use_list"):
                    scope = outer.child_by_field_name("path")
                    if outer.type == "scoped_use_list" and scope is not None:
                        prefix = _text(scope) + "::" + prefix
                    outer = outer.parent
                self.aliases[_text(alias)] = prefix + _text(path)
                self.binding_sites.add(alias.start_byte)

    # -- strings ------------------------------------------------------------------------
    def _string(self, node: Node, seen: frozenset[str] = frozenset()) -> str | None:
        """The constant string `node` amounts to, or None."""
        kind = node.type
        if kind == "concatenated_string" or (kind in STRINGS and any(
                c.type == "template_substitution" for c in node.named_children)):
            parts = [self._string(c, seen) if c.type != "template_substitution" else
                     self._string(c.named_children[0], seen) if c.named_children else None
                     for c in node.named_children]
            return self._joined(parts)
        if kind in STRINGS:
            return self._bounded("".join(_unescape(_text(c)) if c.type == "escape_sequence"
                                         else _text(c) for c in node.named_children
                                         if c.type in CONTENT or c.type == "escape_sequence"))
        if kind in CONTENT:
            return _text(node)
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self._string(node.named_children[0], seen)
        if kind == "binary_expression" and _text(node.child_by_field_name("operator")
                                                  or node.children[1]) == "+":
            left = self._string(node.child_by_field_name("left") or node.children[0], seen)
            right = self._string(node.child_by_field_name("right") or node.children[-1], seen)
            return None if left is None or right is None else self._bounded(left + right)
        if kind == "macro_invocation" and _text(node.child_by_field_name("macro")
                                                or node.children[0]) == "concat":
            trees = [c for c in node.named_children if c.type == "token_tree"]
            parts = [self._string(c, seen) for c in trees[0].named_children] if trees else [None]
            return self._joined(parts)
        if kind == "identifier" and _text(node) in self.bound and _text(node) not in seen:
            values = self.bound[_text(node)]
            strings = {self._string(v, seen | {_text(node)}) for v in values}
            return strings.pop() if len(strings) == 1 else None
        if kind == "call_expression":
            return self._string_call(node, seen)
        return None

    def _string_call(self, node: Node, seen: frozenset[str]) -> str | None:
        """['e', 'x'].join(''), String.fromCharCode(101, 120), 'e'.concat('x')."""
        function, arguments = node.child_by_field_name("function"), \
            node.child_by_field_name("arguments")
        if function is None or arguments is None or function.type != "member_expression":
            return None
        owner, member = function.child_by_field_name("object"), \
            _text(function.child_by_field_name("property") or function)
        args = arguments.named_children
        if owner is None:
            return None
        if member == "join" and owner.type == "array" and len(args) <= 1:
            separator = self._string(args[0], seen) if args else ","
            return None if separator is None else self._joined(
                [self._string(item, seen) for item in owner.named_children], separator)
        if member == "fromCharCode" and _text(owner) == "String" and \
                all(a.type == "number" and _text(a).isdigit() for a in args):
            return self._bounded("".join(chr(min(int(_text(a)), 0x10FFFF)) for a in args))
        if member == "concat":
            return self._joined([self._string(owner, seen),
                                 *(self._string(a, seen) for a in args)])
        return None

    @staticmethod
    def _bounded(text: str) -> str | None:
        return text if len(text) <= MAX_LENGTH else None

    @classmethod
    def _joined(cls, parts: list[str | None], separator: str = "") -> str | None:
        known = [p for p in parts if p is not None]
        return cls._bounded(separator.join(known)) if len(known) == len(parts) else None

    # -- the normalised text ------------------------------------------------------------
    def normalised(self, node: Node) -> str:
        """`node`'s text with each folded string expression one literal and each alias
        replaced by what it aliases."""
        pieces: list[str] = []
        position = node.start_byte
        pending = [node]
        while pending:
            current = pending.pop()
            replacement = self._replacement(current)
            if replacement is None:
                pending.extend(reversed(current.children))
                continue
            pieces.append(self.source[position:current.start_byte].decode("utf-8", "replace"))
            pieces.append(replacement)
            position = current.end_byte
        pieces.append(self.source[position:node.end_byte].decode("utf-8", "replace"))
        return "".join(pieces)

    def _replacement(self, node: Node) -> str | None:
        if node.type in ("identifier", "package_identifier") and \
                node.start_byte not in self.binding_sites:
            name = _text(node)
            if name in self.aliases:
                return self.aliases[name]
        literal = node.type in STRINGS and node.type != "concatenated_string" and not any(
            c.type in ("escape_sequence", "template_substitution") for c in node.named_children)
        if literal:
            return None  # as written: a rule reads it there already
        if node.type in STRINGS or node.type in ("binary_expression", "identifier",
                                                 "macro_invocation", "call_expression") and \
                node.start_byte not in self.binding_sites:
            folded = self._string(node)
            if folded is not None and (node.type != "identifier" or folded):
                return '"' + folded.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return None

    # -- what only the tree tells -------------------------------------------------------
    def _tree_flags(self) -> list[str]:
        found = []
        for node in self.nodes:
            if node.type == "subscript_expression" and self.language == "js":
                owner, index = node.child_by_field_name("object"), \
                    node.child_by_field_name("index")
                if owner is not None and index is not None and \
                        COMPUTED_ROOTS.match(self.normalised(owner)) and \
                        self._string(index) is None:
                    found.append(f"computed name: {' '.join(_text(node).split())[:60]}")
            elif node.type == "this" and self._plain_function_around(node):
                found.append("around the tests: this in a plain function (the global object)")
            elif node.type == "var_declaration" and node.parent is not None and \
                    node.parent.type == "source_file" and self._runs_code(node):
                found.append("around the tests: a package variable's initializer runs code "
                             "before the tests")
            elif node.type == "import_spec" and (node.child_by_field_name("name") or node).type \
                    in ("dot", "blank_identifier"):
                found.append(f"around the tests: import {' '.join(_text(node).split())}")
        return found

    @staticmethod
    def _plain_function_around(node: Node) -> bool:
        """JavaScript's `this` in a function that is not a method: the global object when
        called plainly."""
        outer = node.parent
        while outer is not None:
            if outer.type in ("method_definition", "class_body", "field_definition"):
                return False
            if outer.type in ("function_declaration", "function_expression", "function",
                              "generator_function", "generator_function_declaration"):
                return True
            outer = outer.parent
        return False

    def _runs_code(self, declaration: Node) -> bool:
        """A Go package variable initialised by a call of a function literal or of a function
        of the candidate's: it runs before any test."""
        own = {_text(name) for n in self.nodes
               if n.type in ("function_declaration", "method_declaration")
               and (name := n.child_by_field_name("name")) is not None}
        for node in _walk(declaration):
            if node.type == "call_expression":
                function = node.child_by_field_name("function")
                if function is not None and (function.type == "func_literal"
                                             or _text(function) in own):
                    return True
        return False

    def reading(self) -> Reading:
        return Reading(self.normalised(self.root), self._tree_flags())
