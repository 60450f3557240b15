"""Where a test states an expected value: the `Site` the impossible variant changes (found by
python_sites.py in Python's syntax tree, by brace_sites.py in the other five's tokens). A site
is one assertion, run unconditionally, that every correct function passes: an equality of the
entry point's result with an expression holding a written value (its first literal changes,
literals.py); a tolerance, `abs(result - expected) < tol` (likewise, which moves it by more
than tol); or a truth test of the result (`assert f(x)`, `!f(x)`: the negation is added or
taken away)."""

from __future__ import annotations

from dataclasses import dataclass

# The widest tolerance a site may have: a value moved by one (a float's change) or by a third
# (the first literal of 2.0/3.0) is then well past it.
WIDEST_TOLERANCE = 0.01


@dataclass(frozen=True)
class Site:
    """A site in a test's text: the assertion (`start`:`end`, what the conflicting mutation
    copies), the edit inside it that changes its expected value (`edit_start`:`edit_end`
    becomes `replacement`), and what separates the assertion from its copy."""

    start: int
    end: int
    edit_start: int
    edit_end: int
    replacement: str
    separator: str
    line: int            # of the edit, 1-based, in the original test
    was: str             # the expected value's text, and what it becomes
    now: str
    # Whether the assertion may run twice: in Rust, a copy of one that hands the test's own
    # variable to the function would use it after the first had moved it, and not compile.
    copyable: bool = True

    def one_off(self, test: str) -> str:
        return test[:self.edit_start] + self.replacement + test[self.edit_end:]

    def conflicting(self, test: str) -> str:
        """The assertion, then a copy of it with the changed value."""
        copy = (test[self.start:self.edit_start] + self.replacement
                + test[self.edit_end:self.end])
        return test[:self.end] + self.separator + copy + test[self.end:]


@dataclass(frozen=True)
class Found:
    """What a test's reader found: its sites in source order, and how many assertions it read
    that run unconditionally, sites or not (none: every one is in a loop or a branch)."""

    sites: list[Site]
    assertions: int


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def indentation(text: str, offset: int) -> str:
    """The blanks that begin the line holding `offset`."""
    start = text.rfind("\n", 0, offset) + 1
    line = text[start:offset]
    return line[:len(line) - len(line.lstrip())]


def statement_separator(text: str, start: int) -> str:
    """What puts a copy of the statement at `start` on a line of its own, indented alike."""
    return "\n" + indentation(text, start)
