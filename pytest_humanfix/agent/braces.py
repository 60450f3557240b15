"""Code from replies in the brace languages (JS, Java, Go, C++, Rust), cut as BigCode's
`humanevalpack.py` cuts a generation: a continuation at the first stop word, then where the
braces the prompt base opened close again (`remove_last_block`; two for Java). A chat reply's
block is taken from its start to where the entry point's braces close, so example calls and a
`main` after it go; a block that is only the body is put after the prompt base.
See docs/languages.md#prompts-and-programs.
"""

from __future__ import annotations

import re

from ..languages.base import Language, declared_name
from ..models.base import cut_at_stop
from .extract import code_blocks, strip_thinking


def open_braces(language: Language) -> int:
    """How many braces BigCode's prompt base leaves open: the class and method in Java."""
    return 2 if language.name == "java" else 1


def remove_last_block(code: str, language: Language) -> str:
    """BigCode's `remove_last_block` for the brace languages, stop words included."""
    code = cut_at_stop(code, list(language.stop_words))
    depth = open_braces(language)
    for index, char in enumerate(code):
        depth += (char == "{") - (char == "}")
        if depth == 0:
            return code[:index + 1]
    if language.name == "java":
        main = code.find("public static void main")
        if main != -1:
            code = code[:main] + "}"
        if "}" in code:
            code = code[:code.rfind("}")] + "}"
        if code.count("{") - 1 == code.count("}"):
            code += "\n}"
    elif "}" in code:
        code = code[:code.rfind("}")] + "}"
    return code


def continued_code(continuation: str, base: str, language: Language) -> str:
    """The program a completion model wrote: BigCode's post-processing of a continuation."""
    return base.rstrip() + remove_last_block(continuation.rstrip(), language)


def declaration_pattern(entry_point: str) -> re.Pattern[str]:
    """A line that declares the entry point and opens its body (not a call: no `.` or `=`
    before the name): `fn f<'a>(...) -> T {`, `func F(...) T {`, `bool f(...){`,
    `public int f(...) {`, `function f(...) {`, or JavaScript's `const f = (...) => {`."""
    name = re.escape(entry_point)
    return re.compile(rf"^[^.=\n;]*\b{name}\s*(?:<[^>\n]*>)?\s*\([^;\n]*\)[^;\n]*\{{\s*$"
                      rf"|^\s*(?:const|let|var)\s+{name}\s*=[^\n]*\{{\s*$", re.MULTILINE)


# A top-level definition after the entry point: a helper function or type it uses (kept),
# unless it is a main or a test, which BigCode's brace rule drops with all after the entry point.
HELPER = re.compile(r"\s*(?:pub\s+)?(?:fn|func|function)\s+(\w+)"
                    r"|\s*(?:static\s+)?[\w:<>,*&\[\] ]+?[\s*&](\w+)\s*\([^;{]*\)\s*\{"
                    r"|\s*(?:#\[[^\]\n]*\]\s*)*(?:pub\s+)?(?:enum|struct|impl|trait)\s+(\w+)")


def _helpers_after(code: str, end: int) -> int:
    """The end of the helper functions that follow the entry point's definition."""
    while True:
        found = HELPER.match(code, end)
        name = found and (found.group(1) or found.group(2) or found.group(3))
        if not found or not name or name == "main" or name.startswith(("Test", "test")):
            return end
        end = _balanced_end(code, found.start())


def _balanced_end(code: str, start: int) -> int:
    """The index after the brace that closes the body opened at or after `start`: the last
    `{` of the first line from there that ends with one (Go's `interface{}{`)."""
    for line in re.finditer(r"[^\n]*", code[start:]):
        if line.group().rstrip().endswith("{"):
            start += line.start() + line.group().rstrip().rfind("{")
            break
    depth = 0
    for index in range(start, len(code)):
        if code[index] == "{":
            depth += 1
        elif code[index] == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(code)


def whole_function(block: str, entry_point: str, language: Language) -> str | None:
    """What the block defines up to the end of the entry point's definition and the helpers
    after it, None when it declares no entry point. Of several definitions (a reply that
    shows the buggy version, then the fix) the last is kept, after what precedes the first."""
    found = list(declaration_pattern(entry_point).finditer(block))
    if not found:
        return None
    first, last = found[0].start(), found[-1].start()
    if language.name == "java":  # the class that holds the method, from its line
        holders = [m.start() for m in re.finditer(r"^[ \t]*(?:public\s+)?class\s+\w+",
                                                  block[:last], re.MULTILINE)]
        if holders:
            first = last = holders[-1]
    end = _helpers_after(block, _balanced_end(block, last))
    return (block[:first] + block[last:end]).rstrip() + "\n"


def extract_braced(reply: str, entry_point: str, base: str, buggy: str,
                   language: Language) -> str:
    """The candidate program in a chat reply; `base` alone when it holds no code."""
    text = strip_thinking(reply)
    blocks = code_blocks(text, language.fence_tags) or [text]
    name = declared_name(base, entry_point)
    functions = [f for f in (whole_function(b, name, language) for b in blocks) if f]
    if functions:
        changed = [f for f in functions if " ".join(f.split()) != " ".join(buggy.split())]
        return (changed or functions)[-1]
    body = max(blocks, key=len)
    if body is text and not body.strip().endswith("}"):
        return base  # prose, no code
    return base.rstrip() + "\n" + remove_last_block(body.strip("\n"), language) + "\n"
