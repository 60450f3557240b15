"""Choosing the sandbox for a run: which layer (bwrap or process) and which executor (warm or
fresh), each probed once per process, with the lines that tell the user what was chosen and,
on a fallback, what is then not protected (docs/sandbox.md)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import Literal

from .cgroup import open_cgroups
from .environment import Layer, Limits, SandboxError
from .fresh import FreshSandbox, remove_stale_folders
from .layers import BwrapLayer, ProcessLayer, probe_bwrap
from .toolchain import Toolchain, ToolchainSandbox
from .warm import WarmSandbox

# When a warm executor's server starts: now, waiting until it is ready ("wait"); now, without
# waiting ("launch": `Choice.ready` waits); or at its first execution ("first-run").
Start = Literal["wait", "launch", "first-run"]


def warm_unavailable(why: object) -> str:
    """The note of a warm executor that could not start, whenever that is found."""
    return f"sandbox: a fresh interpreter per execution (warm executor unavailable: {why})"


@dataclass
class Choice:
    sandbox: FreshSandbox | WarmSandbox
    notes: list[str] = field(default_factory=list)

    def ready(self) -> None:
        """Waits for a warm executor launched in the background; where it did not start, fresh
        interpreters take its place, as when `make_sandbox` finds it cannot start."""
        sandbox = self.sandbox
        if not isinstance(sandbox, WarmSandbox) or not sandbox.starting:
            return
        try:
            sandbox.await_ready()
        except SandboxError as exc:
            sandbox.shutdown()
            self.sandbox = FreshSandbox(sandbox.layer, sandbox.limits, sandbox.cgroups,
                                        sandbox.python)
            self.notes.append(warm_unavailable(exc))

    def for_toolchain(self, toolchain: Toolchain, timeout: float) -> ToolchainSandbox:
        """Another language's executions, in the same layer and cgroups, its caches built."""
        sandbox = ToolchainSandbox(self.sandbox.layer, toolchain,
                                   replace(self.sandbox.limits, timeout=timeout),
                                   self.sandbox.cgroups, self.sandbox.python)
        sandbox.start()
        return sandbox


def process_limits(layer: ProcessLayer) -> list[str]:
    """The header's lines of what the process layer cannot hide or block here, one a limit."""
    return [f"sandbox: the process layer does NOT protect against: {limit}"
            for limit in layer.limits()]


def choose_layer(wanted: str, python: str = sys.executable,
                 hidden: tuple[str, ...] = ()) -> tuple[Layer, list[str]]:
    if wanted == "process":
        process = ProcessLayer(python)
        return process, [f"sandbox: {process.describe()} (--humanfix-sandbox process)",
                         *process_limits(process)]
    bwrap, why = probe_bwrap(python)
    if bwrap is not None:
        layer = BwrapLayer(bwrap, python, hidden)
        return layer, [f"sandbox: {layer.describe()} ({wanted}: {why})"]
    if wanted == "bwrap":
        raise SandboxError(f"--humanfix-sandbox bwrap: {why}. Use --humanfix-sandbox process "
                           "to run without it.")
    process = ProcessLayer(python)
    return process, [f"sandbox: {process.describe()} (auto fell back: {why})",
                     *process_limits(process)]


def make_sandbox(layer_wanted: str, executor_wanted: str, limits: Limits,
                 python: str = sys.executable, hidden: tuple[str, ...] = (),
                 start: Start = "wait") -> Choice:
    """SandboxError when an explicitly requested layer or executor cannot work here;
    `hidden` (the data files, whose folders go whole, and the folders of answers) are hidden
    inside the bwrap layer (`layers.hidden_folders`). `start` says when a warm
    executor's server starts (`Start`). An xdist worker launches it and collects while it
    imports the prelude; an xdist controller executes nothing unless it calibrates, so its
    server starts at its first execution, if one ever comes: started beside the workers'
    start-up, it would only take CPU from them. Only "wait" finds here that it cannot start."""
    remove_stale_folders()
    layer, notes = choose_layer(layer_wanted, python, hidden)
    cgroups, how = open_cgroups()
    if cgroups is None:
        notes.append(f"sandbox: no cgroups ({how}): the number of processes is not bounded "
                     "for root, and processes that leave their session may outlive a run")
    else:
        notes.append(f"sandbox: a {how} per execution bounds and reaps its processes")
    if executor_wanted == "fresh":
        return Choice(FreshSandbox(layer, limits, cgroups, python),
                      notes + ["sandbox: a fresh interpreter per execution "
                               "(--humanfix-executor fresh)"])
    try:
        if cgroups is None:
            raise SandboxError("it needs writable cgroups to reap what each child leaves behind")
        warm = WarmSandbox(layer, limits, cgroups, python)
        if start == "wait":
            warm.start()
        elif start == "launch":
            warm.launch()
    except SandboxError as exc:
        if executor_wanted == "warm":
            raise SandboxError(f"--humanfix-executor warm: {exc}") from None
        return Choice(FreshSandbox(layer, limits, cgroups, python),
                      notes + [warm_unavailable(exc)])
    return Choice(warm, notes + ["sandbox: warm executor (two fork servers per worker, the "
                                 "candidates' and the tests', import the prelude once; fresh "
                                 "children per execution)"])
