"""Code from replies in the languages whose blocks are braces (JS, Java, Go, C++, Rust), as
BigCode's `humanevalpack.py` post-processes a generation: the continuation of the prompt base
is cut at the first stop word, then where the braces the prompt base opened are closed again
(`remove_last_block`; two for Java, whose prompt base opens the class and the method).

A chat model answers with a fenced block instead of continuing the prompt base: a block that
declares the entry point is taken from its start (imports, helpers) to where the entry point's
braces close (the class's, in Java), so example calls and a `main` after it are dropped as
BigCode's brace rule drops them; a block that is only the body is put after the prompt base.
"""

from __future__ import annotations

import re

from ..languages.base import Language
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
    """A line that declares the entry point (not a call: no `.` or `=` before the name):
    `fn f(...) -> T {`, `func F(...) T {`, `bool f(...){`, `public int f(...) {`,
    `function f(...) {`, or JavaScript's `const f = (...) => {`."""
    name = re.escape(entry_point)
    return re.compile(rf"^[^.=\n;]*\b{name}\s*\([^;\n]*$|^\s*(const|let|var)\s+{name}\s*=",
                      re.MULTILINE)


def _balanced_end(code: str, start: int) -> int:
    """The index after the brace that closes the first one at or after `start`."""
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
    """The block from its start to the end of the entry point's definition, None when it
    declares no entry point."""
    found = declaration_pattern(entry_point).search(block)
    if found is None:
        return None
    start = found.start()
    if language.name == "java":
        holder = block.rfind("class ", 0, start)
        start = holder if holder != -1 else start
    return block[:_balanced_end(block, start)].rstrip() + "\n"


def extract_braced(reply: str, entry_point: str, base: str, buggy: str,
                   language: Language) -> str:
    """The candidate program in a chat reply; `base` alone when it holds no code."""
    text = strip_thinking(reply)
    blocks = code_blocks(text, language.fence_tags) or [text]
    functions = [f for f in (whole_function(b, entry_point, language) for b in blocks) if f]
    if functions:
        changed = [f for f in functions if " ".join(f.split()) != " ".join(buggy.split())]
        return (changed or functions)[-1]
    body = max(blocks, key=len)
    if body is text and not body.strip().endswith("}"):
        return base  # prose, no code
    return base.rstrip() + "\n" + remove_last_block(body.strip("\n"), language) + "\n"
