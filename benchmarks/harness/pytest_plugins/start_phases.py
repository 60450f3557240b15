"""A pytest plugin for bench_worker_start.py: it stamps, in every pytest process of a run (the
controller and each xdist worker), when each step of the start began and ended, on the wall clock
the benchmark shares, and which top-level packages each step imported first. Loaded with
`-p start_phases` (this folder on PYTHONPATH, the stamps' folder in HUMANFIX_PHASES); it wraps
the plugin's own functions by name, and a step a tree does not have is left out (the benchmark
runs an earlier commit's tree beside this one's). Each process writes `<role>.json` there."""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

FOLDER = os.environ.get("HUMANFIX_PHASES")
ROLE = os.environ.get("PYTEST_XDIST_WORKER", "controller")
# (module, attribute path, step name): what each step is in the plugin's code.
STEPS = [
    ("pytest_humanfix.session.controller", "validate", "validate"),
    ("pytest_humanfix.session.controller", "check_spec", "check spec"),
    ("pytest_humanfix.session.controller", "check_available", "probe servers"),
    ("pytest_humanfix.session.controller", "probe_servers", "probe servers"),
    ("pytest_humanfix.session.controller", "start_engines", "start engines"),
    ("pytest_humanfix.session.controller", "calibrate_limits", "calibrate"),
    ("pytest_humanfix.session.controller", "register", "register"),
    ("pytest_humanfix.session.worker", "check_spec", "check spec"),
    ("pytest_humanfix.session.workload", "Workload.load", "load tasks"),
    ("pytest_humanfix.session.worker", "choose_sandbox", "choose sandbox"),
    ("pytest_humanfix.session.controller", "choose_sandbox", "choose sandbox"),
    ("pytest_humanfix.session.runner", "Runner.model", "load model"),
    ("pytest_humanfix.models.openai_api", "OpenAIModel._probe", "probe /v1/models"),
    ("pytest_humanfix.models.openai_api", "server_computed_by", "probe /props, /version"),
    ("pytest_humanfix.sandbox.choose", "Choice.ready", "wait for warm executor"),
    ("pytest_humanfix.session.runner", "repair_graph", "build graph"),
    ("pytest_humanfix.session.runner", "Runner.preload", "preload"),
]


class Stamps:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.marks: dict[str, float] = {"process": process_start()}
        self.depth = 0

    def timed(self, name: str, function: Any) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            before = set(sys.modules)
            began = time.time()
            self.depth += 1
            try:
                return function(*args, **kwargs)
            finally:
                self.depth -= 1
                ended = time.time()
                if ended - began >= 0.0005:  # a cached property's or a cached call's return
                    new = sorted({m.split(".")[0] for m in set(sys.modules) - before})
                    self.steps.append({"step": name, "began": began, "ended": ended,
                                       "depth": self.depth, "imported": new})
        wrapper.__wrapped_by_phases__ = True  # type: ignore[attr-defined]
        return wrapper

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, time.time())

    def write(self) -> None:
        if FOLDER:
            Path(FOLDER, f"{ROLE}.json").write_text(json.dumps(
                {"role": ROLE, "marks": self.marks, "steps": self.steps}))


def process_start() -> float:
    """This process's start on the wall clock, from /proc (to a clock tick)."""
    fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
    ticks = int(fields[19])  # starttime, the 22nd field: ticks after boot
    boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime"))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


STAMPS = Stamps()


def wrap_steps() -> None:
    import importlib

    for module_name, path, name in STEPS:
        if (ROLE == "controller") != module_name.endswith("controller") \
                and module_name.endswith(("controller", "worker")):
            continue
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        *parents, attribute = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent, None)
        function = getattr(owner, attribute, None) if owner is not None else None
        if function is None or getattr(function, "__wrapped_by_phases__", False):
            continue
        raw = owner.__dict__.get(attribute) if isinstance(owner, type) else function
        if isinstance(raw, classmethod):
            setattr(owner, attribute, classmethod(STAMPS.timed(name, raw.__func__)))
        else:
            setattr(owner, attribute, STAMPS.timed(name, function))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # Before pytest_configure, where the plugin starts the run (workers call this hook too).
    STAMPS.mark("configure")
    STAMPS.timed("import the plugin's modules", wrap_steps)()


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    STAMPS.mark("collect")


def pytest_collection_finish(session: pytest.Session) -> None:
    STAMPS.mark("collected")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    STAMPS.mark("first task")
    STAMPS.write()


def pytest_configure_node(node: Any) -> None:
    STAMPS.mark("workers configured")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if ROLE == "controller" and report.when == "teardown":
        STAMPS.mark("first record")


def pytest_unconfigure(config: pytest.Config) -> None:
    STAMPS.write()
