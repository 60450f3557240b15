"""One engine started: its processes in a process group of their own on a free loopback
port, its log in the report folder, waited for until healthy, and stopped with its
whole group; when the controller dies outright, its `watchdog` kills the group. See
docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import ctypes
import functools
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
from importlib import metadata
from pathlib import Path
from typing import BinaryIO, NotRequired, TypedDict

from ... import computed_by
from ...computed_by import ComputedBy
from ...devices import gpu_description
from ...processes import stop_group
from ...settings import Settings
from . import watchdog
from .commands import FIRST_PROMPT_TOKENS, HOST, CpuLayout, Work, engine_command, request_tokens
from .kinds import (
    ENGINE_KINDS,
    LOG_TAIL_CHARS,
    ServedModel,
    ServeError,
    cache_environment,
    engine_environment,
    engine_python,
    engine_version,
    served_model,
)

START_TIMEOUT = 900.0  # a first run may download the weights before the engine is healthy
STOP_GRACE = 10.0
# The controller's ends of its engines' watchdog pipes. A child forked without exec (os.fork,
# multiprocessing's fork) would hold them open, and the watchdogs would outwait the controller.
_LIFELINES: set[int] = set()


def _close_lifelines() -> None:
    for lifeline in _LIFELINES:
        os.close(lifeline)
    _LIFELINES.clear()


os.register_at_fork(after_in_child=_close_lifelines)


class Endpoint(TypedDict):
    """What a worker needs to reach a shared engine: plain JSON, sent through `workerinput`."""

    base_url: str
    model: str
    engine: str
    computed_by: NotRequired[ComputedBy]  # what the engine does not say of itself


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _die_with_parent() -> None:
    # The engine's first process dies with the controller by itself, before its watchdog is up
    # too; the watchdog ends the rest of the group. SIGKILL, not SIGTERM: a server busy in native
    # code (llama.cpp's decode loop) may not run its Python signal handler until the request
    # ends, and nothing is left for it to save.
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def log_tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return text[-LOG_TAIL_CHARS:].strip() or "(empty log)"


@dataclass
class Engine:
    model: ServedModel
    device: str | None
    port: int
    log_path: Path
    command: list[str]
    # Set for this engine, under the user's own environment (which wins): what changes how its
    # replies are computed (`described`)...
    environment: tuple[tuple[str, str], ...] = ()
    # ... and what does not: its kind's variables for its version, and its caches' folders.
    defaults: tuple[tuple[str, str], ...] = ()
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    # The group's watchdog, and the end of its pipe that only this process holds.
    watchdog_process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    lifeline: int | None = field(default=None, repr=False)
    # Its group ended: a later stop (atexit after pytest_unconfigure) signals nothing, since
    # the group's id may by then belong to another process.
    stopped: bool = field(default=False, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @functools.cached_property
    def gpu(self) -> str:
        """The engine's GPU as nvidia-smi names it: asked once, however many workers it has."""
        assert self.device is not None
        return gpu_description(self.device)

    @property
    def described(self) -> ComputedBy:
        """What computes this engine's replies that the engine does not say itself: its GPU and
        determinism settings; and all of it for `transformers serve`, which says nothing
        (run in this environment: its versions and its CPU kernels are this process's)."""
        described: ComputedBy = {}
        if self.device is not None:
            variables = dict(self.environment)
            variables.update((k, v) for k, v in os.environ.items() if k in variables)
            described = {"device": self.gpu, "determinism": variables or "off"}
        if self.model.engine == "transformers":
            import torch

            described.update(computed_by.transformers_served(
                metadata.version("transformers"), str(torch.__version__),
                self.gpu if self.device is not None else computed_by.torch_device(torch, "cpu"),
                # base_command: float32 on a CPU, the checkpoint's own dtype on a GPU.
                "float32" if self.device is None else "auto"))
        return described

    def endpoint(self) -> Endpoint:
        """What a worker needs to reach this engine, and what the engine does not say of itself
        (`described`): plain data for `workerinput`."""
        endpoint = Endpoint(base_url=self.base_url, model=self.model.name,
                            engine=self.model.engine)
        if self.described:
            endpoint["computed_by"] = self.described
        return endpoint

    def start(self) -> None:
        env = dict(self.defaults + self.environment)
        env.update(os.environ, HF_HUB_DISABLE_UPDATE_CHECK="1")
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
            try:
                self.process = subprocess.Popen(
                    self.command, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, env=env, process_group=0,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None)
            except OSError as exc:
                raise ServeError(f"cannot start the {self.model.engine} engine "
                                 f"{self.command[0]!r}: {exc.strerror or exc}") from None
            self._watch_group(log)

    def _watch_group(self, log: BinaryIO) -> None:
        """Starts the watchdog in the engine's group, which is why that group is a new one of
        this session and not a session of its own: a process joins only a group of its own
        session. The other end of its pipe is inherited by no child (os.pipe's are not, and
        a fork closes it: `_close_lifelines`), so it ends when this process does."""
        assert self.process is not None
        read_end, self.lifeline = os.pipe()
        _LIFELINES.add(self.lifeline)
        ready_end, said_end = os.pipe()
        failure = None
        try:
            # Run as a file, isolated: the watchdog needs no import path of the package.
            self.watchdog_process = subprocess.Popen(
                [sys.executable, "-I", watchdog.__file__, str(read_end), str(said_end)],
                pass_fds=(read_end, said_end), process_group=self.process.pid,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        except OSError as exc:
            failure = exc.strerror or str(exc)
        finally:
            os.close(read_end)
            os.close(said_end)
        # Until it ignores SIGTERM, a stop (a failed launch, Ctrl-C) would end it first.
        with os.fdopen(ready_end, "rb") as ready:
            if self.watchdog_process is not None and not ready.read(1):
                failure = f"it exited with status {self.watchdog_process.wait()}"
        if failure is not None and self.process.poll() is None:
            # An engine no watchdog would end: not started. One that has ended already is
            # left to wait_healthy, which says why.
            stop_group(self.process)
            self._end_watch()
            raise ServeError(f"cannot start the {self.model.engine} engine's watchdog: "
                             f"{failure}")

    def _end_watch(self) -> None:
        """Closes the watchdog's pipe, which ends the watchdog and whatever is left of the
        group, and reaps it."""
        if self.lifeline is not None:
            _LIFELINES.discard(self.lifeline)
            os.close(self.lifeline)
            self.lifeline = None
        if self.watchdog_process is not None:
            self.watchdog_process.wait()

    def healthy(self) -> bool:
        url = f"http://{HOST}:{self.port}{ENGINE_KINDS[self.model.engine].health_path}"
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
        return (f"the {self.model.engine} engine for {self.model.source!r} "
                f"({shlex.join(self.command[1:4])} ...) {what}; its log is {self.log_path}, "
                f"ending:\n{log_tail(self.log_path)}")

    def stop(self) -> None:
        """Ends the engine's whole process group, politely first, and waits until it has
        ended: also when the engine's own process died first (reaped or not), since what it
        started (vLLM's workers, say) may still hold a GPU or the port."""
        if self.process is None or self.stopped:
            return
        spared = [self.watchdog_process.pid] if self.watchdog_process is not None else []
        left = stop_group(self.process, STOP_GRACE, spared)
        self.stopped = not left
        self._end_watch()
        if left:  # said, not raised: stop runs while an error is raised and for each engine
            print(f"humanfix serve: WARNING: the {self.model.engine} engine's processes "
                  f"{left} did not end after SIGKILL (stuck in the kernel?)", file=sys.stderr)


def new_engine(model: ServedModel, log_path: Path, device: str | None,
               settings: Settings, layout: CpuLayout | None = None, workers: int = 1,
               first_prompt: int = FIRST_PROMPT_TOKENS) -> Engine:
    """One engine, not started; `workers`: the xdist workers it serves, each with its task's
    request and those it asks ahead (--humanfix-ask-ahead) at a time, whose first prompts take
    at most `first_prompt` tokens (`prompt_tokens`)."""
    port = free_port()
    kind = ENGINE_KINDS[model.engine]
    python = engine_python(settings, model.engine)
    # vLLM's batch-invariant kernels: a reply no longer depends on what else its batch holds.
    deterministic = (("VLLM_BATCH_INVARIANT", "1"),) \
        if model.engine == "vllm" and device is not None and settings.determinism else ()
    # Only a variable a version may not know needs the version asked for.
    version = engine_version(kind, python) if any(v.since for v in kind.environment) else None
    return Engine(model, device, port, log_path,
                  engine_command(model, port, device, settings.seed, settings.engine_args,
                                 layout, tools=settings.agent == "tools",
                                 work=Work(workers, request_tokens(settings, first_prompt),
                                            settings.ask_ahead),
                                 python=python), deterministic,
                  defaults=engine_environment(kind, version) + cache_environment(kind))


def launch(settings: Settings, log_path: Path, device: str | None = None,
           timeout: float = START_TIMEOUT, workers: int = 1) -> Engine:
    """Starts one engine for `settings.model`, sized for `workers` workers, and waits until it
    answers; stops it again if it never does."""
    engine = new_engine(served_model(settings, gpus=device is not None), log_path, device,
                        settings, workers=workers)
    try:
        engine.start()
        engine.wait_healthy(timeout)
    except BaseException:
        engine.stop()
        raise
    return engine
