"""The sites of a JavaScript, Java, Go, C++ or Rust test (sites.py says what a site is), read
from its tokens: no grammar is needed, since HumanEvalPack writes each language's assertions one
way (`console.assert(...)`, the elements of Java's `correct = Arrays.asList(...)`,
`assert.Equal(expected, actual)`, `assert (...)`, `assert!`/`assert_eq!`). An assertion in a
loop, a branch or a nested block that is not a function's body is no site."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .literals import changed_literal
from .sites import WIDEST_TOLERANCE, Found, Site, line_of, statement_separator

# A character literal is one character or one escape (a Rust lifetime, `'a`, is none); in
# JavaScript single quotes hold a string.
CHARACTER = r"b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'"
SINGLE_QUOTED_STRING = r"'(?:\\.|[^'\\\n])*'"
TOKEN = r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>b?r(?P<hashes>\#*)".*?"(?P=hashes)|b?"(?:\\.|[^"\\])*"|`[^`]*`{strings})
  | (?P<quoted>{characters})
  | (?P<number>\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][-+]?\d+)?(?:_?[A-Za-z]\w*)?|\.\d+(?:[eE][-+]?\d+)?)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<punct>===|!==|==|!=|<=|>=|&&|\|\||::|->|=>|\.\.|\S)
"""
TOKENS = {quotes: re.compile(TOKEN.format(
    strings="|" + SINGLE_QUOTED_STRING if quotes == "string" else "",
    characters=CHARACTER if quotes == "character" else "(?!)"), re.S | re.X)
    for quotes in ("string", "character")}
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {closer: opener for opener, closer in OPENERS.items()}
# What opens a block that may run its assertions never, or more than once.
CONTROL = frozenset({"for", "while", "if", "else", "do", "switch", "loop", "match", "try",
                     "catch", "foreach"})
BOOLEANS = frozenset({"true", "false"})
EQUALITIES = frozenset({"==", "==="})
# Binary operators: a truth test's operand holds none at its top level.
OPERATORS = frozenset({"==", "===", "!=", "!==", "<", ">", "<=", ">=", "&&", "||", "+", "-",
                       "*", "/", "%", "&", "|", "^", "?", "=", "and", "or"})
# Calls that compare their two arguments, or their receiver with their argument.
EQUALITY_CALLS = frozenset({"equals", "issame"})
ABS_CALLS = frozenset({"abs", "fabs", "Abs"})
# Words before a function's name that take arguments themselves.
KEYWORDS = frozenset({"function", "func", "fn"})


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int


def tokens(text: str, quotes: str = "character") -> list[Token]:
    """The tokens of `text`, comments and blanks left out; single `quotes` hold a `character`
    or (JavaScript) a `string`."""
    found = []
    for match in TOKENS[quotes].finditer(text):
        kind = "string" if match["string"] is not None else match.lastgroup or "comment"
        if kind != "comment":
            found.append(Token(kind, match.group(0), match.start(), match.end()))
    return found


