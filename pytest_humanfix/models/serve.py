"""`--humanfix-serve`: one shared OpenAI-compatible engine per device, run by the controller.

Eight workers on one GPU then send eight concurrent requests that one engine batches, instead of
loading eight model copies. The engine is vLLM when it is installed, else `transformers serve`
with continuous batching. Each runs in its own session (process group) on a free loopback port,
with its log in the report folder; it is stopped at the end of the run, on Ctrl-C (pytest still
unconfigures), at interpreter exit (atexit), and when the controller dies outright (the kernel
sends it SIGTERM through PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..devices import requested_or_visible
from ..processes import stop_group
from ..settings import Settings
from .specs import resolve_spec

if TYPE_CHECKING:
    import pytest

HOST = "127.0.0.1"
START_TIMEOUT = 900.0  # a first run may download the weights before the engine is healthy
STOP_GRACE = 10.0
LOG_TAIL_CHARS = 2000


class ServeError(Exception):
    """The engine cannot be started; the message says why, with the tail of its log."""


def engine_model(spec: str | None) -> str:
    """What the engine loads for the user's model spec: a Hub id or a local folder."""
    resolved = resolve_spec(spec or "")
    if resolved.kind != "transformers":
        raise ServeError(
            f"--humanfix-serve starts an engine for a transformers model (an alias, a Hub id or "
            f"a local folder); {spec!r} is not one. Drop --humanfix-serve, or name such a model.")
    # Workers name the model exactly as the engine was given it (a folder is already absolute).
    return resolved.target


def serve_devices(settings: Settings) -> list[str | None]:
    """One engine per device; None is one engine on the CPU."""
    devices: list[str | None] = [*requested_or_visible(settings)]
    return devices or [None]


def engine_command(model: str, port: int, device: str | None, seed: int) -> list[str]:
    if importlib.util.find_spec("vllm") is not None:
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
                "--host", HOST, "--port", str(port), "--seed", str(seed)]
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", model,
               "--continuous-batching", "--host", HOST, "--port", str(port),
               "--default-seed", str(seed), "--log-level", "info"]
    if device is None:
        # On a CPU the paged KV cache would otherwise be sized from free RAM (10 GB and half a
        # minute at the first request); 64 pages of 256 tokens hold eight long repair chats.
        # bf16 weights run slowly on a CPU; the in-process backend uses fp32 there too.
        command += ["--dtype", "float32", "--cb-num-blocks", "64", "--cb-max-batch-tokens", "2048"]
    return command


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _die_with_parent() -> None:
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def log_tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return text[-LOG_TAIL_CHARS:].strip() or "(empty log)"


@dataclass
class Engine:
    model: str
    device: str | None
    port: int
    log_path: Path
    command: list[str]
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def endpoint(self) -> dict[str, str]:
        """What a worker needs to reach this engine: plain data for `workerinput`."""
        return {"base_url": self.base_url, "model": self.model}

    def start(self) -> None:
        env = dict(os.environ, HF_HUB_DISABLE_UPDATE_CHECK="1")
        if self.device is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.device
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = self.log_path.open("wb")
        except OSError as exc:
            raise ServeError(f"cannot write the engine log {self.log_path}: "
                             f"{exc.strerror or exc}") from None
        with log:
            log.write(f"# {shlex.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None)

    def healthy(self) -> bool:
        url = f"http://{HOST}:{self.port}/health"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                status: int = response.status
                return status == 200
        except (OSError, urllib.error.URLError):
            return False

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServeError(self._failure(f"exited with status {self.process.returncode}"))
            if time.monotonic() > deadline:
                raise ServeError(self._failure(f"was not healthy after {timeout:g} s"))
            time.sleep(0.25)

    def _failure(self, what: str) -> str:
        return (f"the model engine for {self.model!r} ({shlex.join(self.command[1:4])} ...) "
                f"{what}; its log is {self.log_path}, ending:\n{log_tail(self.log_path)}")

    def stop(self) -> None:
        """Ends the engine's whole process group, politely first."""
        if self.process is None or self.process.returncode is not None:
            return
        stop_group(self.process, STOP_GRACE)


def new_engine(model: str, log_path: Path, device: str | None, seed: int) -> Engine:
    port = free_port()
    return Engine(model, device, port, log_path, engine_command(model, port, device, seed))


def launch(model: str, log_path: Path, device: str | None = None, seed: int = 0,
           timeout: float = START_TIMEOUT) -> Engine:
    """Starts one engine and waits until it answers; stops it again if it never does."""
    engine = new_engine(model, log_path, device, seed)
    engine.start()
    try:
        engine.wait_healthy(timeout)
    except BaseException:
        engine.stop()
        raise
    return engine


class Serving:
    """The controller's engines, registered as a plugin so the run's end stops them."""

    def __init__(self, engines: list[Engine]) -> None:
        self.engines = engines
        atexit.register(self.stop)

    def endpoint_for(self, worker: str) -> dict[str, str]:
        """Workers gw0, gw1, ... go round the engines; a replacement worker gets a new id."""
        index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
        return self.engines[index % len(self.engines)].endpoint()

    def stop(self) -> None:
        for engine in self.engines:
            engine.stop()

    def pytest_unconfigure(self) -> None:
        self.stop()

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for engine in self.engines:
            terminalreporter.write_line(
                f"humanfix serve: engine pid {engine.pid} on {engine.device or 'cpu'} at "
                f"{engine.base_url}, log {engine.log_path}")


def serve(settings: Settings) -> Serving:
    """Starts every engine at once, then waits for each: a device that fails stops them all."""
    model = engine_model(settings.model)
    folder = Path(settings.report_dir)
    engines = []
    try:
        for index, device in enumerate(serve_devices(settings)):
            engine = new_engine(model, folder / f"server-{index}.log", device, settings.seed)
            engines.append(engine)
            engine.start()
        for engine in engines:
            engine.wait_healthy(START_TIMEOUT)
    except BaseException:
        for engine in engines:
            engine.stop()
        raise
    return Serving(engines)
