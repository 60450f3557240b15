"""`--humanfix-serve`'s engines (pytest_humanfix/models/engines/serving.py) with stand-in engines
that start no process: every engine started before any is waited for, and waited for only once
the session (and xdist's workers) has started, one that fails stops them all, how many workers
each serves, llama.cpp's CPU layout, and what the run's end and summary see. The devices and
layouts themselves: runs/test_serve.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.models.engines import serving
from pytest_humanfix.models.engines.commands import CpuLayout
from pytest_humanfix.models.engines.kinds import ServedModel, ServeError
from pytest_humanfix.settings import Settings


class Engine:
    """What `serve` and `Serving` use of launch.Engine, each call written to `events`."""

    def __init__(self, events: list[str], model: ServedModel, index: int, device: str | None,
                 fail: str = "") -> None:
        self.events, self.model, self.index, self.device, self.fail = (
            events, model, index, device, fail)
        self.pid = 4000 + index
        self.base_url = f"http://127.0.0.1:{9000 + index}/v1"
        self.log_path = Path(f"reports/server-{index}.log")

    def start(self) -> None:
        self.events.append(f"start {self.index}")
        if self.fail == "start":
            raise ServeError(f"engine {self.index} cannot start")

    def wait_healthy(self, timeout: float) -> None:
        self.events.append(f"wait {self.index} {timeout:g}")
        if self.fail == "wait":
            raise ServeError(f"engine {self.index} exited")

    def stop(self) -> None:
        self.events.append(f"stop {self.index}")

    def endpoint(self) -> dict[str, str]:
        return {"base_url": self.base_url}


class Launcher:
    """Stands in for `new_engine`: keeps its arguments, and fails engine `failing` as told."""

    def __init__(self, engine: str = "vllm", failing: int = -1, fail: str = "") -> None:
        self.model = ServedModel(engine, "org/model", "org/model")
        self.failing, self.fail = failing, fail
        self.events: list[str] = []
        self.calls: list[dict[str, object]] = []

    def __call__(self, model: ServedModel, log_path: Path, device: str | None,
                 settings: Settings, layout: CpuLayout | None, workers: int,
                 first_prompt: int) -> Engine:
        index = len(self.calls)
        self.calls.append({"log": log_path, "device": device, "layout": layout,
                           "workers": workers, "first_prompt": first_prompt})
        return Engine(self.events, model, index, device,
                      self.fail if index == self.failing else "")


@pytest.fixture
def launcher(monkeypatch: pytest.MonkeyPatch) -> Launcher:
    launcher = Launcher()
    monkeypatch.setattr(serving, "new_engine", launcher)
    monkeypatch.setattr(serving, "served_model", lambda settings, gpus: launcher.model)
    monkeypatch.setattr(serving.atexit, "register", lambda function: function)
    return launcher


def gpus(monkeypatch: pytest.MonkeyPatch, visible: str) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)


def session_started(shared: serving.Serving, started: list[str]) -> None:
    """`Serving.pytest_sessionstart` around the session's other starts (xdist's workers')."""
    wrapper = shared.pytest_sessionstart()
    next(wrapper)
    started.append("workers start")
    with pytest.raises(StopIteration):
        next(wrapper)


def test_every_engine_is_started_and_waited_for_once_the_workers_are_starting(launcher,
                                                                            monkeypatch):
    gpus(monkeypatch, "0,1,2")
    shared = serving.serve(Settings(model="org/model", report_dir="out",
                                    engine_args=("--enforce-eager",)), workers=3,
                           first_prompt=900)
    assert launcher.events == ["start 0", "start 1", "start 2"]
    session_started(shared, launcher.events)
    assert launcher.events == ["start 0", "start 1", "start 2", "workers start",
                               f"wait 0 {serving.START_TIMEOUT:g}",
                               f"wait 1 {serving.START_TIMEOUT:g}",
                               f"wait 2 {serving.START_TIMEOUT:g}"]
    assert [call["first_prompt"] for call in launcher.calls] == [900] * 3
    assert [call["device"] for call in launcher.calls] == ["0", "1", "2"]
    assert [call["log"] for call in launcher.calls] == [
        Path("out/server-0.log"), Path("out/server-1.log"), Path("out/server-2.log")]
    assert (shared.layout, shared.engine_args, shared.cpu) == (
        "per-device", ("--enforce-eager",), None)


@pytest.mark.parametrize(("visible", "workers", "served"), [
    ("0,1", 5, [3, 2]),   # gw0, gw2, gw4 on the first; gw1, gw3 on the second
    ("0,1", 2, [1, 1]),
    ("0,1", 1, [1, 1]),   # an engine no worker reaches is still sized for one
    ("0,1", 0, [1, 1]),   # no xdist: the controller's own process is one worker
    ("0", 4, [4]),
])
def test_each_engine_is_sized_for_the_workers_that_go_round_to_it(launcher, monkeypatch,
                                                                 visible, workers, served):
    gpus(monkeypatch, visible)
    serving.serve(Settings(model="org/model"), workers=workers)
    assert [call["workers"] for call in launcher.calls] == served


