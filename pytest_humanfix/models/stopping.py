"""Where a completion ends, as BigCode's harness ends it (`check_fn`: a stop word, or the
function left), for every engine alike. A rule is a short string ("indent", "braces:N") that
crosses into our llama.cpp engine's requests. Only the standard library here: the engine's
process imports this module. See docs/models.md, "Where a reply ends".
"""

from __future__ import annotations

import codecs
import string
from collections.abc import Sequence

INDENT = "indent"
BRACES = "braces:"
# What starts a line that leaves a Python function, as stop strings for a server that matches
# only strings (vLLM): a newline, then any printable character but whitespace.
LINE_STARTS = tuple(c for c in string.printable if c not in string.whitespace)


def valid_rule(rule: str) -> bool:
    if rule == INDENT:
        return True
    count = rule.removeprefix(BRACES)
    return rule.startswith(BRACES) and count.isdigit() and int(count) >= 1


def function_end(text: str, rule: str) -> int | None:
    """Where `text`, a continuation, has left the function under `rule`, None while it has not.

    "indent": the continuation ends before the newline that starts the first non-empty line
    beginning with neither a space nor a tab (at 0 when the first line is one), where BigCode's
    `remove_last_block` cuts. "braces:N": once the continuation holds N more `}` than `{` (the
    condition of `check_fn`), it ends after the `}` where the count first reaches zero, where
    `remove_last_block` cuts.
    """
    if rule == INDENT:
        start = 0
        for line in text.split("\n"):
            if line.strip() and line[0] not in " \t":
                return max(start - 1, 0)
            start += len(line) + 1
        return None
    if not valid_rule(rule):
        raise ValueError(f"no such rule for a function's end: {rule!r} (indent or braces:N)")
    depth = int(rule.removeprefix(BRACES))
    if text.count("{") + depth != text.count("}"):
        return None
    for index, char in enumerate(text):
        depth += (char == "{") - (char == "}")
        if depth == 0:
            return index + 1
    return None  # unreachable: the counts say the depth reaches zero


def stop_point(text: str, stop: Sequence[str], rule: str | None = None) -> int | None:
    """Where a completion ends: before the first stop word, or where it left the function
    under `rule`, whichever comes first; None while it goes on (`check_fn` is false)."""
    cuts = [index for index in (text.find(word) for word in stop if word) if index != -1]
    end = function_end(text, rule) if rule else None
    if end is not None:
        cuts.append(end)
    return min(cuts, default=None)


class StopScanner:
    """`stop_point(...) is not None` on a reply fed a piece at a time, at a cost bounded by the
    piece: the text decoded so far is only ever appended to, and each check looks only where a
    new stop could be (a stop word ending in the new piece; for "indent", the lines the piece
    completed or began; for "braces:N", the piece's braces on a running depth). Checking the
    whole text at every token was quadratic in the reply's length.

    Fed bytes (a token's piece may end inside a UTF-8 character): the text is what
    `bytes.decode("utf-8", errors="ignore")` gives for all the bytes fed so far.
    """

    def __init__(self, stop: Sequence[str], rule: str | None = None) -> None:
        if rule is not None and not valid_rule(rule):
            raise ValueError(f"no such rule for a function's end: {rule!r} (indent or braces:N)")
        self.stop = [word for word in stop if word]
        self.reach = max((len(word) for word in self.stop), default=0)
        self.rule = rule
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.text = ""
        self.line_start = 0  # "indent": where the first line not yet passed over starts
        # "braces:N": the depth after the text so far; `function_end` has a point once it is 0.
        self.depth = int(rule.removeprefix(BRACES)) if rule and rule != INDENT else 0

    def feed(self, piece: bytes) -> bool:
        """Adds `piece`; True once the text so far has a stop point."""
        old = len(self.text)
        self.text += self.decoder.decode(piece)
        if self.reach and any(word in self.text[max(old - self.reach + 1, 0):]
                              for word in self.stop):
            return True
        if self.rule == INDENT:
            return self.left_by_indent()
        if self.rule:
            added = self.text[old:]
            self.depth += added.count("{") - added.count("}")
            return self.depth == 0
        return False

    def left_by_indent(self) -> bool:
        """A line leaves the function once it holds something and starts with neither a space
        nor a tab (`function_end`); a finished line that has not left never will."""
        while True:
            end = self.text.find("\n", self.line_start)
            line = self.text[self.line_start:] if end == -1 else self.text[self.line_start:end]
            if line.strip() and line[0] not in " \t":
                return True
            if end == -1:
                return False
            self.line_start = end + 1


def function_end_stops(rule: str | None) -> list[str]:
    """The rule as stop strings, for a server that can only match strings (vLLM): the Python
    rule is a newline followed by any printable character but whitespace (a first line that is
    itself unindented, or one that starts with another character, runs on and is cut after the
    reply); the brace rule counts, which no stop string can, so it gives none."""
    return ["\n" + c for c in LINE_STARTS] if rule == INDENT else []
