"""Starting a humanfix run in one pytest process, and the controller's side of it.

`start` validates everything the user gave before any work is done, so a bad model spec, dataset
or report folder is a short usage error, not a traceback after an hour. The `Controller` plugin is
registered only in the controller (the process without `workerinput`): it alone writes files.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from . import runreport
from .dataset import DatasetError
from .devices import DeviceError, DevicePool, pin, run_devices
from .gates import (BaselineError, Comparison, GateCheck, check_gates, compare, load_baseline,
                    verdict_line)
from .models import ModelSpecError, check_spec
from .report import JsonlWriter, ReportError, summarize, summary_lines
from .resume import ResumeError, fingerprint, load_finished
from .runner import Runner, new_run_id
from .sandbox import SandboxError
from .settings import Settings


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def is_distributing(config: pytest.Config) -> bool:
    """This process is an xdist controller: it hands out tasks and devices, runs nothing."""
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def own_device(config: pytest.Config, devices: DevicePool) -> str | None:
    """The GPU this process runs the model on: a worker's is the controller's pick, a run without
    xdist takes the first; an xdist controller runs no model and takes none."""
    if is_worker(config):
        return config.workerinput.get("humanfix_device")
    return None if is_distributing(config) else devices.acquire("main")


def start(config: pytest.Config, settings: Settings) -> Runner:
    run_id = config.workerinput["humanfix_run_id"] if is_worker(config) else new_run_id()
    runner = Runner(settings, run_id)
    try:
        if not settings.serve:  # under serve, server.engine_model checks it on the controller
            check_spec(settings.model, settings)
        runner.tasks  # loads and validates the dataset now, not at the first item
        runner.sandbox_choice  # an explicit --humanfix-sandbox/-executor that cannot work here
        devices = DevicePool([] if is_worker(config) else run_devices(settings))
        runner.device = own_device(config, devices)
        if runner.device is not None:
            pin(runner.device)
    except (ModelSpecError, DatasetError, DeviceError, SandboxError) as exc:
        raise pytest.UsageError(str(exc)) from None
    if is_worker(config):
        runner.resumed = config.workerinput.get("humanfix_resumed", {})
    config.addinivalue_line("markers", "humanfix: a HumanEvalFix repair task (pytest-humanfix)")
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No paths given: collect the tasks only, not the project's own tests.
        config.args = [str(config.invocation_params.dir)]
    hooks = XdistHooks(runner, devices)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(hooks, "humanfix-xdist")
    if not is_worker(config):
        if not config.option.xmlpath:
            config.option.xmlpath = str(Path(settings.report_dir) / "junit.xml")
        controller = Controller(config, runner)
        try:
            controller.prepare()
        except (ReportError, ResumeError, BaselineError) as exc:
            raise pytest.UsageError(str(exc)) from None
        config.pluginmanager.register(controller, "humanfix-controller")
    if is_worker(config):
        runner.endpoint = config.workerinput.get("humanfix_endpoint")
    elif settings.serve:
        from .server import ServeError, serve

        try:
            hooks.serving = serve(settings)
        except (ServeError, DeviceError, ModelSpecError) as exc:
            raise pytest.UsageError(str(exc)) from None
        config.pluginmanager.register(hooks.serving, "humanfix-serve")
        runner.endpoint = hooks.serving.endpoint_for("main")
    return runner


class XdistHooks:
    """Registered only when pytest-xdist is installed; sends run state to the workers."""

    def __init__(self, runner: Runner, devices: DevicePool) -> None:
        self.runner = runner
        self.devices = devices
        self.serving: Any = None  # server.Serving under --humanfix-serve

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["humanfix_run_id"] = self.runner.run_id
        # Only the controller reads the results file; workers learn from it what is done.
        node.workerinput["humanfix_resumed"] = self.runner.resumed
        node.workerinput["humanfix_device"] = self.devices.acquire(node.gateway.id)
        if self.serving is not None:
            node.workerinput["humanfix_endpoint"] = \
                self.serving.endpoint_for(node.workerinput["workerid"])

    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        self.devices.release(node.gateway.id)


class Controller:
    """Collects each task's record from the reports, writes the JSONL and the summary."""

    def __init__(self, config: pytest.Config, runner: Runner) -> None:
        self.config = config
        self.runner = runner
        self.writer = JsonlWriter(runner.settings.jsonl_path)
        self.records: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.started_at = datetime.now(timezone.utc)
        self.baseline: dict[str, dict] | None = None
        self.report: dict[str, Any] | None = None
        self.report_files: list[Path] = []
        self.verdict: str | None = None
        self.report_problem: str | None = None

    def prepare(self) -> None:
        """Checks the gate and resume options against the files they name, then opens the
        results file: appended to when resuming, else started afresh."""
        settings, runner = self.runner.settings, self.runner
        if settings.max_regressions is not None and not settings.baseline:
            raise BaselineError("--humanfix-max-regressions counts regressions against a "
                                "baseline: give --humanfix-baseline PATH too.")
        if settings.baseline:
            self.baseline = load_baseline(Path(settings.baseline), runner.protocol,
                                          runner.dataset_hash)
        if settings.resume:
            selected = [task.task_id for task in runner.tasks]
            finished = load_finished(self.writer.path, fingerprint(
                settings.model, runner.protocol, runner.dataset_hash), selected)
            runner.resumed = {t: finished[t] for t in selected if t in finished}
        if settings.samples > 1 and settings.temperature == 0:
            self.config.issue_config_time_warning(pytest.PytestConfigWarning(
                f"--humanfix-samples {settings.samples} at temperature 0: greedy decoding makes "
                "the samples identical, so pass@k equals pass@1. Set --humanfix-temperature."),
                stacklevel=2)
        self.writer.open(append=settings.resume)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "humanfix", None)
        if report.when == "???":  # xdist: the worker died while running this item
            from .crash import crashed_record

            record = crashed_record(self.runner, report.nodeid, report)
        if record is not None and report.when in ("teardown", "???"):
            if record["task_id"] not in self.runner.resumed:
                self.writer.write(record)
            self.records.append(record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Before junitxml's own sessionfinish, which writes the file.
        from _pytest.junitxml import xml_key

        comparison = compare(self.records, self.baseline) if self.baseline is not None else None
        checks = self.check_gates(session, comparison)

        xml = self.config.stash.get(xml_key, None)
        if xml is not None and self.records:
            summary = summarize(self.records)
            xml.add_global_property("humanfix_pass_at_1", f"{summary.pass_at_1:.4f}")
            xml.add_global_property("humanfix_fixed", str(summary.fixed))
            xml.add_global_property("humanfix_scored", str(summary.scored))
            xml.add_global_property("humanfix_errors", str(summary.errors))
            xml.add_global_property("humanfix_model", str(self.runner.settings.model))
        if xml is not None and self.verdict:
            xml.add_global_property("humanfix_gate", self.verdict)
        self.write_reports(checks, comparison)

    def check_gates(self, session: pytest.Session, comparison: Comparison | None
                    ) -> list[GateCheck]:
        """Decides the gates and, when one fails, the exit status (a harness error or an
        interruption keeps its own, stronger status)."""
        settings = self.runner.settings
        if not settings.gated:
            return []
        if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            self.verdict = "humanfix gates not checked: the run did not finish"
            return []
        rate = runreport.rate(self.records)
        checks = check_gates(rate["value"], rate["tasks"], settings.fail_under, comparison,
                             settings.alpha, settings.max_regressions)
        self.verdict = verdict_line(checks)
        if any(not check.passed for check in checks):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return checks

    def write_reports(self, checks: list[GateCheck], comparison: Comparison | None) -> None:
        if not self.records:
            return
        times = runreport.run_times(self.started_at, datetime.now(timezone.utc))
        self.report = runreport.build(self.records, times, comparison, checks)
        try:
            self.report_files = runreport.write_reports(
                self.report, self.records, Path(self.runner.settings.report_dir))
        except Exception as exc:  # the JSONL is safe already; JUnit is written after this hook
            self.report_problem = (f"WARNING: humanfix could not write the summary files: "
                                   f"{type(exc).__name__}: {exc}")

    def files(self) -> list[Path]:
        paths = [self.writer.path]
        if self.config.option.xmlpath:
            paths.append(Path(self.config.option.xmlpath))
        return paths + self.report_files

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("=", "humanfix summary")
        lines = summary_lines(summarize(self.records), self.runner.protocol,
                              self.runner.settings.model, time.monotonic() - self.started)
        if self.report is not None:
            lines += runreport.terminal_lines(self.report)
        if self.runner.resumed:
            lines.append(f"resumed: {len(self.runner.resumed)} task(s) reported from "
                         f"{self.writer.path} without running again")
        lines += [f"wrote {path}" for path in self.files()]
        if self.report_problem:
            lines.append(self.report_problem)
        for line in lines:
            terminalreporter.write_line(line)
        # One line per distinct load failure, however many tasks and workers it stopped.
        failures = Counter(r["model_error"] for r in self.records if r.get("model_error"))
        for error, count in failures.items():
            terminalreporter.write_line(
                f"MODEL LOAD FAILED ({count} task(s) errored without retrying): {error}", red=True)
        if self.verdict:  # last, so a CI log ends with why the run passed or failed
            failed = "FAILED" in self.verdict
            terminalreporter.write_line(self.verdict, red=failed, green=not failed, bold=True)

    def pytest_unconfigure(self) -> None:
        self.writer.close()
