"""The sites of a Python test (sites.py says what a site is), read from its syntax tree: the
asserts in the body of `check(candidate)` itself, not in a loop or a branch, in source order."""

from __future__ import annotations

import ast

from .literals import changed_literal
from .sites import WIDEST_TOLERANCE, Found, Site, statement_separator


class Source:
    """The test's text, with the syntax tree's (line, UTF-8 column) turned into offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Where each line starts: the tree counts lines at "\n" alone, as the tests end them.
        self.starts = [0, *(at + 1 for at, char in enumerate(text) if char == "\n")]

    def offset(self, line: int, column: int) -> int:
        start = self.starts[line - 1]
        row = self.text[start:self.starts[line] if line < len(self.starts) else None]
        return start + len(row.encode("utf-8")[:column].decode("utf-8", "replace"))

    def span(self, node: ast.expr | ast.stmt) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))

    def segment(self, node: ast.expr) -> str:
        start, end = self.span(node)
        return self.text[start:end]


def calls(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in ast.walk(node))


def sides(test: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """The two sides an assertion compares: of an equality (or `is`), or of the difference in
    `abs(a - b) < tol`."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq | ast.Is):
        return test.left, right
    left = test.left
    if (isinstance(op, ast.Lt | ast.LtE) and isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name) and left.func.id == "abs"
            and len(left.args) == 1 and isinstance(left.args[0], ast.BinOp)
            and isinstance(left.args[0].op, ast.Sub) and isinstance(right, ast.Constant)
            and isinstance(right.value, int | float) and 0 < right.value <= WIDEST_TOLERANCE):
        return left.args[0].left, left.args[0].right
    return None


def first_literal(node: ast.expr) -> ast.Constant | None:
    """The expected value's first literal in source order that `changed_literal` changes."""
    constants = sorted((n for n in ast.walk(node) if isinstance(n, ast.Constant)
                        and isinstance(n.value, bool | int | float | str | bytes)),
                       key=lambda n: (n.lineno, n.col_offset))
    return constants[0] if constants else None


def site(source: Source, statement: ast.Assert, candidate: str) -> Site | None:
    test = statement.test
    start, end = source.span(statement)
    separator = statement_separator(source.text, start)
    compared = sides(test)
    if compared is not None:
        with_call = [side for side in compared if calls(side, candidate)]
        if len(with_call) != 1:
            return None
        expected = compared[1] if with_call[0] is compared[0] else compared[0]
        literal = first_literal(expected)
        if literal is None:
            return None
        was = source.segment(literal)
        now = changed_literal(was)
        if now is None:
            return None
        edit_start, edit_end = source.span(literal)
        return Site(start, end, edit_start, edit_end, now, separator,
                    literal.lineno, was, now)
    # A truth test of the result: `not` put before it, or taken away.
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    operand = test.operand if isinstance(test, ast.UnaryOp) else test
    if not isinstance(operand, ast.Call) or not calls(operand, candidate) \
            or (isinstance(test, ast.UnaryOp) and not negated):
        return None
    was = source.segment(test)
    test_start, _ = source.span(test)
    operand_start, _ = source.span(operand)
    if negated:
        return Site(start, end, test_start, operand_start, "", separator, test.lineno, was,
                    source.segment(operand))
    return Site(start, end, test_start, test_start, "not ", separator, test.lineno, was,
                "not " + was)


def python_sites(text: str) -> Found:
    """The sites of a HumanEval test: `def check(candidate)` and its direct asserts. A test
    that does not parse has none."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return Found([], 0)
    source = Source(text)
    found, assertions = [], 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check" and node.args.args:
            candidate = node.args.args[0].arg
            for statement in node.body:
                if isinstance(statement, ast.Assert):
                    assertions += 1
                    one = site(source, statement, candidate)
                    if one is not None:
                        found.append(one)
    return Found(found, assertions)
