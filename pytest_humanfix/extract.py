"""Turn a model's reply into a candidate program for the task.

Small models answer in many shapes: a fenced block or bare code, a whole function or only its
body, reasoning in `<think>` tags, the buggy and the fixed version one after the other, example
calls and echoed tests after the function. This keeps what defines the solution (imports,
helpers, the entry point) and drops what would run at import time.
"""

from __future__ import annotations

import ast
import re
import textwrap

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)
_CODE_START = re.compile(r"^(def |async def |class |import |from |@)", re.MULTILINE)
_KEPT_NODES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
               ast.Assign, ast.AnnAssign, ast.Try)


def strip_thinking(reply: str) -> str:
    return _THINK.sub("", reply)


def code_blocks(reply: str) -> list[str]:
    return [body for _lang, body in _FENCE.findall(reply) if body.strip()]


def defines(code: str, name: str) -> bool:
    return re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


def _bare_code(text: str) -> str:
    match = _CODE_START.search(text)
    return text[match.start():] if match else text


def _keep_definitions(code: str, entry_point: str) -> str:
    """Drop top-level statements that would run at import: example calls, echoed tests,
    `__main__` blocks. Everything else, blank lines and comments included, stays as written."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    dropped: set[int] = set()
    for node in tree.body:
        is_check = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            and node.name == "check" and node.name != entry_point
        if is_check or not isinstance(node, _KEPT_NODES):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            dropped.update(range(first, node.end_lineno + 1))
    if not dropped:
        return code
    lines = code.splitlines()
    return "\n".join(l for n, l in enumerate(lines, 1) if n not in dropped).rstrip() + "\n"


def complete_body(body: str, declaration: str) -> str:
    """A reply holding only the function body is completed from the task's declaration."""
    body = textwrap.dedent(body).strip("\n")
    return declaration + textwrap.indent(body, "    ") + "\n"


def extract_code(reply: str, entry_point: str, declaration: str) -> str:
    text = strip_thinking(reply)
    blocks = code_blocks(text)
    defining = [b for b in blocks if defines(b, entry_point)]
    if defining:
        # The last full definition: replies often show the buggy code first, then the fix.
        code = defining[-1]
    elif blocks:
        code = max(blocks, key=len)
    else:
        code = _bare_code(text) if defines(text, entry_point) else text
    if not defines(code, entry_point):
        return complete_body(code, declaration)
    return _keep_definitions(code, entry_point)
