"""Turn a model's reply into a candidate program for the task.

Small models answer in many shapes: a fenced block or bare code between prose, a whole function
or only its body, reasoning in `<think>` tags, the buggy and the fixed version one after the
other, example calls and echoed tests after the function. This keeps what defines the solution
(imports, helpers, the entry point) and drops what would run at import time.
Each shape and what BigCode does with it: docs/agent.md#reply-extraction.
"""

from __future__ import annotations

import ast
import re
import textwrap

from ..models.base import cut_at_stop
from .prompts import STOP_WORDS

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([\w+.#-]*)[^\n]*\n(.*?)(?:^[ \t]*\2[ \t]*$|\Z)",
                    re.DOTALL | re.MULTILINE)
_CODE_START = re.compile(r"^(def |async def |class |import |from \S+ import |@)")
_KEPT_NODES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
               ast.Assign, ast.AnnAssign, ast.Try)
# Names of functions that echo the task's tests rather than solve it.
_TEST_FUNCTIONS = re.compile(r"^(check|test_\w*|main)$")


def strip_thinking(reply: str) -> str:
    text = _THINK.sub("", reply)
    # Qwen3's chat template may open the <think> block in the prompt: only the close is replied.
    close = text.lower().rfind("</think>")
    return text[close + len("</think>"):] if close != -1 else text


def code_blocks(reply: str, tags: tuple[str, ...] | None = None) -> list[str]:
    """Contents of the fenced blocks that may be of the language, in order: untagged, or
    tagged py* (Python), or with one of `tags` (another language). A fence left open (the
    reply ran out of tokens) runs to the end of the reply."""
    blocks = []
    for indent, _fence, lang, body in _FENCE.findall(reply):
        if lang and not (lang.lower() in tags if tags else lang.lower().startswith("py")):
            continue
        if indent:  # a block inside a markdown list is indented with its fence
            body = textwrap.dedent(body)
        if not body.endswith("\n"):
            # Left open: the reply was cut mid-line at its token limit, or before the newline
            # its closing fence begins with (--humanfix-chat-stop): its last line is ended as
            # a closed block's is, so a cut reply gives the code the whole reply would.
            body += "\n"
        if body.strip():
            blocks.append(body)
    return blocks


def defines(code: str, name: str) -> bool:
    return re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _region(lines: list[str], def_line: int, limit: int) -> str | None:
    """The longest stretch of `lines[:limit]` around the definition at `def_line` that parses."""
    starts = [i for i in range(def_line + 1) if _CODE_START.match(lines[i])]
    # A top-level statement can only end where the next unindented line begins.
    ends = [i for i in range(limit, def_line, -1)
            if i == limit or (lines[i].strip() and not lines[i][0].isspace())]
    for start in starts:
        for end in ends:
            segment = "\n".join(lines[start:end]) + "\n"
            if _parses(segment):
                return segment
    return None


def _code_region(text: str, entry_point: str) -> str:
    """The longest stretch of `text` that parses and defines the entry point: drops prose
    before and after bare code, and doctest or output lines after a function."""
    if _parses(text):
        return text
    lines = text.splitlines()
    pattern = re.compile(rf"^(async\s+)?def\s+{re.escape(entry_point)}\s*\(")
    def_lines = [i for i, line in enumerate(lines) if pattern.match(line)]
    if not def_lines:
        return text
    # When a reply shows the buggy code first, the fix comes last.
    region = _region(lines, def_lines[-1], len(lines))
    if region is not None:
        return region
    # A reply that repeats the function until the token limit is cut inside the last copy:
    # keep the first complete one, as BigCode's stop word "\ndef" would.
    for def_line, next_def in zip(def_lines, def_lines[1:], strict=False):
        region = _region(lines, def_line, next_def)
        if region is not None:
            return region
    return text


def _calls_any(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
               for n in ast.walk(node))