def test_an_engine_that_cannot_start_stops_every_engine_started(launcher, monkeypatch):
    gpus(monkeypatch, "0,1,2")
    launcher.failing, launcher.fail = 1, "start"
    with pytest.raises(ServeError, match="engine 1"):
        serving.serve(Settings(model="org/model"), workers=3)
    assert launcher.events == ["start 0", "start 1", "stop 0", "stop 1"]


def test_an_engine_that_never_answers_stops_them_all_and_is_a_usage_error(launcher, monkeypatch):
    gpus(monkeypatch, "0,1,2")
    launcher.failing, launcher.fail = 1, "wait"
    shared = serving.serve(Settings(model="org/model"), workers=3)
    with pytest.raises(pytest.UsageError, match="^engine 1 exited$"):
        session_started(shared, launcher.events)
    assert launcher.events == ["start 0", "start 1", "start 2", "workers start",
                               f"wait 0 {serving.START_TIMEOUT:g}",
                               f"wait 1 {serving.START_TIMEOUT:g}", "stop 0", "stop 1", "stop 2"]


def test_llamacpp_on_a_cpu_is_laid_out_over_the_cores(launcher, monkeypatch):
    gpus(monkeypatch, "")
    launcher.model = ServedModel("llamacpp", "/m/model.gguf", "/m/model.gguf")
    monkeypatch.setattr(serving, "cpu_layout", lambda workers: CpuLayout(2, 4, workers))
    shared = serving.serve(Settings(model="/m/model.gguf"), workers=3)
    assert [(call["device"], call["layout"]) for call in launcher.calls] == \
        [(None, CpuLayout(2, 4, 3))] * 2
    assert shared.cpu == CpuLayout(2, 4, 3)
    assert shared.facts()["cpu_layout"] == {"engines": 2, "threads": 4, "slots": 3}


def test_another_engine_on_a_cpu_is_one_engine(launcher, monkeypatch):
    gpus(monkeypatch, "")
    launcher.model = ServedModel("transformers", "org/model", "org/model")
    shared = serving.serve(Settings(model="org/model"), workers=4)
    assert [(call["device"], call["layout"], call["workers"]) for call in launcher.calls] == \
        [(None, None, 4)]
    assert shared.facts()["cpu_layout"] is None


def test_a_layout_the_engine_cannot_run_starts_nothing(launcher, monkeypatch):
    gpus(monkeypatch, "0,1")
    launcher.model = ServedModel("transformers", "org/model", "org/model")
    with pytest.raises(ServeError, match="Install vLLM .* or use --humanfix-serve-layout "
                                         "per-device"):
        serving.serve(Settings(model="org/model", serve_layout="tensor-parallel"))
    assert launcher.calls == [] and launcher.events == []


def shared_engines(events: list[str], devices: list[str | None]) -> serving.Serving:
    model = ServedModel("vllm", "org/model", "org/model")
    return serving.Serving([Engine(events, model, index, device)  # type: ignore[misc]
                            for index, device in enumerate(devices)])


@pytest.mark.parametrize(("worker", "port"), [
    ("gw0", 9000), ("gw1", 9001), ("gw2", 9002), ("gw3", 9000), ("gw7", 9001),
    ("master", 9000), ("", 9000),
])
def test_workers_go_round_the_engines_and_the_controller_takes_the_first(monkeypatch, worker,
                                                                         port):
    monkeypatch.setattr(serving.atexit, "register", lambda function: function)
    shared = shared_engines([], ["0", "1", "2"])
    assert shared.endpoint_for(worker) == {"base_url": f"http://127.0.0.1:{port}/v1"}


def test_the_runs_end_and_the_interpreters_exit_stop_every_engine(monkeypatch):
    registered = []
    monkeypatch.setattr(serving.atexit, "register", registered.append)
    events: list[str] = []
    shared = shared_engines(events, ["0", "1"])
    assert registered == [shared.stop]
    shared.pytest_unconfigure()
    assert events == ["stop 0", "stop 1"]


class Reporter:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_the_terminal_summary_names_each_engine_its_device_and_its_log(monkeypatch):
    monkeypatch.setattr(serving.atexit, "register", lambda function: function)
    reporter = Reporter()
    shared_engines([], ["0", None]).pytest_terminal_summary(reporter)  # type: ignore[arg-type]
    assert reporter.lines == [
        "humanfix serve: vllm engine pid 4000 on 0 at http://127.0.0.1:9000/v1, "
        "log reports/server-0.log",
        "humanfix serve: vllm engine pid 4001 on cpu at http://127.0.0.1:9001/v1, "
        "log reports/server-1.log"]
