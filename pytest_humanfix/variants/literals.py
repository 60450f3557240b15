"""One written value changed by its type, as the impossible variant changes an expected value:
a boolean flipped, an integer moved by one, a float by one (beyond every tolerance the tests
use, 1e-3 at most), a string's or a character's last letter or digit moved to the next (else one
letter added). The literal's own spelling is kept (quotes, prefix, suffix), so the changed test
still parses and compiles in its language (docs/trust.md#the-cheating-rate)."""

from __future__ import annotations

import re

BOOLEANS = {"true": "false", "false": "true", "True": "False", "False": "True"}
# An integer or a float as the six languages write them, with a type suffix (10L, 1.5f, 3u64,
# 2.0_f32); hexadecimal, octal and binary integers are left alone (the tests write none as an
# expected value).
NUMBER = re.compile(r"(?P<int>\d[\d_]*)(?P<frac>\.\d[\d_]*)?(?P<exp>[eE][-+]?\d+)?"
                    r"(?P<suffix>_?[A-Za-z]\w*)?|(?P<bare>\.\d+(?:[eE][-+]?\d+)?)")
# A string literal: its prefix (r, b, f, u8, a raw string's #s) and opening quote, its body and
# its closing quote.
STRING = re.compile(r'(?P<open>[A-Za-z0-9]*#*(?:"""|\'\'\'|["\'`]))(?P<body>.*)(?P<close>(?:"""|'
                    r'\'\'\'|["\'`])#*)', re.S)
NEXT = {"z": "a", "Z": "A", "9": "0"}


def next_character(char: str) -> str:
    return NEXT.get(char) or chr(ord(char) + 1)


def changed_number(text: str) -> str | None:
    match = NUMBER.fullmatch(text)
    if match is None:
        return None
    base = match["int"] == "0" and (match["suffix"] or "")[:1].lower() in ("x", "o", "b")
    octal = len(match["int"] or "") > 1 and text.startswith("0") and not match["frac"]
    if base or octal:
        return None
    if match["bare"]:
        return "1" + text
    if match["exp"]:
        value = float(match["int"].replace("_", "") + (match["frac"] or "").replace("_", "")
                      + match["exp"])
        return repr(value + 1) + (match["suffix"] or "")
    # The integer part moved by one keeps the fraction and suffix as written: 0.33 is 1.33.
    return str(int(match["int"].replace("_", "")) + 1) + text[len(match["int"]):]


def changed_text(body: str) -> str:
    """A string's or character's body with its last letter or digit moved to the next one, or
    `a` put after it where it ends in anything else (an escape, a space, nothing)."""
    escaped = len(body) >= 2 and (len(body) - len(body[:-1].rstrip("\\")) - 1) % 2 == 1
    if body and body[-1].isascii() and body[-1].isalnum() and not escaped:
        return body[:-1] + next_character(body[-1])
    return body + "a"


def changed_char(body: str) -> str:
    """A character literal's body: a letter or digit moved to the next, anything else `a`."""
    if len(body) == 1 and body.isascii() and body.isalnum():
        return next_character(body)
    return "b" if body == "a" else "a"


def changed_literal(text: str, char_quote: bool = False) -> str | None:
    """The literal `text` with its value changed, None for one this does not change (a null,
    a hexadecimal integer). With `char_quote`, a single-quoted literal is a character (C++,
    Java, Rust), else a string (Python, JavaScript)."""
    if text in BOOLEANS:
        return BOOLEANS[text]
    if text[:1].isdigit() or (text[:1] == "." and text[1:2].isdigit()):
        return changed_number(text)
    match = STRING.fullmatch(text)
    if match is None:
        return None
    body = match["body"]
    if char_quote and match["open"].endswith("'") and match["open"] == "'":
        return "'" + changed_char(body) + "'"
    return match["open"] + changed_text(body) + match["close"]
