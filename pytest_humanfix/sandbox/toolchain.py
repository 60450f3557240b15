"""Executions of a language that is compiled, or run by another interpreter than ours (JS,
Java, Go, C++, Rust): the same fresh path, layer, limits, cgroup and verdict as a Python
candidate, but the program inside the layer is `inside/toolchain.py`, which runs the language's
steps (compile, then run) on the source file. Compile caches are per worker and built once
from fixed code; executions read them (`readable`) or copy one they must write (Go's), so no
candidate writes into what another reads. A pass needs the proof that the tests finished
(docs/sandbox.md#the-proof-that-the-tests-ran, docs/languages.md#execution).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .cgroup import Cgroup
from .environment import Layer, Limits, SandboxError
from .fresh import Execution, FreshSandbox, temp_folder
from .inside import source

PLAN_NAME = "humanfix-plan.json"
# The proof that a program's tests ran to their end: after the last check, the test driver
# each language adds (`languages`) writes the secret it finds in this variable, which only the
# run step's environment holds, to this file of its working folder; `inside/toolchain.py`
# makes the secret per execution and checks the file.
FINISHED_VARIABLE = "HUMANFIX_FINISHED"
FINISHED_NAME = ".humanfix-finished"


@dataclass(frozen=True)
class Step:
    """One command of an execution, run in the box: `kind` is compile or run; a `silent` step
    fails when it writes any output."""

    argv: tuple[str, ...]
    kind: str
    silent: bool = False


class Toolchain(Protocol):
    """What a language tells the sandbox (implemented in `pytest_humanfix.languages`)."""

    name: str
    source_name: str  # the file the program is written to, in the box
    failure_pattern: str  # a regular expression for the most telling line of a failure

    def steps(self, cache: Path) -> list[Step]: ...

    def env(self, box: str, cache: Path) -> dict[str, str]: ...

    def limits(self, limits: Limits) -> Limits: ...

    def warm(self, cache: Path) -> None:
        """Build the worker's caches in `cache` (harness code, before any candidate)."""

    def prepare(self, box: Path, cache: Path) -> None:
        """Put in the box what one execution needs of the caches (its own copy)."""


class ToolchainSandbox(FreshSandbox):
    """A fresh execution per program, run by the toolchain's steps; see the module docstring."""

    executor = "fresh"

    def __init__(self, layer: Layer, toolchain: Toolchain, limits: Limits | None = None,
                 cgroups: Cgroup | None = None, python: str = sys.executable) -> None:
        super().__init__(layer, toolchain.limits(limits or Limits()), cgroups, python)
        self.toolchain = toolchain
        self.cache = temp_folder(f"cache-{toolchain.name}")
        self.readable = (self.cache,)
        self.warmed = False

    def start(self) -> None:
        """Builds the worker's caches, once, before the first execution's clock starts."""
        if self.warmed:
            return
        try:
            self.toolchain.warm(self.cache)
        except Exception as exc:
            detail = getattr(exc, "stderr", b"") or b""
            raise SandboxError(f"cannot build the {self.toolchain.name} compile cache: {exc} "
                               f"{detail.decode(errors='replace')[-500:]}".strip()) from exc
        self.warmed = True

    def prepare(self, execution: Execution, program: str) -> None:
        self.start()
        execution.prepare(source("toolchain.py"))
        box = execution.box
        (box / self.toolchain.source_name).write_text(program, encoding="utf-8")
        plan = {"steps": [{"argv": list(step.argv), "kind": step.kind, "silent": step.silent}
                          for step in self.toolchain.steps(self.cache)],
                "env": {}, "output_cap": self.limits.output_bytes,
                "pattern": self.toolchain.failure_pattern,
                "finished": {"variable": FINISHED_VARIABLE, "file": FINISHED_NAME}}
        (box / PLAN_NAME).write_text(json.dumps(plan), encoding="utf-8")
        self.toolchain.prepare(box, self.cache)

    def environment(self, box: str) -> dict[str, str]:
        return {**super().environment(box), **self.toolchain.env(box, self.cache)}

    def shutdown(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)
        self.warmed = False