class Tokens:
    """A test's tokens with their brackets matched."""

    def __init__(self, text: str, quotes: str = "character") -> None:
        self.text = text
        self.items = tokens(text, quotes)
        self.match: dict[int, int] = {}
        self.enclosing: list[int | None] = []  # each token's innermost open `{`
        stack: list[int] = []
        for index, token in enumerate(self.items):
            braces = [i for i in stack if self.items[i].text == "{"]
            self.enclosing.append(braces[-1] if braces else None)
            if token.text in OPENERS:
                stack.append(index)
            elif token.text in CLOSERS and stack \
                    and self.items[stack[-1]].text == CLOSERS[token.text]:
                opener = stack.pop()
                self.match[opener], self.match[index] = index, opener

    def text_of(self, index: int) -> str:
        return self.items[index].text if 0 <= index < len(self.items) else ""

    def first_on_line(self, index: int) -> bool:
        start = self.items[index].start
        return not self.text[self.text.rfind("\n", 0, start) + 1:start].strip()

    def header_words(self, index: int) -> set[str]:
        """The words of what comes before token `index` in its statement, bracketed groups
        skipped: back to a brace, or to the first token of a line."""
        words = set()
        at = index - 1
        while at >= 0 and self.items[at].text not in ("{", "}"):
            if self.items[at].text in (")", "]") and at in self.match:
                at = self.match[at]
            if self.items[at].kind == "ident":
                words.add(self.items[at].text)
            if self.first_on_line(at):
                break
            at -= 1
        return words

    def unconditional(self, index: int) -> bool:
        """Token `index` runs once whenever its function runs: no loop or branch holds it,
        in braces or as a braceless body."""
        before = index - 1
        if self.text_of(before) in ("else", "do") or (
                self.text_of(before) == ")" and before in self.match
                and self.text_of(self.match[before] - 1) in CONTROL):
            return False
        brace = self.enclosing[index]
        while brace is not None:
            if self.header_words(brace) & CONTROL:
                return False
            brace = self.enclosing[brace]
        return True

    def top_level(self, first: int, last: int) -> Iterator[int]:
        """The indexes of the tokens in first..last outside any bracketed group inside."""
        at = first
        while at <= last:
            yield at
            at = self.match[at] + 1 if self.text_of(at) in OPENERS and at in self.match \
                else at + 1


Span = tuple[int, int]  # first and last token, inclusive


