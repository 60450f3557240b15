"""The engines `--humanfix-serve` can start (vLLM, our llama.cpp engine, `transformers serve`),
whether each is installed, and the one a run gets: the user's, or the best one installed for
the model and the devices (auto: vLLM with a GPU, llama.cpp for a GGUF model without one, else
`transformers serve`, for which a GGUF file is dequantized once into a cached folder).
See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ...settings import Settings, user_cache_dir
from ..base import ModelLoadError
from ..openai_refusals import VLLM_STOP_STRINGS
from ..specs import ResolvedSpec, local_gguf, resolve_spec

LOG_TAIL_CHARS = 2000


class ServeError(Exception):
    """The engine cannot be started; the message says why, with the tail of its log."""


@dataclass(frozen=True)
class EngineVariable:
    """An environment variable an engine runs with (the user's own value wins), set only for
    versions of the engine from `since` on: vLLM warns of every VLLM_ variable it does not
    know, and under --fail-on-environ-validation refuses to start (vllm/envs.py,
    validate_environ)."""

    name: str
    value: str
    since: tuple[int, ...] = ()


@dataclass(frozen=True)
class EngineKind:
    """One engine `--humanfix-serve` can start: the modules that show it is installed (the
    first one's distribution gives its version), the install line named when it is not, the
    path that answers 200 once it is healthy, the environment it runs with, and the variables
    that point its compile and autotune caches into a folder of the user's cache
    (`cache_environment`)."""

    name: str
    modules: tuple[str, ...]
    install: str
    health_path: str
    environment: tuple[EngineVariable, ...] = ()
    caches: tuple[tuple[str, str], ...] = ()  # (variable, its folder)


# What a CPU's vLLM needs: no bf16 or torch.compile, with which qwen-coder 0.5B took 390-435 s
# to be healthy here against 75 s; and a KV cache of a set size (vLLM otherwise reserves 90% of
# the machine's memory and refuses to start when that much is not free), sized to the run by
# `commands.vllm_sizing`, else CPU_KV_CACHE.
VLLM_CPU_ARGS = ("--enforce-eager", "--dtype", "float32")
CPU_KV_CACHE = "2G"
ENGINE_KINDS = {
    "vllm": EngineKind(
        "vllm", ("vllm",), "pip install 'pytest-humanfix[vllm]' (GPU), or for a CPU vLLM's CPU "
        "build in an environment of its own: bash scripts/setup-vllm, then "
        "--humanfix-vllm-python=.venv-vllm/bin/python", "/health",
        environment=(
            # Read from vLLM 0.28.0 on (vllm/envs.py); 0.26.0 and 0.27.1 do not know it, and
            # their servers take 4 stop strings whatever it says.
            EngineVariable("VLLM_MAX_STOP_STRINGS", VLLM_STOP_STRINGS, since=(0, 28)),
            # FlashInfer's top-k/top-p sampler, which no request of a run takes (none sets top-k
            # or top-p, each carries a seed), is built with nvcc at the engine's start, where the
            # model runner's warm-up samples with top-k and top-p: by vLLM 0.26's source, the
            # 100 s after its memory report on a fresh H200 (docs/benchmarks.md, "What runs in
            # the 100 s").
            EngineVariable("VLLM_USE_FLASHINFER_SAMPLER", "0")),
        # vLLM puts inductor's and Triton's caches of its compiled graphs under its own root
        # (vllm/compilation/decorators.py); Triton's is named for the kernels an eager engine
        # compiles, FlashInfer's for its JIT-built modules.
        caches=(("VLLM_CACHE_ROOT", "vllm"), ("TRITON_CACHE_DIR", "triton"),
                ("FLASHINFER_WORKSPACE_BASE", "flashinfer"))),
    # OpenMP threads that spin at each barrier lose most of their time to any other busy process
    # (the workers' sandboxes): 78 tokens took 33 s spinning and 4 s passive with 2 threads on 2
    # loaded cores.
    "llamacpp": EngineKind("llamacpp", ("llama_cpp",),
                           "pip install 'pytest-humanfix[llamacpp]'", "/v1/models",
                           environment=(EngineVariable("OMP_WAIT_POLICY", "PASSIVE"),)),
    "transformers": EngineKind("transformers", ("transformers", "fastapi", "uvicorn"),
                               "pip install 'pytest-humanfix[serving]'", "/health"),
}
# Asked of the engine's interpreter: the version of the distribution that installs the module
# (vllm-cpu installs vllm), from its metadata, without importing it.
VERSION_PROBE = ("import importlib.metadata as m, sys; "
                 "names = m.packages_distributions().get(sys.argv[1]); "
                 "print(m.version(names[0]) if names else '')")


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


@functools.cache
def engine_version(kind: EngineKind, python: str | None = None) -> str | None:
    """The installed version of `kind` (of the interpreter `python` when one is named), or None
    where none is found."""
    module = kind.modules[0]
    if python is None:
        names = importlib.metadata.packages_distributions().get(module)
        return importlib.metadata.version(names[0]) if names else None
    try:
        said = subprocess.run([python, "-c", VERSION_PROBE, module], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return said or None


def version_numbers(version: str | None) -> tuple[int, ...] | None:
    """The leading release numbers of a version ("0.26.0+cu130": (0, 26, 0)); None for none."""
    found = re.match(r"\d+(?:\.\d+)*", version or "")
    return tuple(int(part) for part in found.group().split(".")) if found else None


def engine_environment(kind: EngineKind, version: str | None) -> tuple[tuple[str, str], ...]:
    """The variables of `kind` that its `version` knows; of an unknown version, only those that
    every version knows."""
    numbers = version_numbers(version)
    return tuple((variable.name, variable.value) for variable in kind.environment
                 if not variable.since or (numbers is not None and numbers >= variable.since))


def cache_environment(kind: EngineKind, root: Path | None = None) -> tuple[tuple[str, str], ...]:
    """Each of `kind`'s compile and autotune caches in a folder of its own under `root` (the
    user's pytest-humanfix cache, `engines`), kept and reused by every later run."""
    root = root or user_cache_dir("engines")
    return tuple((variable, str(root / folder)) for variable, folder in kind.caches)


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
    done = subprocess.run([sys.executable, "-m", "pytest_humanfix.models.dequantize", str(gguf),
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
