"""What every language of HumanEvalPack knows, as BigCode's `humanevalpack.py` defines it: its
fence tag, stop words, time limit, prompt base and how a candidate becomes a program; and, for
the languages run by a toolchain, the commands and the Debian packages they come from
(docs/languages.md)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Limits
from ..sandbox.fresh import SAFE_ENV
from ..sandbox.toolchain import Step

# The toolchain binaries are looked up where the sandbox's PATH looks (never a user's ~/.cargo).
SANDBOX_PATH = SAFE_ENV["PATH"]


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

    def __repr__(self) -> str:
        return f"<language {self.name}>"

    def prompt_base(self, task: Task, variant: str) -> str:
        """BigCode's `get_prompt_base`: the declaration, or in the docs variant the prompt."""
        return task.prompt if variant == "docs" else task.declaration

    def program(self, code: str, tests: str, task: Task) -> str:
        """The source BigCode runs for a candidate `code` (prompt base and body) and `tests`."""
        return self.assemble(code, task) + "\n\n" + tests + "\n"

    def assemble(self, code: str, task: Task) -> str:
        """BigCode's per-language changes to a generation before the tests are appended."""
        return code

    def missing(self) -> list[str]:
        """One line per missing toolchain binary, naming the Debian package that installs it."""
        return [f"{binary} not found (Debian: apt-get install {package})"
                for binary, package in self.tools if which(binary) is None]

    # The sandbox's side (sandbox.toolchain.Toolchain); Python runs without these.
    def steps(self, cache: Path) -> list[Step]:
        return []

    def env(self, box: str, cache: Path) -> dict[str, str]:
        return {}

    def limits(self, limits: Limits) -> Limits:
        return limits

    def warm(self, cache: Path) -> None:
        """Nothing to build ahead for most languages."""

    def prepare(self, box: Path, cache: Path) -> None:
        """Nothing per execution for most languages."""


def which(binary: str) -> str | None:
    return shutil.which(binary, path=SANDBOX_PATH)


def tool(binary: str) -> str:
    """The absolute path of a toolchain binary (the name itself when missing, so the command
    fails inside the sandbox with the shell's 'not found')."""
    return which(binary) or binary


def threads_allowed(limits: Limits, processes: int) -> Limits:
    """A compiler and a JVM run many threads, and each counts against the cgroup's pids."""
    return replace(limits, processes=max(limits.processes, processes))
