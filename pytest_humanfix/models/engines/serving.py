"""`--humanfix-serve`: the controller's shared engines, one per device (or one over every device,
tensor-parallel; on a CPU, llama.cpp's engines laid over the cores), started at once, waited
for while the workers start, and stopped at the run's end, on Ctrl-C and at interpreter exit.
See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import atexit
import dataclasses
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from ...devices import requested_or_visible
from ...settings import Settings
from ..openai_servers import worker_index
from .commands import FIRST_PROMPT_TOKENS, CpuLayout, cpu_layout
from .kinds import ServeError, served_model
from .launch import START_TIMEOUT, Endpoint, Engine, new_engine


def serve_devices(settings: Settings) -> list[str | None]:
    """The devices of each engine: one engine per device, or under the tensor-parallel layout
    one engine over every device ("0,1,2,3"); None is one engine on the CPU."""
    devices: list[str | None] = [*requested_or_visible(settings)]
    if settings.serve_layout == "tensor-parallel":
        if len(devices) < 2:
            seen = f"only GPU {devices[0]} is" if devices else "none is"
            raise ServeError("--humanfix-serve-layout tensor-parallel spreads one engine over "
                             f"several GPUs, and {seen} visible; drop the option (or name "
                             "several with --humanfix-devices).")
        return [",".join(d for d in devices if d is not None)]
    return devices or [None]


def check_layout(settings: Settings, engine: str) -> None:
    if settings.serve_layout == "tensor-parallel" and engine != "vllm":
        raise ServeError(f"--humanfix-serve-layout tensor-parallel needs the vllm engine; the "
                         f"{engine} engine runs on one device. Install vLLM (pip install vllm) "
                         "or use --humanfix-serve-layout per-device.")


class Serving:
    """The controller's engines, registered as a plugin so the run's end stops them."""

    def __init__(self, engines: list[Engine], layout: str = "per-device",
                 engine_args: tuple[str, ...] = (), cpu: CpuLayout | None = None) -> None:
        self.engines = engines
        self.layout = layout
        self.engine_args = engine_args
        self.cpu = cpu
        atexit.register(self.stop)

    def facts(self) -> dict[str, Any]:
        """What summary.json says of the engines: how they were laid out and started."""
        return {"engine": self.engines[0].model.engine, "layout": self.layout,
                "engine_args": list(self.engine_args),
                "engines": [{"devices": engine.device, "base_url": engine.base_url}
                            for engine in self.engines],
                "cpu_layout": dataclasses.asdict(self.cpu) if self.cpu else None}

    def endpoint_for(self, worker: str) -> Endpoint:
        """Workers gw0, gw1, ... go round the engines; a replacement worker gets a new id."""
        return self.engines[worker_index(worker) % len(self.engines)].endpoint()

    def stop(self) -> None:
        for engine in self.engines:
            engine.stop()

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> None:
        """Waits for every engine to answer; one that fails stops them all."""
        try:
            for engine in self.engines:
                engine.wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self) -> Generator[None, None, None]:
        """The engines are waited for once the session has started, xdist's workers with it:
        the workers start while the engines do, and no task is handed out before they answer.
        Each worker reaches its engine first when its first task begins."""
        yield
        try:
            self.wait_healthy()
        except ServeError as exc:
            raise pytest.UsageError(str(exc)) from None

    def pytest_unconfigure(self) -> None:
        self.stop()

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for engine in self.engines:
            terminalreporter.write_line(
                f"humanfix serve: {engine.model.engine} engine pid {engine.pid} on "
                f"{engine.device or 'cpu'} at {engine.base_url}, log {engine.log_path}")


def serve(settings: Settings, workers: int = 1,
          first_prompt: int = FIRST_PROMPT_TOKENS) -> Serving:
    """Starts every engine at once, without waiting for any (`Serving.wait_healthy`; a start
    that fails stops them all). `workers` is the xdist worker count, which sizes each engine
    and sets llama.cpp's layout on a CPU; `first_prompt`, the most tokens of a first prompt of
    the run (`commands.prompt_tokens`)."""
    devices = serve_devices(settings)
    model = served_model(settings, gpus=devices != [None])
    check_layout(settings, model.engine)
    layout = None
    if model.engine == "llamacpp" and devices == [None]:
        layout = cpu_layout(workers)
        devices = [None] * layout.engines
    folder = Path(settings.report_dir)
    engines = []
    try:
        for index, device in enumerate(devices):
            # Workers gw0, gw1, ... go round the engines (`Serving.endpoint_for`).
            served = len(range(index, max(workers, 1), len(devices))) or 1
            engine = new_engine(model, folder / f"server-{index}.log", device, settings, layout,
                                served, first_prompt)
            engines.append(engine)
            engine.start()
    except BaseException:
        for engine in engines:
            engine.stop()
        raise
    return Serving(engines, settings.serve_layout, settings.engine_args, layout)
