"""What the model is told about a failed execution: what its code did, not only where it failed
(a model told only the failing assert cannot learn what its code returned, and answers again).
A Python program runs with its asserts explained (`explained_tests`, the values computed in the
sandbox by `sandbox/inside/explain.py`); the rewrite fails exactly when the original assert does,
so the explained program is the graded one. An exception is told by its type, its message and
the candidate's own frames; all of it bounded (`what_happened`). Other languages keep their
compiler and test output. See docs/agent.md#the-repair-loop.
"""

from __future__ import annotations

import ast
import re

from ..sandbox.environment import Verdict, first_failure
from ..sandbox.inside import source
from ..sandbox.program import PROGRAM_NAME

CHECK = "check"
# Inside `check`, the helpers of explain.py under local names bound by its first statement.
HELPERS = ("begin", "note", "explain", "compared")
CALL_TEXT_CHARS = 120
FEEDBACK_CHARS = 1200
FRAMES_SHOWN = 4
FRAME_LINE = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')


def _local(helper: str) -> str:
    return f"_hf_{helper}"


def _helper_call(helper: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(_local(helper), ast.Load()), args=list(args), keywords=[])


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _CallNoter(ast.NodeTransformer):
    """Wraps every call in an assert's expression as `_hf_note("<call as written>", <call>)`."""

    def __init__(self, text: str) -> None:
        self.text = text

    def visit_Call(self, node: ast.Call) -> ast.Call:
        written = ast.get_source_segment(self.text, node) or ast.unparse(node)
        inner = self.generic_visit(node)
        assert isinstance(inner, ast.Call)
        return _helper_call("note", ast.Constant(_clip(" ".join(written.split()),
                                                       CALL_TEXT_CHARS)), inner)


class _AssertExplainer(ast.NodeTransformer):
    def __init__(self, text: str) -> None:
        self.text = text

    def visit_Assert(self, node: ast.Assert) -> list[ast.stmt]:
        written = ast.get_source_segment(self.text, node.test) or ast.unparse(node.test)
        test = _CallNoter(self.text).visit(node.test)
        message = [node.msg] if node.msg is not None else []
        statements: list[ast.stmt] = [ast.Expr(_helper_call("begin"))]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            operator = ast.unparse(ast.Compare(ast.Name("a"), test.ops, [ast.Name("b")]))[2:-2]
            statements += [
                ast.Assign([ast.Name("_hf_left", ast.Store())], test.left),
                ast.Assign([ast.Name("_hf_right", ast.Store())], test.comparators[0]),
            ]
            holds: ast.expr = ast.Compare(ast.Name("_hf_left", ast.Load()), test.ops,
                                          [ast.Name("_hf_right", ast.Load())])
            shown: ast.expr = _helper_call("compared", ast.Name("_hf_left", ast.Load()),
                                           ast.Constant(operator),
                                           ast.Name("_hf_right", ast.Load()))
        else:
            statements.append(ast.Assign([ast.Name("_hf_value", ast.Store())], test))
            holds, shown = ast.Name("_hf_value", ast.Load()), ast.Constant(None)
        failure = ast.Call(ast.Name("AssertionError", ast.Load()), [_helper_call(
            "explain", ast.Constant(" ".join(written.split())), shown, *message)], [])
        statements.append(ast.If(ast.UnaryOp(ast.Not(), holds),
                                 [ast.Raise(exc=failure, cause=None)], []))
        return statements


def explained_tests(tests: str) -> str:
    """The tests with each assert of their `check` explained (see the module's docstring), the
    helpers they call put before them. Tests without a top-level `check`, or that do not parse,
    are returned as they are."""
    try:
        module = ast.parse(tests)
    except SyntaxError:
        return tests
    check = next((node for node in module.body
                  if isinstance(node, ast.FunctionDef) and node.name == CHECK), None)
    if check is None:
        return tests
    explainer = _AssertExplainer(tests)
    body: list[ast.stmt] = []
    for statement in check.body:
        changed = explainer.visit(statement)
        body.extend(changed if isinstance(changed, list) else [changed])
    bind = ast.Assign(
        [ast.Tuple([ast.Name(_local(h), ast.Store()) for h in HELPERS], ast.Store())],
        ast.Tuple([ast.Name(f"_humanfix_{h}", ast.Load()) for h in HELPERS], ast.Load()))
    check.body = [bind, *body]
    ast.fix_missing_locations(module)
    return source("explain.py") + "\n" + ast.unparse(module) + "\n"


def _candidate_frames(stderr: str) -> list[str]:
    """The frames of the candidate's own functions in its last traceback, each as its function
    and source line: the candidate's process prints only the frames of its program
    (sandbox/inside/answer.py), after the tests' traceback, whose frames are the tests'."""
    lines = stderr.splitlines()
    frames: list[tuple[str, str]] = []  # of the last traceback that holds the program's
    current: list[tuple[str, str]] = []
    for index, line in enumerate(lines):
        if line.startswith("Traceback"):
            current = []
        match = FRAME_LINE.match(line)
        if match and match["file"] == PROGRAM_NAME:
            following = lines[index + 1] if index + 1 < len(lines) else ""
            code = "" if FRAME_LINE.match(following) else following.strip()
            current.append((match["name"], code))
            frames = current
    # Without line numbers: they count the harness's prelude, which the model never saw.
    return [f"  in {name}: {code}".rstrip(": ") for name, code in frames
            if not name.startswith(("_humanfix", "<"))][-FRAMES_SHOWN:]


def what_happened(verdict: Verdict) -> str:
    """The feedback on a failed execution: the failure (with an explained assert's values), then,
    for an exception raised in the candidate's code, the candidate's frames; at most
    FEEDBACK_CHARS."""
    failure = first_failure(verdict)
    frames = _candidate_frames(verdict.stderr) if verdict.status == "failed" else []
    if frames and not failure.startswith("assert "):
        failure += "\nraised in your code:\n" + "\n".join(frames)
    return _clip(failure, FEEDBACK_CHARS)
