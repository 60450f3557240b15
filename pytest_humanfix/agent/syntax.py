"""The check before execution for the brace languages: does the candidate parse, and does it
define the entry point with the declared number of parameters? Tree-sitter's grammars from PyPI
(tree-sitter-javascript, -java, -go, -cpp, -rust; the `languages` extra) parse it; nothing runs.
Without them the check is skipped and the compiler alone judges (the start-up header says so).
See docs/languages.md#prompts-and-programs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..dataset import Task
from ..languages.grammars import parser

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# The node types that define a function.
FUNCTIONS = {"function_declaration", "function_item", "function_definition",
             "method_declaration", "variable_declarator"}
PARAMETER_LISTS = {"formal_parameters", "parameters", "parameter_list"}
# tree-sitter-cpp reports errors in code g++ compiles (CPP/22's typeid, CPP/38's macros): in
# C++ only the entry point's definition is checked, and syntax is left to the compiler.
LENIENT = {"cpp"}


def available(language: str) -> bool:
    return parser(language) is not None


def _walk(node: Node) -> list[Node]:
    found = [node]
    for child in node.children:
        found.extend(_walk(child))
    return found


def _name(node: Node) -> str:
    """The name a function-like node defines (C++ keeps it inside nested declarators)."""
    named = node.child_by_field_name("name")
    declarator = node.child_by_field_name("declarator")
    while named is None and declarator is not None:
        if declarator.type in ("identifier", "field_identifier"):
            named = declarator
        else:
            declarator = declarator.child_by_field_name("declarator")
    return named.text.decode() if named is not None and named.text else ""


def _parameter_count(node: Node) -> int | None:
    """How many parameters a function-like node declares (Go's `a, b int` counts two)."""
    for candidate in _walk(node):
        if candidate.type in PARAMETER_LISTS:
            count = 0
            for parameter in candidate.named_children:
                if parameter.type == "comment":
                    continue
                names = [c for c in parameter.named_children if c.type == "identifier"]
                count += len(names) if parameter.type == "parameter_declaration" \
                    and len(names) > 1 else 1
            return count
    return None


def _functions(root: Node) -> list[Node]:
    return [node for node in _walk(root) if node.type in FUNCTIONS and _name(node)]


def _declared(task: Task, parse: Parser) -> Node | None:
    """The entry point as the declaration declares it: the last function it opens (a few
    rows' `entry_point` differs from the name their code declares, e.g. Java/99)."""
    functions = _functions(parse.parse((task.declaration + "}" * 3).encode()).root_node)
    return functions[-1] if functions else None


def check_braced(code: str, task: Task) -> str:
    """An empty string when the candidate may run, else why not, in words for the model."""
    parse = parser(task.language)
    if parse is None:
        return ""
    root = parse.parse(code.encode()).root_node
    if root.has_error and task.language not in LENIENT:
        nodes = _walk(root)
        # A missing token says most; else the innermost error, not the file-wide one.
        bad = next((n for n in nodes if n.is_missing), None) or \
            [n for n in nodes if n.is_error and not any(c.has_error for c in n.children)][-1]
        lines = code.splitlines() or [""]
        # A reply cut after its last newline misses a token on the line after the last one.
        row = min(bad.start_point[0], len(lines) - 1)
        what = f"missing `{bad.type}`" if bad.is_missing else "syntax error"
        return f"{what} at line {row + 1}: `{lines[row].strip()}`"
    declared = _declared(task, parse)
    if declared is None:
        return ""
    name = _name(declared)
    function = next((f for f in reversed(_functions(root)) if _name(f) == name), None)
    if function is None:
        return f"it does not define the function `{name}`."
    want, got = _parameter_count(declared), _parameter_count(function)
    if want is not None and got is not None and want != got:
        return (f"`{name}` takes {got} parameter(s); the declaration "
                f"`{task.signature or name}` takes {want}.")
    return ""
