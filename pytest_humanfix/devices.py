"""GPUs: which are visible, which the user asked for, and a pool that hands them out.

The controller hands each worker one entry for its CUDA_VISIBLE_DEVICES, set before torch touches
CUDA, so every worker sees its own GPU as cuda:0. GPUs are found without importing torch: a CUDA
context in the controller, which only schedules, would hold memory on every GPU for the whole
run. See docs/models.md#gpus-under-xdist.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, MutableMapping, Sequence

from .settings import Settings


class DeviceError(Exception):
    """The devices asked for cannot be handed out; the message says what to give instead."""


def parse_visible(value: str) -> list[str]:
    """CUDA_VISIBLE_DEVICES as CUDA reads it: entries up to the first invalid one ("-1" is the
    usual way to hide every GPU)."""
    devices = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry or entry.startswith("-"):
            break
        devices.append(entry)
    return devices


def nvidia_smi_gpus() -> list[str]:
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                 timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(n) for n, line in enumerate(
        line for line in listing.splitlines() if line.startswith("GPU "))]


def gpu_description(device: str) -> str:
    """A GPU's name and compute capability as nvidia-smi gives them ("NVIDIA H100 80GB HBM3
    (sm_90)"), for the engines' `computed_by`; "unknown" when nvidia-smi says nothing."""
    try:
        line = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap",
                               "--format=csv,noheader", "-i", device.split(",")[0]],
                              capture_output=True, text=True, timeout=30, check=True).stdout
        name, capability = (part.strip() for part in line.strip().split(","))
    except (OSError, subprocess.SubprocessError, ValueError):
        return "unknown"
    return f"{name} (sm_{capability.replace('.', '')})"


def visible_gpus(environ: MutableMapping[str, str],
                 list_gpus: Callable[[], list[str]] = nvidia_smi_gpus) -> list[str]:
    outer = environ.get("CUDA_VISIBLE_DEVICES")
    return parse_visible(outer) if outer is not None else list_gpus()


def resolve_requested(requested: Sequence[str], outer: list[str] | None) -> list[str]:
    """--humanfix-devices as CUDA_VISIBLE_DEVICES entries. Under an outer CUDA_VISIBLE_DEVICES the
    numbers count the GPUs it leaves visible, as torch numbers them (cuda:0, cuda:1, ...), so a
    worker never escapes the outer restriction."""
    repeated = sorted({d for d in requested if requested.count(d) > 1})
    if repeated:
        raise DeviceError(f"--humanfix-devices names {', '.join(repeated)} more than once; "
                          "name each GPU once (workers beyond the GPUs share them).")
    if outer is None:
        return list(requested)
    devices = []
    for device in requested:
        if device.isdigit() and int(device) < len(outer):
            devices.append(outer[int(device)])
        elif not device.isdigit() and device in outer:
            devices.append(device)
        else:
            raise DeviceError(
                f"--humanfix-devices {device} is not visible: CUDA_VISIBLE_DEVICES leaves "
                f"{len(outer)} GPU(s), numbered 0 to {len(outer) - 1} here.")
    return devices


def requested_or_visible(settings: Settings, environ: MutableMapping[str, str] = os.environ,
                         list_gpus: Callable[[], list[str]] = nvidia_smi_gpus) -> list[str]:
    """The GPUs named by --humanfix-devices, or else every visible GPU."""
    outer = environ.get("CUDA_VISIBLE_DEVICES")
    if settings.devices:
        return resolve_requested(settings.devices,
                                 parse_visible(outer) if outer is not None else None)
    return visible_gpus(environ, list_gpus)


class DevicePool:
    """Hands each worker the GPU with the fewest workers on it. A worker that goes down gives its
    GPU back, so the worker xdist starts in place of a crashed one takes the freed GPU."""

    def __init__(self, devices: Sequence[str]) -> None:
        self.devices = list(devices)
        self.holders: dict[str, str] = {}

    def acquire(self, worker: str) -> str | None:
        if not self.devices:
            return None
        if worker not in self.holders:
            load = Counter(self.holders.values())
            self.holders[worker] = min(self.devices, key=lambda d: load[d])
        return self.holders[worker]

    def release(self, worker: str) -> None:
        self.holders.pop(worker, None)


def cuda_initialised() -> bool:
    """Whether torch has initialised CUDA in this process (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.cuda.is_initialized())


def pin(device: str, environ: MutableMapping[str, str] = os.environ) -> None:
    """Make `device` this process's only GPU. CUDA reads the variable once, when torch first
    initialises it, so setting it later would silently leave every GPU visible."""
    if cuda_initialised():
        raise DeviceError(
            f"CUDA was initialised in this process before pytest-humanfix could pin it to GPU "
            f"{device}; keep conftest files and plugins from touching CUDA at import time.")
    environ["CUDA_VISIBLE_DEVICES"] = device