def keep_definitions(code: str, entry_point: str) -> str:
    """Drop top-level statements that would run at import: example calls, prints, echoed tests,
    `__main__` blocks, assignments that call the solution. Everything else, blank lines and
    comments included, stays as written (so the diff against the buggy code stays small)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    runs_code = defined | {"print", "input"}
    dropped: set[int] = set()
    for node in tree.body:
        echoed_test = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            and node.name != entry_point and _TEST_FUNCTIONS.match(node.name)
        runs = isinstance(node, (ast.Assign, ast.AnnAssign)) and _calls_any(node, runs_code)
        if echoed_test or runs or not isinstance(node, _KEPT_NODES):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            dropped.update(range(first, (node.end_lineno or node.lineno) + 1))
    if not dropped:
        return code
    lines = code.splitlines()
    kept = (line for number, line in enumerate(lines, 1) if number not in dropped)
    return "\n".join(kept).rstrip() + "\n"


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def with_declared_helpers(code: str, declaration: str, entry_point: str) -> str:
    """Put back what the declaration defines before the entry point (imports, helper functions
    such as `is_palindrome` of Python/10) when the reply repeats only the entry point."""
    try:
        tree = ast.parse(code)
        declared = ast.parse(declaration + "    pass\n")
    except SyntaxError:
        return code
    have_names = _top_level_names(tree)
    have_imports = {ast.unparse(node) for node in tree.body
                    if isinstance(node, (ast.Import, ast.ImportFrom))}
    missing = []
    for node in declared.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            break
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            needed = ast.unparse(node) not in have_imports
        else:
            needed = not (_top_level_names(ast.Module(body=[node], type_ignores=[])) <= have_names)
        if needed:
            segment = ast.get_source_segment(declaration + "    pass\n", node, padded=False)
            missing.append(segment or ast.unparse(node))
    if not missing:
        return code
    return "\n".join(missing) + "\n\n\n" + code


def _normalise_body(body: str) -> str:
    lines = [re.sub(r"^\t+", lambda m: "    " * len(m.group()), line)
             for line in body.strip("\n").splitlines()]
    if not lines:
        return ""
    first, rest = lines[0], lines[1:]
    if first[:1].isspace():
        # BigCode's stop rule: the body ends at the first unindented line.
        cut = next((i for i, line in enumerate(rest)
                    if line.strip() and not line[0].isspace()), None)
        if cut is not None:
            rest = rest[:cut]
    else:
        # The first line lost its indentation (copied from the middle of a function): give it
        # the depth at which the body parses, trying its child's depth less one level first.
        indents = [len(line) - len(line.lstrip()) for line in rest if line.strip()]
        if indents and min(indents) > 0:
            tries = [indents[0] - 4, indents[0] - 2, *sorted(set(indents))]
            for depth in (d for d in tries if d >= 0):
                body = textwrap.dedent("\n".join([" " * depth + first, *rest]))
                if _parses("def _():\n" + textwrap.indent(body, "    ")):
                    return body
    return textwrap.dedent("\n".join([first, *rest]))


def complete_body(body: str, base: str) -> str:
    """A reply holding only the function body is put after the prompt base (the declaration, or
    the docstring prompt), as BigCode's post-processing does with every generation."""
    return base + textwrap.indent(_normalise_body(body), "    ") + "\n"


def continued_code(continuation: str, base: str) -> str:
    """The program a completion model wrote, as BigCode's post-processing makes it
    (`remove_last_block`): the continuation cut at the first stop word, then before its first
    unindented line, after the prompt base whose last newline the prompt stripped."""
    text = cut_at_stop(continuation.rstrip(), STOP_WORDS)
    lines = text.split("\n")
    end = next((i for i, line in enumerate(lines) if line.strip() and line[0] not in " \t"),
               len(lines))
    return base.rstrip() + "\n".join(lines[:end])


def _function_key(code: str, name: str) -> str | None:
    """The entry point's parameters and statements, ignoring formatting and its docstring."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in reversed(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            return ast.dump(node.args) + "".join(ast.dump(s) for s in body)
    return None


def code_key(code: str) -> str:
    """Equal for programs that differ only in layout and comments: a repeated attempt."""
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError):
        return " ".join(code.split())


def _leading_statements(code: str) -> str:
    """The whole top-level statements `code` starts with, up to a line that does not parse
    (prose after the code, or a statement cut by the token limit)."""
    lines = code.splitlines()
    for end in range(len(lines), 0, -1):
        if end == len(lines) or (lines[end].strip() and not lines[end][0].isspace()):
            if _parses("\n".join(lines[:end])):
                return "\n".join(lines[:end])
    return ""


def only_tests(code: str, entry_point: str) -> bool:
    """Code that only exercises the function, never defines it: asserts, calls of it, of
    `check` or of print, test functions, a `__main__` block, maybe followed by prose or cut by
    the token limit. Small models echo the task's tests back this way; it is no fix, and no
    body of one."""
    if defines(code, entry_point):
        return False
    tree = ast.parse(_leading_statements(code))
    for node in tree.body:
        test_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            and _TEST_FUNCTIONS.match(node.name)
        call = isinstance(node, ast.Expr) and _calls_any(node, {entry_point, "check", "print"})
        main_guard = isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
        if not (isinstance(node, ast.Assert) or test_function or call or main_guard):
            return False
    return bool(tree.body)


def same_code(first: str, second: str) -> bool:
    """The two programs differ only in layout and comments (equal text needs no parsing)."""
    return first == second or code_key(first) == code_key(second)


def extract_code(reply: str, entry_point: str, base: str, buggy: str = "") -> str:
    """The candidate program in `reply`; `base` completes a reply that is only the body, and
    `buggy` (the task's buggy code) tells a quoted original from the fix. A reply whose code is
    only the tests echoed back gives `base` alone: it holds no code."""
    text = strip_thinking(reply)
    fenced = code_blocks(text)
    blocks = [b for b in fenced if not only_tests(b, entry_point)]
    defining = [_code_region(b, entry_point) for b in blocks if defines(b, entry_point)]
    if len(defining) == 1:
        code = defining[0]
    elif defining:
        buggy_key = _function_key(buggy, entry_point) if buggy else None
        changed = [b for b in defining if _function_key(b, entry_point) != buggy_key]
        code = (changed or defining)[-1]
    elif blocks:
        return complete_body(max(blocks, key=len), base)
    elif defines(text, entry_point):
        code = _code_region(text, entry_point)
    elif fenced or only_tests(text, entry_point):
        return base
    else:
        return complete_body(text, base)
    return with_declared_helpers(keep_definitions(code, entry_point), base, entry_point)