class Reader:
    """Finds the sites of one test."""

    def __init__(self, text: str, entry_point: str, language: str) -> None:
        self.char_quote = language != "js"
        self.tokens = Tokens(text, "character" if self.char_quote else "string")
        self.entry_point = entry_point
        # Rust's variables, which a call may move: `let x`, `let mut x`.
        items = self.tokens.items
        self.bound = {items[at + 1 + (items[at + 1].text == "mut")].text
                      for at in range(len(items) - 2)
                      if language == "rust" and items[at].text == "let"}

    # What an expression is made of.
    def calls(self, span: Span) -> bool:
        items = self.tokens.items
        return any(items[i].text == self.entry_point and self.tokens.text_of(i + 1) == "("
                   for i in range(span[0], span[1] + 1))

    def stripped(self, span: Span) -> Span:
        first, last = span
        while self.tokens.text_of(first) == "(" and self.tokens.match.get(first) == last:
            first, last = first + 1, last - 1
        return first, last

    def split(self, span: Span, separators: frozenset[str]) -> list[Span]:
        parts, start = [], span[0]
        for at in self.tokens.top_level(*span):
            if self.tokens.text_of(at) in separators:
                parts.append((start, at - 1))
                start = at + 1
        return [*parts, (start, span[1])]

    def arguments(self, opener: int) -> list[Span]:
        closer = self.tokens.match[opener]
        return [] if closer == opener + 1 else self.split((opener + 1, closer - 1),
                                                           frozenset({","}))

    def tolerance(self, span: Span) -> tuple[Span, Span] | None:
        """The sides of `abs(a - b) < tol` (`(a - b).abs() < tol` in Rust)."""
        parts = self.split(span, frozenset({"<", "<="}))
        if len(parts) != 2 or parts[1][0] != parts[1][1]:
            return None
        bound = self.tokens.items[parts[1][0]]
        try:
            if bound.kind != "number" or not 0 < float(bound.text) <= WIDEST_TOLERANCE:
                return None
        except ValueError:
            return None
        first, last = self.stripped(parts[0])
        text = self.tokens.text_of
        if text(last) == ")" and text(last - 1) == "(" and text(last - 2) in ABS_CALLS \
                and text(last - 3) == ".":
            inner = self.stripped((first, last - 4))
        elif text(last) == ")" and text(self.tokens.match.get(last, -1) - 1) in ABS_CALLS:
            inner = (self.tokens.match[last] + 1, last - 1)
        else:
            return None
        minus = [at for at in self.tokens.top_level(*inner) if text(at) == "-"
                 and self.tokens.items[at - 1].kind in ("ident", "number", "punct")
                 and text(at - 1) not in OPERATORS | {"(", ","}]
        if not minus:
            return None
        return (inner[0], minus[0] - 1), (minus[0] + 1, inner[1])

    def sides(self, span: Span) -> tuple[Span, Span] | None:
        """The two sides an assertion's expression compares, if it compares two."""
        first, last = span = self.stripped(span)
        parts = self.split(span, EQUALITIES)
        if len(parts) == 2:
            return parts[0], parts[1]
        text = self.tokens.text_of
        if text(last) == ")" and last in self.tokens.match:
            opener = self.tokens.match[last]
            called = text(opener - 1)
            arguments = self.arguments(opener)
            if called in EQUALITY_CALLS:
                if len(arguments) == 2:
                    return arguments[0], arguments[1]
                if len(arguments) == 1 and text(opener - 2) == "." and opener - 3 >= first:
                    return (first, opener - 3), arguments[0]
        return self.tolerance(span)

    def chain(self, span: Span) -> bool:
        """A call chain of the result alone (`s.f(x).get()`), no operator at its top level."""
        return self.calls(span) and not any(
            self.tokens.text_of(at) in OPERATORS for at in self.tokens.top_level(*span))

    def discarded(self, span: Span) -> set[int]:
        """The tokens whose value the comma operator throws away: `(1, 0)` in JavaScript or
        C++ is 0, so a bracket that calls nothing keeps its last part only."""
        text, found = self.tokens.text_of, set[int]()
        for at in range(span[0], span[1] + 1):
            before = self.tokens.items[at - 1] if at else None
            if text(at) != "(" or at not in self.tokens.match or (
                    before is not None and (before.kind == "ident"
                                            or before.text in (">", "]", ")", "!"))):
                continue
            commas = [i for i in self.tokens.top_level(at + 1, self.tokens.match[at] - 1)
                      if text(i) == ","]
            if commas:
                found.update(range(at + 1, commas[-1] + 1))
        return found

    # The site itself.
    def site(self, statement: Span, expression: Span, compared: tuple[Span, Span] | None,
             separator: str) -> Site | None:
        items, text = self.tokens.items, self.tokens.text
        start, end = items[statement[0]].start, items[statement[1]].end
        if compared is None:
            first, last = expression = self.stripped(expression)
            negated = self.tokens.text_of(first) in ("!", "not")
            operand = (first + 1, last) if negated else expression
            if not self.chain(operand):
                return None
            was = text[items[first].start:items[last].end]
            edit = items[first]
            if negated:
                return Site(start, end, edit.start, items[first + 1].start, "", separator,
                            line_of(text, edit.start), was, text[items[first + 1].start:
                                                                 items[last].end])
            return Site(start, end, edit.start, edit.start, "!", separator,
                        line_of(text, edit.start), was, "!" + was)
        with_call = [side for side in compared if self.calls(side)]
        if len(with_call) != 1:
            return None
        expected = compared[1] if with_call[0] == compared[0] else compared[0]
        discarded = self.discarded(expected)
        for at in range(expected[0], expected[1] + 1):
            token = items[at]
            literal = token.kind in ("number", "string", "quoted") or (
                token.kind == "ident" and token.text in BOOLEANS)
            # A map's key is no value to change: Go refuses a literal with a key twice.
            if not literal or at in discarded or self.tokens.text_of(at + 1) == ":":
                continue
            now = changed_literal(token.text, char_quote=self.char_quote)
            if now is None:
                return None
            return Site(start, end, token.start, token.end, now, separator,
                        line_of(text, token.start), token.text, now)
        return None

    def statement(self, head: int, opener: int) -> Span:
        """An assertion from its first token to its closing bracket, and the `;` after it."""
        closer = self.tokens.match[opener]
        return head, closer + 1 if self.tokens.text_of(closer + 1) == ";" else closer

    def assertion(self, at: int) -> tuple[int, bool] | None:
        """Where the assertion that token `at` begins opens its arguments, and whether they are
        a pair (expected and actual, either way round) rather than one expression."""
        words = tuple(self.tokens.text_of(i) for i in range(at, at + 4))
        if words == ("console", ".", "assert", "("):
            return at + 3, False
        if words == ("assert", ".", "Equal", "("):
            return at + 3, True
        if words[1:3] == ("!", "(") and words[0] in ("assert", "assert_eq"):
            return at + 2, words[0] == "assert_eq"
        if words[:2] == ("assert", "(") and self.tokens.text_of(at - 1) != ".":
            return at + 1, False
        return None

    def sites(self) -> Found:
        text, items = self.tokens.text_of, self.tokens.items
        found: list[Site] = []
        assertions = 0
        for at, token in enumerate(items):
            if token.kind != "ident" or not self.tokens.unconditional(at):
                continue
            if (token.text, text(at + 1), text(at + 2), text(at + 3), text(at + 4)) == (
                    "correct", "=", "Arrays", ".", "asList"):
                elements = self.elements(at + 5)
                assertions += len(elements)
                found += [site for site in elements if site is not None]
                continue
            head = self.assertion(at)
            if head is None or head[0] not in self.tokens.match:
                continue
            assertions += 1
            opener, pair = head
            statement = self.statement(at, opener)
            separator = statement_separator(self.tokens.text, token.start)
            arguments = self.arguments(opener)
            site = None
            if pair and len(arguments) >= 2:
                site = self.site(statement, statement, (arguments[0], arguments[1]), separator)
            elif not pair and arguments:
                site = self.site(statement, arguments[0], self.sides(arguments[0]), separator)
            if site is not None:
                used = {items[i].text for i in range(statement[0], statement[1] + 1)}
                found.append(dataclasses.replace(site, copyable=not used & self.bound))
        return Found(found, assertions)

    def elements(self, opener: int) -> list[Site | None]:
        """Java's `correct` list: each element is an assertion, and its copy another element."""
        if self.tokens.text_of(opener) != "(" or opener not in self.tokens.match:
            return []
        sites = []
        for element in self.arguments(opener):
            start = self.tokens.items[element[0]].start
            separator = ("," + statement_separator(self.tokens.text, start)
                         if self.tokens.first_on_line(element[0]) else ", ")
            sites.append(self.site(element, element, self.sides(element), separator))
        return sites


