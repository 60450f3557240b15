"""The agent's check before execution: does the candidate parse, and does it define the entry
point so that the task's tests can call it as declared? Nothing is executed here
(docs/agent.md#the-repair-loop).
"""

from __future__ import annotations

import ast

from ..dataset import Task
from .syntax import check_braced


def declared_function(task: Task) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The entry point as the task declares it (the declaration ends at the `def` line)."""
    try:
        tree = ast.parse(task.declaration + "    pass\n")
    except SyntaxError:
        return None
    return _top_level_function(tree, task.entry_point)


def _top_level_function(tree: ast.Module, name: str
                        ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = None
    for node in tree.body:  # the last definition is the one the tests call
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def accepts_declared_calls(candidate: ast.arguments, declared: ast.arguments) -> bool:
    """Whether every call the declaration allows (by position) also binds to the candidate:
    renamed parameters are tolerated, extra ones only with defaults."""
    declared_count = len(declared.posonlyargs) + len(declared.args)
    positional = len(candidate.posonlyargs) + len(candidate.args)
    required = positional - len(candidate.defaults)
    if positional < declared_count and candidate.vararg is None:
        return False
    if required > declared_count:
        return False
    declared_kwonly = {a.arg for a in declared.kwonlyargs}
    return all(default is not None or arg.arg in declared_kwonly
               for arg, default in zip(candidate.kwonlyargs, candidate.kw_defaults, strict=True))


def check_candidate(code: str, task: Task) -> str:
    """An empty string when the candidate may run, else why not, in words for the model."""
    if task.language != "python":
        return check_braced(code, task)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        where = f" at line {exc.lineno}" if exc.lineno else ""
        return f"syntax error{where}: {exc.msg}" + (f": `{line}`" if line else "")
    function = _top_level_function(tree, task.entry_point)
    if function is None:
        return f"it does not define the function `{task.entry_point}` at the top level."
    if isinstance(function, ast.AsyncFunctionDef):
        return f"`{task.entry_point}` must be a plain function, not `async def`."
    declared = declared_function(task)
    if declared is not None and not accepts_declared_calls(function.args, declared.args):
        return (f"`{task.entry_point}({ast.unparse(function.args)})` does not match the "
                f"declared parameters `{task.entry_point}({ast.unparse(declared.args)})`.")
    return ""
