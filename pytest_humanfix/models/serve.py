"""`--humanfix-serve`: shared OpenAI-compatible engines (one per device), run by the controller.

Eight workers on one GPU then send eight concurrent requests that one engine batches, instead of
loading eight model copies. Three engines, chosen by `--humanfix-engine` (auto: vLLM with a GPU,
llama.cpp for a GGUF model without one, else `transformers serve`):

- vLLM, the GPU engine (its CPU build too, in an environment of its own: --humanfix-vllm-python);
- llama.cpp, the CPU engine for GGUF files: quantized kernels several times faster than
  dequantized fp32 transformers on the same cores, served by our own `llamacpp_server` on
  llama-cpp-python's bindings, whose parallel slots decode together. On a CPU the workers are
  shared out over one engine per core, or fewer (`cpu_layout`);
- `transformers serve` with continuous batching, the fallback; a GGUF model is dequantized once
  into a cached folder it can load.

Each runs in its own session (process group) on a free loopback port, with its log in the report
folder; it is stopped at the end of the run, on Ctrl-C (pytest still unconfigures), at
interpreter exit (atexit), and when the controller dies outright (the kernel sends it SIGKILL
through PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import functools
import hashlib
import importlib.util
import math
import os
import shlex
import shutil
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
from typing import TYPE_CHECKING, Any

from .. import computed_by
from ..devices import gpu_description, requested_or_visible
from ..processes import stop_group
from ..settings import Settings, user_cache_dir
from .base import ModelLoadError
from .openai_api import VLLM_STOP_STRINGS, worker_index
from .specs import ResolvedSpec, local_gguf, resolve_spec

if TYPE_CHECKING:
    import pytest

HOST = "127.0.0.1"
START_TIMEOUT = 900.0  # a first run may download the weights before the engine is healthy
STOP_GRACE = 10.0
LOG_TAIL_CHARS = 2000
# llama.cpp's context window: a repair chat of several rounds fits, and the KV cache of a small
# model stays small on a CPU (the file's own training context can be far larger).
LLAMACPP_CONTEXT = 8192
# transformers' paged KV cache: tokens a block holds (ContinuousBatchingConfig.page_size, its
# default, left as it is), and the share of blocks its FIFO scheduler keeps free (no new request
# starts below it: FIFOScheduler's default safety margin).
CB_BLOCK_TOKENS = 256
CB_FREE_SHARE = 0.15
# Bounds of what one request holds, for sizing that cache: HumanEvalFix's longest first prompt
# (Rust's, 4,741 characters of prompt, buggy code and tests, with the instruction) is under 2,048
# tokens; a repair round adds a reply and its feedback, whose text is cut at 1,200 characters
# (`feedback.FEEDBACK_CHARS`), under 512 tokens.
FIRST_PROMPT_TOKENS = 2048
FEEDBACK_TOKENS = 512


class ServeError(Exception):
    """The engine cannot be started; the message says why, with the tail of its log."""


@dataclass(frozen=True)
class EngineKind:
    """One engine `--humanfix-serve` can start: the modules that show it is installed, the
    install line named when it is not, the path that answers 200 once it is healthy, and
    environment defaults it runs with (the user's own values win)."""

    name: str
    modules: tuple[str, ...]
    install: str
    health_path: str
    environment: tuple[tuple[str, str], ...] = ()


# What a CPU's vLLM needs: a KV cache of a set size (vLLM otherwise reserves 90% of the
# machine's memory and refuses to start when that much is not free), and no bf16 or
# torch.compile, with which qwen-coder 0.5B took 390-435 s to be healthy here against 75 s.
VLLM_CPU_ARGS = ("--enforce-eager", "--dtype", "float32", "--kv-cache-memory-bytes", "2G")
ENGINE_KINDS = {
    "vllm": EngineKind("vllm", ("vllm",), "pip install 'pytest-humanfix[vllm]' (GPU), or for a "
                       "CPU vLLM's CPU build in an environment of its own: bash "
                       "scripts/setup-vllm, then --humanfix-vllm-python=.venv-vllm/bin/python",
                       "/health",
                       environment=(("VLLM_MAX_STOP_STRINGS", VLLM_STOP_STRINGS),)),
    # OpenMP threads that spin at each barrier lose most of their time to any other busy process
    # (the workers' sandboxes): 78 tokens took 33 s spinning and 4 s passive with 2 threads on 2
    # loaded cores.
    "llamacpp": EngineKind("llamacpp", ("llama_cpp",),
                           "pip install 'pytest-humanfix[llamacpp]'", "/v1/models",
                           environment=(("OMP_WAIT_POLICY", "PASSIVE"),)),
    "transformers": EngineKind("transformers", ("transformers", "fastapi", "uvicorn"),
                               "pip install 'pytest-humanfix[serving]'", "/health"),
}


def installed(kind: EngineKind, python: str | None = None) -> bool:
    """Whether `kind` is importable here, or by the interpreter `python` when one is named."""
    if python is None:
        return all(importlib.util.find_spec(module) is not None for module in kind.modules)
    check = ("import importlib.util, sys; "
             "sys.exit(not all(importlib.util.find_spec(m) for m in sys.argv[1:]))")
    try:
        return subprocess.run([python, "-c", check, *kind.modules], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def engine_python(settings: Settings, engine: str) -> str | None:
    """The interpreter the user named for `engine`, or None: this one."""
    return settings.vllm_python if engine == "vllm" else None


def served_spec(spec: str | None) -> ResolvedSpec:
    """The user's model spec, checked to be something an engine can load."""
    resolved = resolve_spec(spec or "")
    if resolved.kind != "transformers":
        raise ServeError(
            f"--humanfix-serve starts an engine for a transformers model (an alias, a Hub id, "
            f"a local folder or a .gguf file); {spec!r} is not one. Drop --humanfix-serve, or "
            f"name such a model.")
    return resolved


def choose_engine(settings: Settings, resolved: ResolvedSpec, gpus: bool) -> str:
    """The engine for this run: the user's, which must be installed and able to load the model,
    or the best one installed."""
    if settings.engine != "auto":
        kind = ENGINE_KINDS[settings.engine]
        python = engine_python(settings, kind.name)
        if not installed(kind, python):
            where = f" for {python}" if python else ""
            raise ServeError(f"--humanfix-engine {kind.name}: the engine is not installed"
                             f"{where}; install it with `{kind.install}`.")
        if kind.name == "llamacpp" and resolved.gguf_file is None:
            raise ServeError(
                f"--humanfix-engine llamacpp serves GGUF files; {settings.model!r} is not one. "
                "Name a .gguf file (or a folder holding one), or choose another engine.")
        return kind.name
    if gpus and installed(ENGINE_KINDS["vllm"], settings.vllm_python):
        return "vllm"
    if not gpus and resolved.gguf_file is not None and installed(ENGINE_KINDS["llamacpp"]):
        return "llamacpp"
    return "transformers"


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


def dequantized_folder(gguf: Path, cache_root: Path | None = None) -> Path:
    """A folder `transformers serve` can load, made once per GGUF file: transformers dequantizes
    the file into fp32 weights, saved beside its tokenizer. The folder's name carries the file's
    size and modification time, so a changed file gets a new folder; it is written under a
    temporary name and renamed, so an interrupted conversion never leaves a half folder."""
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    folder = (cache_root or user_cache_dir("dequantized")) / f"{gguf.stem}-{key.hexdigest()[:12]}"
    if (folder / "config.json").is_file():
        return folder
    partial = folder.with_name(folder.name + f".partial-{os.getpid()}")
    done = subprocess.run([sys.executable, "-m", f"{__package__}.dequantize", str(gguf),
                           str(partial)], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise ServeError(f"cannot convert {gguf} into a folder transformers serve loads "
                         f"(status {done.returncode}): {done.stderr.strip()[-LOG_TAIL_CHARS:]}")
    os.replace(partial, folder)
    return folder


@dataclass(frozen=True)
class ServedModel:
    """What one engine loads (`source`: a Hub id, a folder or a GGUF file) and the name the
    workers ask it for."""

    engine: str
    source: str
    name: str


def served_model(settings: Settings, gpus: bool) -> ServedModel:
    resolved = served_spec(settings.model)
    engine = choose_engine(settings, resolved, gpus)
    try:
        # A GGUF file still on the Hub is fetched here, once, for every engine to load.
        resolved = local_gguf(resolved)
    except ModelLoadError as exc:
        raise ServeError(str(exc)) from None
    gguf = resolved.gguf_path
    if gguf is None:
        # Workers name the model exactly as the engine was given it (a folder is absolute).
        return ServedModel(engine, resolved.target, resolved.target)
    if engine in ("transformers", "vllm"):
        # vLLM 0.32 takes no GGUF file offline: it reads the tokenizer from the Hub repo of its
        # base model, and its CPU build has no kernels for GGUF's quantized types.
        folder = str(dequantized_folder(Path(gguf)))
        return ServedModel(engine, folder, folder)
    return ServedModel(engine, str(gguf), str(gguf))


@dataclass(frozen=True)
class CpuLayout:
    """llama.cpp on a CPU: `engines` engines of `threads` threads and `slots` slots each."""

    engines: int
    threads: int
    slots: int


def cpu_layout(workers: int) -> CpuLayout:
    """How `workers` xdist workers share the cores. Up to one per core, each worker gets an
    engine of its own with the cores shared out. Beyond, there is one engine per core, on one
    thread, with a slot for each of its workers, decoded together: a slot's reply depends on
    what else its step decodes only when the step runs on several threads. A decode step on one
    thread also wastes nothing at barriers, where threads on a busy CPU wait for each other.

    Measured on 2 cores shared with other work (load 6-9), qwen-coder 0.5B, first 10 tasks, no
    repair round (`benchmarks/engine/bench_cpu_levers.py --tasks 10`), completion tokens/s over
    the whole run: -n 2, two engines of one thread, 15.0; -n 4, the same two engines with two
    slots each, 11.1 (no gain here: on one thread a second slot's token seems to cost nearly a step
    of its own, and four workers cost more to run); -n 1, one engine of two threads,
    7.4; llama.cpp's own server with two threads and two slots in one batch, 6.8, and 2 of 10
    replies changed. So the default is -n as many as the cores, which this layout makes an
    engine of one thread per core; every layout here gave plain -n 2's replies.

    The same rule on more cores, for a 0.5B (1.5B) Q4_K_M model: the weights are mapped, so
    the page cache holds one copy (0.5 GB; 1.1 GB) whatever the engine count, besides the few
    tensors each engine repacks (28 MiB for the 0.5B); each slot's KV
    cells are 12 KiB (28 KiB) a token, 96 MiB (224 MiB) for its 8192 tokens. 8 cores at -n 8
    are 8 engines of one thread, at -n 16 8 engines of two slots; 16 cores at -n 16 are 16
    engines. A one-thread engine decoded 12.6 tokens/s of the 0.5B and 6.1 of the 1.5B here,
    reading every weight once a step: 16 engines stream 16 x 12.6 x 0.5 GB = 100 GB/s of
    weights (1.5B: 16 x 6.1 x 1.1 GB = 107 GB/s), about what a server's memory gives; beyond
    that, slots, which share one read of the weights between replies, are what scales."""
    cores = len(os.sched_getaffinity(0))
    if workers <= cores:
        engines = max(1, workers)
        return CpuLayout(engines, max(1, cores // engines), 1)
    return CpuLayout(cores, 1, -(-workers // cores))


def request_tokens(settings: Settings) -> int:
    """The most tokens one request of this run holds, prompt and reply: --humanfix-max-length,
    or the longest first prompt, each repair round's reply and feedback, and the last reply."""
    if settings.max_length is not None:
        return settings.max_length
    return FIRST_PROMPT_TOKENS + settings.iters * (settings.max_new_tokens + FEEDBACK_TOKENS) \
        + settings.max_new_tokens


def cache_blocks(requests: int, tokens: int) -> int:
    """Blocks of transformers' paged KV cache that hold `requests` concurrent requests of up to
    `tokens` tokens each with the scheduler's free share left over, so that none waits for
    another to end. Sized from free memory instead, the cache took 69 GB of an H100 for
    0.5B-model replies, and on a CPU 10 GB and half a minute at the first request."""
    return math.ceil(requests * -(-tokens // CB_BLOCK_TOKENS) / (1 - CB_FREE_SHARE))


def engine_command(model: ServedModel, port: int, device: str | None, seed: int,
                   engine_args: tuple[str, ...] = (), layout: CpuLayout | None = None,
                   tools: bool = False, kv_blocks: int | None = None,
                   python: str | None = None) -> list[str]:
    """The engine's command line; `device` is one CUDA device, several ("0,1": one vLLM engine
    over them, tensor-parallel), or None (the CPU); `layout` is a llama.cpp engine's share of
    the cores (default: all of them, one slot); `tools`: the engine must answer tool calls
    (--humanfix-agent tools); `kv_blocks`: the blocks of transformers' KV cache
    (`cache_blocks`; default: one request of `request_tokens` under default settings);
    `python`: the interpreter that runs it (default: this one). The user's `engine_args` come
    last, so each engine's parser lets them override a default set here."""
    return base_command(model, port, device, seed, layout, tools, kv_blocks, python) \
        + list(engine_args)


def base_command(model: ServedModel, port: int, device: str | None, seed: int,
                 layout: CpuLayout | None = None, tools: bool = False,
                 kv_blocks: int | None = None, python: str | None = None) -> list[str]:
    if model.engine == "vllm":
        command = [python or sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model",
                   model.source, "--served-model-name", model.name, "--host", HOST,
                   "--port", str(port), "--seed", str(seed)]
        gpus = len(device.split(",")) if device else 1
        if gpus > 1:
            command += ["--tensor-parallel-size", str(gpus)]
        if device is None:
            command += VLLM_CPU_ARGS
        if tools:
            # vLLM answers `tools` only with a parser for the model's calls; the Hermes form is
            # the one Qwen2.5's template asks for (and the one our llama.cpp engine reads).
            command += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
        return command
    if model.engine == "llamacpp":
        layout = layout or CpuLayout(1, len(os.sched_getaffinity(0)), 1)
        return [sys.executable, "-m", f"{__package__}.llamacpp_server", "--model", model.source,
                "--model_alias", model.name, "--host", HOST, "--port", str(port),
                "--n_threads", str(layout.threads), "--parallel", str(layout.slots),
                "--n_ctx", str(LLAMACPP_CONTEXT), "--seed", str(seed)]
    blocks = kv_blocks or cache_blocks(1, request_tokens(Settings()))
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", model.source,
               "--continuous-batching", "--host", HOST, "--port", str(port),
               "--default-seed", str(seed), "--log-level", "info", "--cb-num-blocks", str(blocks)]
    if device is None:
        # bf16 weights run slowly on a CPU; the in-process backend uses fp32 there too.
        command += ["--dtype", "float32", "--cb-max-batch-tokens", "2048"]
    return command


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _die_with_parent() -> None:
    # SIGKILL, not SIGTERM: a server busy in native code (llama.cpp's decode loop) may not run
    # its Python signal handler until the request ends; nothing is left for it to save.
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
    # Set for this engine, under the user's own environment (which wins).
    environment: tuple[tuple[str, str], ...] = ()
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

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
    def described(self) -> dict[str, Any]:
        """What computes this engine's replies that the engine does not say itself: its GPU and
        determinism settings; and all of it for `transformers serve`, which says nothing
        (run in this environment: its versions and its CPU kernels are this process's)."""
        described: dict[str, Any] = {}
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

    def endpoint(self) -> dict[str, Any]:
        """What a worker needs to reach this engine, and what the engine does not say of itself
        (`described`): plain data for `workerinput`."""
        endpoint: dict[str, Any] = {"base_url": self.base_url, "model": self.model.name,
                                    "engine": self.model.engine}
        if self.described:
            endpoint["computed_by"] = self.described
        return endpoint

    def start(self) -> None:
        env = dict(ENGINE_KINDS[self.model.engine].environment + self.environment)
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
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None)

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
        """Ends the engine's whole process group, politely first."""
        if self.process is None or self.process.returncode is not None:
            return
        stop_group(self.process, STOP_GRACE)


def new_engine(model: ServedModel, log_path: Path, device: str | None,
               settings: Settings, layout: CpuLayout | None = None, workers: int = 1) -> Engine:
    """One engine, not started; `workers`: the xdist workers it serves, each with one request
    at a time."""
    port = free_port()
    # vLLM's batch-invariant kernels: a reply no longer depends on what else its batch holds.
    deterministic = (("VLLM_BATCH_INVARIANT", "1"),) \
        if model.engine == "vllm" and device is not None and settings.determinism else ()
    return Engine(model, device, port, log_path,
                  engine_command(model, port, device, settings.seed, settings.engine_args,
                                 layout, tools=settings.agent == "tools",
                                 kv_blocks=cache_blocks(workers, request_tokens(settings)),
                                 python=engine_python(settings, model.engine)), deterministic)


def launch(settings: Settings, log_path: Path, device: str | None = None,
           timeout: float = START_TIMEOUT) -> Engine:
    """Starts one engine for `settings.model` and waits until it answers; stops it again if it
    never does."""
    engine = new_engine(served_model(settings, gpus=device is not None), log_path, device,
                        settings)
    engine.start()
    try:
        engine.wait_healthy(timeout)
    except BaseException:
        engine.stop()
        raise
    return engine


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

    def endpoint_for(self, worker: str) -> dict[str, Any]:
        """Workers gw0, gw1, ... go round the engines; a replacement worker gets a new id."""
        return self.engines[worker_index(worker) % len(self.engines)].endpoint()

    def stop(self) -> None:
        for engine in self.engines:
            engine.stop()

    def pytest_unconfigure(self) -> None:
        self.stop()

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for engine in self.engines:
            terminalreporter.write_line(
                f"humanfix serve: {engine.model.engine} engine pid {engine.pid} on "
                f"{engine.device or 'cpu'} at {engine.base_url}, log {engine.log_path}")


def serve(settings: Settings, workers: int = 1) -> Serving:
    """Starts every engine at once, then waits for each: a device that fails stops them all.
    `workers` is the xdist worker count, which sets llama.cpp's layout on a CPU."""
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
                                served)
            engines.append(engine)
            engine.start()
        for engine in engines:
            engine.wait_healthy(START_TIMEOUT)
    except BaseException:
        for engine in engines:
            engine.stop()
        raise
    return Serving(engines, settings.serve_layout, settings.engine_args, layout)