def defined_name(declaration: str) -> str | None:
    """The function a declaration ends by opening (HumanEvalPack's `entry_point` field names
    another in some tasks: CPP/121's `solution` declares `solutions`), from the line of its
    last `{`: the name after `fn`, `func` or `function`, else the first one called, else
    (a JavaScript arrow function) the one assigned."""
    found = Tokens(declaration)
    braces = [at for at, token in enumerate(found.items) if token.text == "{"]
    if not braces:
        return None
    at = braces[-1] - 1 if found.first_on_line(braces[-1]) and braces[-1] else braces[-1]
    while at > 0 and not found.first_on_line(at):
        at -= 1
    header = found.items[at:braces[-1]]
    pairs = list(zip(header, header[1:], strict=False))
    named = [after.text for before, after in pairs
             if before.text in KEYWORDS and after.kind == "ident"]
    called = [before.text for before, after in pairs
              if before.kind == "ident" and before.text not in KEYWORDS and after.text == "("]
    assigned = [before.text for before, after in pairs
                if before.kind == "ident" and after.text == "="]
    return next(iter(named + called + assigned), None)


def brace_sites(text: str, declaration: str, language: str) -> Found:
    """The sites of a test whose assertions call the function `declaration` declares."""
    name = defined_name(declaration)
    return Reader(text, name, language).sites() if name else Found([], 0)
