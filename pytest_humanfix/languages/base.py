"""What every language of HumanEvalPack knows, as BigCode's `humanevalpack.py` defines it: its
fence tag, stop words, time limit, prompt base and how a candidate becomes a program; and, for
the languages run by a toolchain, the commands and the Debian packages they come from
(docs/languages.md)."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Job, Limits
from ..sandbox.fresh import SAFE_ENV
from ..sandbox.toolchain import Step
from .reading import read

# The toolchain binaries are looked up where the sandbox's PATH looks (never a user's ~/.cargo).
SANDBOX_PATH = SAFE_ENV["PATH"]
# In every language: code that names the harness's own files and variables.
HARNESS_RULE = ("names the harness", r"(?i)humanfix\w*")
IDENTIFIER = r"[A-Za-z_$][\w$]*"


class Language:
    """One language; subclasses fill in the class attributes and override what differs."""

    name = ""           # the --humanfix-language value and the Hub config
    title = ""          # for people
    fence = ""          # the tag of a fenced code block
    fence_tags: tuple[str, ...] = ()  # the tags of a reply's blocks that may be this language
    timeout = 10.0      # BigCode's LANGUAGE_TO_TIMEOUT, seconds
    stop_words: tuple[str, ...] = ("<|endoftext|>",)
    # Where a continuation leaves the function (models/stopping): the braces the prompt base
    # opened closed again, as BigCode's `check_fn` counts them.
    function_end = "braces:1"
    source_name = ""    # the file the program is written to
    failure_pattern = r"error|Error|failed|FAIL"
    # Binaries the language needs, each with the Debian package that installs it.
    tools: tuple[tuple[str, str], ...] = ()
    # Tasks whose reference solution cannot pass on this machine's toolchain, or whose tests
    # cannot tell it from the buggy one, with why: counted apart, never scored.
    known_failures: dict[str, str] = {}
    # What `flags` looks for: (kind, pattern) pairs, and a pattern whose one group is a name
    # the code defines (a macro, a class), flagged where the tests use that name.
    flag_rules: tuple[tuple[str, str], ...] = ()
    definitions = ""

    def __repr__(self) -> str:
        return f"<language {self.name}>"

    def prompt_base(self, task: Task, variant: str) -> str:
        """BigCode's `get_prompt_base`: the declaration, or in the docs variant the prompt."""
        return task.prompt if variant == "docs" else task.declaration

    def job(self, code: str, tests: str, task: Task) -> Job:
        """What an execution of the candidate `code` (prompt base and body) against `tests`
        runs: the candidate's program and the tests' apart, each with its language's driver
        (docs/sandbox.md#the-tests-and-the-candidate-apart). Every language has its own."""
        raise NotImplementedError(f"the {self.title} language defines no job")

    def program(self, code: str, tests: str, task: Task) -> str:
        """The one source BigCode runs for a candidate `code` (prompt base and body) and
        `tests`, for benchmarks that compare with BigCode; the harness runs each apart (`job`)."""
        return self.assemble(code, task) + "\n\n" + tests + "\n"

    def assemble(self, code: str, task: Task) -> str:
        """BigCode's per-language changes to a generation before the tests are appended."""
        return code

    def flags(self, code: str, tests: str) -> list[str]:
        """How a candidate `code` that passed may have got around `tests`: an exit, a
        redefined assert, a look at the environment the harness sets, a way around the test
        framework, a name it computes; read from the text as written, comments and strings
        included, and from the text as the syntax tree normalises it (reading.py, where
        tree-sitter's grammar is installed), once each
        (docs/trust.md#fixes-that-defeat-the-tests-are-flagged)."""
        reading = read(self.name, code)
        found: list[str] = []
        for text in [code] + ([reading.text] if reading.text not in ("", code) else []):
            # One flag a place: a catch-all rule (any mention of process) stays silent where
            # an earlier, more telling rule (process.exit) already spoke.
            taken: list[tuple[int, int]] = []
            for kind, pattern in (*self.flag_rules, HARNESS_RULE):
                spans = [m.span() for m in re.finditer(pattern, text)]
                found.extend(f"{kind}: {' '.join(text[start:end].split())}"
                             for start, end in spans
                             if not any(start < stop and begin < end for begin, stop in taken))
                taken.extend(spans)
        found.extend(reading.flags)
        used = set(re.findall(IDENTIFIER, tests))
        for name in re.findall(self.definitions, code) if self.definitions else ():
            if "assert" in name.lower() or name == "NDEBUG":
                found.append(f"redefined assert: {name}")
            elif name in used:
                found.append(f"redefines what the tests use: {name}")
        return list(dict.fromkeys(found))

    def missing(self) -> list[str]:
        """One line per missing toolchain binary, naming the Debian package that installs it."""
        return [f"{binary} not found (Debian: apt-get install {package})"
                for binary, package in self.tools if which(binary) is None]

    # The sandbox's side (sandbox.toolchain.Toolchain); Python runs without these.
    def steps(self, cache: Path, role: str) -> list[Step]:
        return []

    def env(self, box: str, cache: Path) -> dict[str, str]:
        return {}

    def limits(self, limits: Limits) -> Limits:
        return limits

    def warm(self, cache: Path) -> None:
        """Nothing to build ahead for most languages."""

    def prepare(self, box: Path, cache: Path) -> None:
        """Nothing per execution for most languages."""

    def built(self, files: dict[str, str], cache: Path) -> list[Step] | None:
        """Most languages build the tests' program in the tests' process."""
        return None


def declared_name(base: str, entry_point: str) -> str:
    """The entry point's name as the prompt base declares it on its last line: a few rows'
    `entry_point` names something else (JavaScript/114 declares minSubArraySum, Java/99
    countUpper, Rust/61 correct_bracketing_parenthesis), and the tests call what is declared."""
    lines = [line for line in base.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    found = re.match(r"\s*(?:const|let|var)\s+(\w+)", last) or \
        re.search(r"(\w+)\s*(?:<[^>()]*>)?\s*\(", last)
    return found.group(1) if found else entry_point


def split_top(text: str, brackets: str) -> list[str]:
    """`text` cut at the commas outside the pairs of `brackets` (each opening character followed
    by its closing one, as "<>()"), each piece stripped and the empty ones dropped: the
    parameters of a declaration whose types hold commas (C++'s and Java's `map<string,string>`,
    Go's `func(int, int) bool`)."""
    opening, closing = brackets[0::2], brackets[1::2]
    pieces, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += (char in opening) - (char in closing)
        if char == "," and depth == 0:
            pieces.append(text[start:index])
            start = index + 1
    pieces.append(text[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


def which(binary: str) -> str | None:
    return shutil.which(binary, path=SANDBOX_PATH)


def tool(binary: str) -> str:
    """The absolute path of a toolchain binary (the name itself when missing, so the command
    fails inside the sandbox with the shell's 'not found')."""
    return which(binary) or binary


def threads_allowed(limits: Limits, processes: int) -> Limits:
    """A compiler and a JVM run many threads, and each counts against the cgroup's pids."""
    return replace(limits, processes=max(limits.processes, processes))
