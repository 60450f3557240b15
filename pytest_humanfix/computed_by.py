"""What computed a run's replies (`computed_by` in every record, the summary and JUnit): the
engine and its build, the kernels it runs, the device, the dtype and the determinism settings.

A greedy reply is a function of its prompt and of the kernels that computed it: two builds that
round differently give other replies (docs/trust.md, "Same command, same number"). So every
run says what computed it, and a gate or merge across two such descriptions says where they
differ. Backend-free: the engines hand in their own modules.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TypedDict

# The x86-64-v3 level (AVX2, FMA, F16C, BMI2 and what they imply), the one kernel set
# scripts/ggml-cmake-args builds by default: every machine that has it computes the same replies.
PORTABLE_KERNELS = frozenset({"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"})
PORTABLE_NAME = "x86-64-v3"
# ggml's system-info names that are build features rather than instruction sets.
GGML_BUILD_FEATURES = frozenset({"LLAMAFILE", "OPENMP", "REPACK", "ACCELERATE", "BLAS",
                                 "KLEIDIAI", "SVE_CNT", "MATMUL_INT8"})
# Fields that describe the machine or the layout, not the arithmetic: a run on another CPU with
# the same portable kernels, or with another thread count per engine (the reproducibility test
# runs both), computes the same replies. They are shown, never compared.
NOT_COMPARED = ("host", "threads")
UNKNOWN = "unknown"


class Host(TypedDict):
    cpu: str
    cores: int
    machine: str


class ComputedBy(TypedDict, total=False):
    """A record's `computed_by` (docs/schema.md); each engine says what it knows."""

    engine: str
    version: str
    kernels: str
    build: str
    device: str
    dtype: str
    torch: str
    cuda: str | None
    attention: str
    threads: int
    determinism: str | dict[str, str]
    note: str
    host: Host
    replayed: ComputedBy | None  # a replay's: what the records say computed them


def cpu_name() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it (else the platform's word for it)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or UNKNOWN


def host() -> Host:
    """The machine, shown beside what computed the replies."""
    return Host(cpu=cpu_name(), cores=len(os.sched_getaffinity(0)), machine=platform.machine())


def _ggml_enabled(system_info: str) -> set[str]:
    """What a ggml build's system info says is on ("CPU : SSE3 = 1 | ... | LLAMAFILE = 1 |")."""
    return set(re.findall(r"([A-Z0-9_]+) = 1", system_info))


def ggml_kernels(system_info: str) -> list[str]:
    """The instruction sets a ggml build computes with, build features left out."""
    return sorted(_ggml_enabled(system_info) - GGML_BUILD_FEATURES)


def ggml_build_features(system_info: str) -> list[str]:
    return sorted(_ggml_enabled(system_info) & GGML_BUILD_FEATURES)


def kernel_set(kernels: list[str]) -> str:
    """`x86-64-v3` for the portable build's kernels; otherwise `not portable`."""
    return PORTABLE_NAME if set(kernels) == PORTABLE_KERNELS else "not portable"


def compiler_of(library: Path) -> str:
    """The compiler an ELF library was built with, from its `.comment` section (GCC and Clang
    write their name and version there); `unknown` when it says nothing."""
    try:
        data = library.read_bytes()
    except OSError:
        return UNKNOWN
    found = re.search(rb"(GCC: \([^)]*\) [0-9.]+|clang version [0-9.]+)", data)
    return found.group(1).decode() if found else UNKNOWN


def llamacpp(llama_cpp: ModuleType, threads: int, model_description: str) -> ComputedBy:
    """Our llama.cpp engine: llama-cpp-python's version, the kernels of the ggml it loaded
    (its CPU backend, which does all the arithmetic), their compiler, the model's quantization."""
    import importlib.metadata

    info = llama_cpp.llama_print_system_info().decode(errors="replace")
    kernels = ggml_kernels(info)
    library = Path(llama_cpp.llama_cpp._lib._name)
    cpu_backend = next(iter(sorted(library.parent.glob("libggml-cpu*.so*"))), library)
    return {"engine": "llamacpp",
            "version": f"llama-cpp-python {importlib.metadata.version('llama_cpp_python')}",
            "kernels": kernel_set(kernels) + ": " + " ".join(kernels),
            "build": " ".join(ggml_build_features(info)) + f"; {compiler_of(cpu_backend)}",
            "device": "cpu", "dtype": model_description, "threads": threads,
            # Why every reply is a function of its prompt alone: our llama.cpp engine's rules.
            "determinism": "by construction: prompts in fixed chunks, own KV cells per slot, "
                           "shared steps on one thread",
            "host": host()}


def torch_device(torch: ModuleType, device: str) -> str:
    """The device as its kernels see it: a GPU's name and compute capability, or the CPU kernel
    level torch dispatches to at run time (an AVX2 and an AVX-512 machine run other kernels)."""
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        return f"{torch.cuda.get_device_name()} (sm_{major}{minor})"
    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: UNKNOWN)()
    return f"cpu ({capability} kernels)"


