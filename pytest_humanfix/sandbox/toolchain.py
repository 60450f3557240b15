"""Executions of a language that is compiled, or run by another interpreter than ours (JS,
Java, Go, C++, Rust): the same fresh path, layer, limits, cgroups and verdict as a Python
execution, but each process runs `inside/toolchain.py` on a plan: the files the language's job
gives it and the language's steps (compile, then run) for its role. Compile caches are per
worker and built once from fixed code; executions read them (`readable`) or copy one they must
write (Go's), so no candidate writes into what another reads. A language may build the tests'
program itself, once per worker and source (`Toolchain.built`), into a folder only the tests'
processes see (docs/sandbox.md#the-tests-and-the-candidate-apart, docs/languages.md#execution).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from .cgroup import Cgroup
from .environment import Job, Layer, Limits, SandboxError, Side, Verdict
from .fresh import Execution, FreshSandbox, temp_folder


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

    def steps(self, cache: Path, role: str) -> list[Step]:
        """The commands of the process of `role` (candidate or tests)."""

    def env(self, box: str, cache: Path) -> dict[str, str]: ...

    def limits(self, limits: Limits) -> Limits: ...

    def warm(self, cache: Path) -> None:
        """Build the worker's caches in `cache` (harness code, before any candidate)."""

    def prepare(self, box: Path, cache: Path) -> None:
        """Put in the box what one execution needs of the caches (its own copy)."""

    def built(self, files: dict[str, str], cache: Path) -> list[Step] | None:
        """The steps of a tests' process whose program the harness built from `files` (the
        dataset's code and the harness's, never a candidate's) into `cache`, a folder of the
        worker's that only the tests' processes see, once per source; None where the tests'
        process builds its program itself."""


class ToolchainSandbox(FreshSandbox):
    """A fresh execution per program, run by the toolchain's steps; see the module docstring."""

    executor = "fresh"

    def __init__(self, layer: Layer, toolchain: Toolchain, limits: Limits | None = None,
                 cgroups: Cgroup | None = None, python: str = sys.executable) -> None:
        super().__init__(layer, toolchain.limits(limits or Limits()), cgroups, python)
        self.toolchain = toolchain
        self.cache = temp_folder(f"cache-{toolchain.name}")
        self.readable = (self.cache,)
        # What the harness built of the tests (the hidden ones included): never the
        # candidate's to read.
        self.tests_cache = temp_folder(f"tests-{toolchain.name}")
        self.tests_readable = (self.tests_cache,)
        self.warmed = False

    def start(self) -> None:
        """Builds the worker's caches, once, before the first execution's clock starts."""
        if self.warmed:
            return
        try:
            self.toolchain.warm(self.cache)
        except Exception as exc:
            raise self.fault("compile cache", exc) from exc
        self.warmed = True

    def run(self, job: Job, timeout: float | None = None) -> Verdict:
        self.start()
        return super().run(self.planned(job), timeout)

    def planned(self, job: Job) -> Job:
        """The job with each side's files completed into a plan: the steps of its role, run
        by `inside/toolchain.py`."""
        def plan(side: Side, role: str) -> Side:
            files = json.loads(side.program)["files"]
            steps = self.built(files) if role == "tests" else None
            if steps is None:
                steps = self.toolchain.steps(self.cache, role)
            else:
                files = {}
            plan = {"files": files,
                    "steps": [{"argv": list(step.argv), "kind": step.kind,
                               "silent": step.silent,
                               # The harness stops the candidate once the tests end: what its
                               # run wrote must already be in the output it reads.
                               "direct": role == "candidate" and step.kind == "run"}
                              for step in steps],
                    "env": {}, "output_cap": self.limits.output_bytes,
                    "pattern": self.toolchain.failure_pattern}
            return replace(side, program=json.dumps(plan))

        return replace(job, candidate=plan(job.candidate, "candidate"),
                       tests=plan(job.tests, "tests"))

    def built(self, files: dict[str, str]) -> list[Step] | None:
        """The tests' steps where the toolchain builds their program here (`Toolchain.built`);
        a build that fails is the harness's fault: the tests' files are no candidate's."""
        try:
            return self.toolchain.built(files, self.tests_cache)
        except Exception as exc:
            raise self.fault("tests' program", exc) from exc

    def fault(self, what: str, exc: Exception) -> SandboxError:
        """A build of harness code that failed, with the end of what the compiler said."""
        detail = getattr(exc, "stderr", b"") or b""
        return SandboxError(f"cannot build the {self.toolchain.name} {what}: {exc} "
                            f"{detail.decode(errors='replace')[-2000:]}".strip())

    def prepare(self, execution: Execution, job: Job) -> None:
        super().prepare(execution, job)
        for role in job.roles:
            # A process that runs what the harness built needs nothing of the caches.
            if json.loads(job.side(role).program)["files"]:
                self.toolchain.prepare(execution.boxes[role], self.cache)

    def environment(self, box: str) -> dict[str, str]:
        return {**super().environment(box), **self.toolchain.env(box, self.cache)}

    def shutdown(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)
        shutil.rmtree(self.tests_cache, ignore_errors=True)
        self.warmed = False
