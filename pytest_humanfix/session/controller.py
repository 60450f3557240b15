"""The controller's side of a run: the one process that writes files. `start` validates every
input, times the canonical solutions, starts the shared engines and registers the `Controller`,
which turns each task's report into a JSONL record and, at the end, into the one summary that
the terminal, JUnit, the report files and the gates all read (docs/reports.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..dataset import DatasetError
from ..devices import DeviceError, DevicePool, pin
from ..jsonl import JsonlWriter, ReportError
from ..models.openai_servers import ServerProbe
from ..models.preflight import check_available
from ..models.specs import ModelSpecError, check_spec
from ..plus.verdicts import is_reference_times, reference_times
from ..protocol import RunProtocol, run_fingerprint, without_model
from ..records import Record, earlier_run, latest_per_task, read_records
from ..reporting import files, junit, summary as summary_mod, terminal
from ..reporting.gates import (
    BaselineError,
    Comparison,
    GateCheck,
    compare,
    failure_lines,
    gate_checks,
    load_baseline,
    verdict_line,
)
from ..reporting.progress import LiveLine
from ..reporting.sections import RunFacts, Selection, Summary
from ..reporting.view import PAGE
from ..sandbox.choose import Choice
from ..sandbox.environment import SandboxError
from ..settings import Settings, deprecated_names
from .calibration import CalibrationFile, Reading, calibrate, calibrate_language, timing_beside
from .crash import Crashes
from .engine_start import start_engines
from .placement import Layout, choose_layout, run_devices
from .resume import ResumeError, load_finished
from .runner import Runner, choose_sandbox, new_run_id
from .state import ReferenceTimes, RunState
from .workload import Workload
from .xdist import XdistHooks, is_distributing, workers_of

if TYPE_CHECKING:
    from ..models.engines.serving import Serving

# The most seconds a reference solution is timed for on its HumanEval+ program.
PLUS_CALIBRATION_LIMIT = 300.0


def deselected_by(config: pytest.Config) -> str:
    """Why a selected task was never collected: the selection options in effect."""
    used = [flag for flag, name in (("--lf", "lf"), ("--sw", "stepwise"), ("-k", "keyword"),
                                    ("-m", "markexpr"), ("--deselect", "deselect"),
                                    ("--splits/--group", "splits"))
            if config.getoption(name, None)]
    return "deselected by " + ", ".join(used) if used else "not collected"


def remember_failed(config: pytest.Config, nodeid: str) -> None:
    """Records an unfixed task in pytest's last-failed cache. Under a gate it is an expected
    failure, which the cache would count as passed, so --lf would skip exactly the tasks a
    user wants to run again. The cache plugin's state is private: a pytest that changed it
    costs only this."""
    plugin = config.pluginmanager.get_plugin("lfplugin")
    lastfailed = getattr(plugin, "lastfailed", None)
    if isinstance(lastfailed, dict):
        lastfailed[nodeid] = True


@dataclass(frozen=True)
class Checked:
    """What `validate` found usable before any work is done: the settings under the chosen
    layout, the tasks, the sandbox, the GPUs, the files the gate and resume options name, and
    the OpenAI-compatible servers as found."""

    settings: Settings
    layout: Layout
    workload: Workload
    sandbox_choice: Choice
    devices: DevicePool
    device: str | None
    baseline: dict[str, Record] | None
    resumed: dict[str, Record]
    servers: dict[str, ServerProbe]


def start(config: pytest.Config, settings: Settings) -> Runner:
    """The controller's Runner, complete: every input checked, the canonical solutions timed
    (before any engine loads the machine), the shared engines started (and waited for once the
    workers are starting: `Serving.pytest_sessionstart`), and the controller's plugins
    registered."""
    checked = validate(config, settings)
    canonical_seconds, plus_reference = calibrate_limits(config, checked)
    serving = start_engines(config, checked.settings, checked.layout, checked.workload.tasks)
    return register(config, checked, serving, canonical_seconds, plus_reference)


def validate(config: pytest.Config, settings: Settings) -> Checked:
    """Checks the model spec, the dataset, the sandbox, the devices and the gate and resume
    files; a problem is a usage error before anything starts."""
    try:
        layout = choose_layout(settings)
        settings = dataclasses.replace(settings, serve=layout.serve)
        if settings.model and not settings.serve:  # under serve, serve.engine_model checks it
            check_spec(settings.model, settings)
        servers = {}
        if settings.model:  # once, here, before any worker starts: what each would fail on
            servers = check_available(settings.model, settings)
        if settings.repeat_with:
            try:
                check_spec(settings.repeat_with, settings)
                servers |= check_available(settings.repeat_with, settings)
            except ModelSpecError as exc:
                raise ModelSpecError(f"--humanfix-repeat-with: {exc}") from None
        workload = Workload.load(settings)
        sandbox_choice = choose_sandbox(
            settings, workload, start="first-run" if is_distributing(config) else "wait")
        devices = DevicePool(run_devices(settings))
        device = None if is_distributing(config) else devices.acquire("main")
        if device is not None:
            pin(device)
    except (ModelSpecError, DatasetError, DeviceError, SandboxError) as exc:
        raise pytest.UsageError(str(exc)) from None
    if not config.option.xmlpath:
        config.option.xmlpath = str(Path(settings.report_dir) / "junit.xml")
    try:
        baseline, resumed = prepare(config, settings, workload)
    except (ResumeError, BaselineError) as exc:
        raise pytest.UsageError(str(exc)) from None
    return Checked(settings, layout, workload, sandbox_choice, devices, device, baseline,
                   resumed, servers)


def calibrate_limits(config: pytest.Config, checked: Checked
                     ) -> tuple[dict[str, float], dict[str, ReferenceTimes]]:
    """The reference solutions' times that set each task's limits, in every language of the
    run, and under --humanfix-tests plus EvalPlus's reference's times on each input: measured
    before any worker starts, as many programs at a time as the run has workers
    (`timing_beside`)."""
    workload, resumed = checked.workload, checked.resumed
    sandbox = checked.sandbox_choice.sandbox
    anew = bool(config.getoption("cacheclear", False))
    beside = timing_beside(sandbox, workers_of(config))
    try:
        canonical_seconds: dict[str, float] = {}
        for language in workload.languages:
            tasks = [t for t in workload.tasks
                     if t.task_id not in resumed and t.language == language]
            if tasks:
                canonical_seconds.update(calibrate_language(
                    checked.sandbox_choice, checked.settings, tasks,
                    CalibrationFile(workload.dataset_hashes.get(language, "")), anew, beside))
        plus_reference = {}
        if workload.plus is not None:
            # EvalPlus times its own reference solution on each input (evaluate.py,
            # get_groundtruth: trusted_exec with record_time); so does this, in the sandbox,
            # once per machine and HumanEval+ data, with room for its slowest tasks (~25 s
            # alone here).
            plus = workload.plus
            plus_reference = calibrate(
                [t for t in workload.tasks if t.task_id not in resumed],
                checked.sandbox_choice.sandbox, CalibrationFile("plus-inputs-" + plus.hash),
                PLUS_CALIBRATION_LIMIT, anew=anew,
                reading=Reading(lambda task: plus.tasks[task.task_id].reference_program,
                                reference_times, is_reference_times), beside=beside)
    except SandboxError as exc:
        raise pytest.UsageError(f"timing the reference solutions: {exc}") from None
    finally:
        for copy in beside:
            if copy is not sandbox:
                copy.shutdown()
    return canonical_seconds, plus_reference


def register(config: pytest.Config, checked: Checked, serving: Serving | None,
             canonical_seconds: dict[str, float],
             plus_reference: dict[str, ReferenceTimes]) -> Runner:
    """The controller's Runner, and its plugins: the Controller, which writes every file, and
    the xdist hooks that hand the workers their state."""
    settings = checked.settings
    state = RunState(new_run_id(), agent=settings.agent, resumed=checked.resumed,
                     canonical_seconds=canonical_seconds, plus_reference=plus_reference,
                     servers=checked.servers)
    runner = Runner(settings, state, workload=checked.workload,
                    sandbox_choice=checked.sandbox_choice, device=checked.device,
                    endpoint=serving.endpoint_for("main") if serving is not None else None)
    controller = Controller(config, runner, checked.baseline,
                            serving.facts() if serving is not None else None)
    try:
        controller.writer.open(append=settings.resume)
    except ReportError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(controller, "humanfix-controller")
    config.pluginmanager.register(LiveLine(config, controller.records.values, controller.selected,
                                           resumed=state.resumed), "humanfix-live")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(runner, checked.devices, serving),
                                      "humanfix-xdist")
        config.pluginmanager.register(controller.crashes, "humanfix-crashes")
    return runner


def prepare(config: pytest.Config, settings: Settings, workload: Workload
            ) -> tuple[dict[str, Record] | None, dict[str, Record]]:
    """Checks the gate and resume options against the files they name: the baseline's records
    and the records of tasks already finished, by task id."""
    if settings.max_regressions is not None and not settings.baseline:
        raise BaselineError("--humanfix-max-regressions counts regressions against a "
                            "baseline: give --humanfix-baseline PATH too.")
    # What a record of each language must agree with to be resumed (a baseline may be of
    # another model).
    wanted = {name: run_fingerprint(settings.model, RunProtocol.of(settings, name).to_json(),
                                    workload.dataset_hashes[name])
              for name in workload.languages}
    baseline = None
    if settings.baseline:
        baseline = load_baseline(Path(settings.baseline),
                                 {name: without_model(print_) for name, print_ in wanted.items()})
    resumed: dict[str, Record] = {}
    if settings.resume:
        selected = [task.task_id for task in workload.tasks]
        finished = load_finished(settings.jsonl_path, wanted, selected)
        resumed = {t: finished[t] for t in selected if t in finished}
    for line in deprecated_names(config):
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(line), stacklevel=2)
    if settings.samples > 1 and settings.temperature == 0:
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"--humanfix-samples {settings.samples} at temperature 0: greedy decoding makes "
            "the samples identical, so pass@k equals pass@1. Set --humanfix-temperature."),
            stacklevel=2)
    return baseline, resumed


class Controller:
    """Collects each task's record from the reports, writes the JSONL and the summary."""

    def __init__(self, config: pytest.Config, runner: Runner,
                 baseline: dict[str, Record] | None,
                 serve_facts: dict[str, Any] | None = None) -> None:
        self.config = config
        self.serve_facts = serve_facts
        self.runner = runner
        self.writer = JsonlWriter(runner.settings.jsonl_path)
        # One record per task, by task id: a task run again (reruns) replaces its record.
        self.records: dict[str, Record] = {}
        self.crashes = Crashes(runner)
        self.rerun_logged = False
        # Task ids of the items left after deselection (-k, --lf, a shard), once collected.
        self.collected: set[str] | None = None
        self.started_at = datetime.now(UTC)
        self.baseline = baseline
        self.summary: Summary | None = None
        self.report_files: list[Path] = []
        self.verdict: str | None = None
        self.report_problem: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record: Record | None = getattr(report, "humanfix", None)
        if report.when == "???":  # xdist: the worker died while running this item
            record = self.crashes.standing(report)
        if record is not None and report.when in ("teardown", "???"):
            self.collect(self.crashes.with_first_try(report.nodeid, record))
            if record["outcome"] == "unfixed" and self.runner.settings.gated:
                remember_failed(self.config, report.nodeid)

    def collect(self, record: Record) -> None:
        task_id = record["task_id"]
        earlier = self.records.pop(task_id, None)
        if earlier is not None:
            # A plugin logged each run of the item; the last run decides.
            self.rerun_logged = True
            if not record.get("reruns"):
                record = {**record, "reruns": [earlier_run(earlier)]}
        if task_id not in self.runner.state.resumed:
            self.writer.write(record)
        self.records[task_id] = record

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not is_distributing(self.config):
            # By attribute, as plugin.py finds items: pytester may import the items afresh.
            self.collected = {item.task.task_id for item in session.items
                              if hasattr(item, "task")}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        # Under xdist the workers collect and deselect; each reports the ids it kept.
        by_name = {task.item_name: task.task_id for task in self.runner.tasks}
        kept = {by_name[i.rsplit("::", 1)[-1]] for i in ids if i.rsplit("::", 1)[-1] in by_name}
        self.collected = kept if self.collected is None else self.collected | kept

    def selected(self) -> int:
        """The selection's size, less what -k, --lf or a shard deselected once collected."""
        return len(self.collected) if self.collected is not None else len(self.runner.tasks)

    def selection(self, session: pytest.Session) -> Selection:
        """Which selected tasks ran, and why each of the others did not."""
        stop = session.shouldstop or session.shouldfail
        not_run: dict[str, str] = {}
        for task in (t for t in self.runner.tasks if t.task_id not in self.records):
            if self.collected is not None and task.task_id not in self.collected:
                not_run[task.task_id] = deselected_by(self.config)
            elif stop:  # -x, --maxfail, --sw, or a plugin's own stop
                not_run[task.task_id] = f"stopped early: {stop}"
            elif session.exitstatus == pytest.ExitCode.INTERRUPTED:
                not_run[task.task_id] = "interrupted"
            else:
                not_run[task.task_id] = "not run"
        return {"selected": [task.task_id for task in self.runner.tasks], "not_run": not_run}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Before junitxml's own sessionfinish, which writes the file.
        for record in self.crashes.never_retried(self.records):
            self.collect(record)
        if self.rerun_logged:
            self.writer.rewrite(latest_per_task(read_records(self.writer.path, bad_lines="skip")))
        records = list(self.records.values())
        comparison = compare(records, self.baseline) if self.baseline is not None else None
        run = self.run_facts()
        selection = self.selection(session)
        self.summary = summary = summary_mod.build(
            records, run, comparison, selection, alpha=self.runner.settings.alpha,
            baseline=list(self.baseline.values()) if self.baseline is not None else None)
        summary_mod.attach_gates(summary, self.check_gates(session, summary, comparison))
        xml = junit.junit_writer(self.config)
        if xml is not None and self.records:
            for name, value in junit.junit_properties(summary):
                xml.add_global_property(name, value)
        if xml is not None and self.verdict:
            xml.add_global_property("humanfix_gate", self.verdict)
            junit.add_gate_failure(xml, summary)
        if self.records:
            try:
                self.report_files = files.write_reports(
                    summary, records, Path(self.runner.settings.report_dir), self.baseline,
                    {task.task_id: task.buggy_code for task in self.runner.tasks})
            except files.ChartError as exc:
                self.report_files = exc.written
                self.report_problem = exc.warning()
            except Exception as exc:  # the JSONL is safe already; JUnit is written after this
                self.report_problem = (f"WARNING: humanfix could not write the summary files: "
                                       f"{type(exc).__name__}: {exc}")

    def run_facts(self) -> RunFacts:
        """What the summary takes from the run rather than from its records."""
        facts: RunFacts = {"model": self.runner.settings.model, "protocol": self.runner.protocol,
                 **summary_mod.run_times(self.started_at, datetime.now(UTC))}
        if self.serve_facts is not None:  # --humanfix-serve: the engines, their layout, args
            facts["serve"] = self.serve_facts
        if self.runner.workload.impossible:  # the tasks the impossible variant left out
            facts["left_out"] = self.runner.workload.impossible.left_out
        return facts

    def check_gates(self, session: pytest.Session, summary: Summary,
                    comparison: Comparison | None) -> list[GateCheck]:
        """Decides the gates and, when one fails, the exit status (a harness error or an
        interruption keeps its own, stronger status)."""
        settings = self.runner.settings
        if not settings.gated:
            return []
        if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            self.verdict = "humanfix gates not checked: the run did not finish"
            return []
        checks = gate_checks(summary, comparison, settings.fail_under, settings.alpha,
                             settings.max_regressions, settings.computed_by_mismatch,
                             (self.baseline or {}).values(), self.records.values(),
                             whole_selection=True)
        self.verdict = verdict_line(checks)
        if any(not check.passed for check in checks):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return checks

    def files(self) -> list[Path]:
        paths = [self.writer.path]
        if self.config.option.xmlpath:
            paths.append(Path(self.config.option.xmlpath))
        return paths + self.report_files

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        terminalreporter.write_sep("=", "humanfix summary")
        summary = self.summary or summary_mod.build(list(self.records.values()),
                                                    self.run_facts())
        lines = terminal.summary_lines(summary)
        if self.runner.state.resumed:
            lines.append(f"resumed: {len(self.runner.state.resumed)} task(s) reported from "
                         f"{self.writer.path} without running again")
        lines += [f"wrote {path}" for path in self.files()]
        if self.report_problem:
            lines.append(self.report_problem)
        for line in lines:
            terminalreporter.write_line(line)
        for line in terminal.model_error_lines(self.records.values()):
            terminalreporter.write_line(line, red=line.startswith("MODEL LOAD FAILED"))
        for line in failure_lines(summary, self.records.values(), self.baseline or {},
                                  Path(self.runner.settings.report_dir) / PAGE):
            terminalreporter.write_line(line, red=True)
        if self.verdict:  # last, so a CI log ends with why the run passed or failed
            failed = "FAILED" in self.verdict
            terminalreporter.write_line(self.verdict, red=failed, green=not failed, bold=True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str],
                                    postfix: list[str], session: pytest.Session) -> None:
        # pytest-html calls this from its own sessionfinish, after this plugin's.
        if self.summary is not None:
            from ..reporting.html_report import summary_html

            prefix.extend(summary_html(self.summary))

    def pytest_unconfigure(self) -> None:
        self.writer.close()