def transformers_in_process(torch: ModuleType, transformers_version: str, device: str,
                            dtype: str, attention: str, determinism: dict[str, str],
                            threads: int) -> ComputedBy:
    """The in-process transformers backend on one device."""
    return {"engine": "transformers", "version": f"transformers {transformers_version}",
            # str(): torch's version is a str subclass, which xdist's channel cannot send.
            "torch": str(torch.__version__), "cuda": str(torch.version.cuda or "") or None,
            "device": torch_device(torch, device), "dtype": dtype, "attention": attention,
            "threads": threads, "determinism": determinism, "host": host()}


def transformers_served(transformers_version: str, torch_version: str, device: str,
                        dtype: str) -> ComputedBy:
    """`transformers serve` as --humanfix-serve started it: the server says nothing of itself,
    so the run that started it in its own environment says what it knows."""
    return {"engine": "transformers", "version": f"transformers {transformers_version}",
            "torch": torch_version, "device": device, "dtype": dtype,
            "note": "transformers serve, described by the run that started it", "host": host()}


def unknown(engine: str, why: str) -> ComputedBy:
    """A server that says nothing of what it runs (a hosted API, a server we did not start)."""
    return {"engine": engine, "version": UNKNOWN, "device": UNKNOWN, "note": why}


def compared(computed_by: Mapping[str, object] | None) -> dict[str, object]:
    """The fields that decide the arithmetic."""
    return {key: value for key, value in (computed_by or {}).items() if key not in NOT_COMPARED}


def differences(found: Mapping[str, object] | None, wanted: Mapping[str, object] | None
                ) -> list[str]:
    """`field: X there, Y here` for each compared field that differs; one line when either side
    was not recorded (records written before `computed_by` existed)."""
    if not found or not wanted:
        return [] if found == wanted else [
            f"computed_by: {describe(found)} there, {describe(wanted)} here"]
    there, here = compared(found), compared(wanted)
    return [f"{key}: {there.get(key)!r} there, {here.get(key)!r} here"
            for key in dict.fromkeys([*here, *there]) if there.get(key) != here.get(key)]


def describe(computed_by: Mapping[str, object] | None) -> str:
    """One line: engine, version, kernels or device, dtype, threads, determinism."""
    if not computed_by:
        return "not recorded"
    parts = [str(computed_by.get("engine", UNKNOWN))]
    if computed_by.get("version"):
        parts.append(str(computed_by["version"]))
    for key in ("kernels", "build", "device", "dtype", "torch", "cuda", "attention"):
        if computed_by.get(key):
            parts.append(f"{key} {computed_by[key]}")
    if computed_by.get("threads"):
        parts.append(f"{computed_by['threads']} thread(s) per engine")
    determinism = computed_by.get("determinism")
    if isinstance(determinism, dict):
        determinism = ", ".join(f"{k}={v}" for k, v in determinism.items())
    if determinism:
        parts.append(f"determinism: {determinism}")
    host = computed_by.get("host")
    cpu = host.get("cpu") if isinstance(host, dict) else None
    if cpu:
        parts.append(f"on {cpu}")
    return "; ".join(parts)
