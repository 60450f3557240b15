"""Which GPUs a run hands to its xdist workers: only a model that runs inside the workers
(transformers) needs one each; servers, controls and `--humanfix-serve` runs hand out none."""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping

from ..devices import DeviceError, nvidia_smi_gpus, requested_or_visible
from ..models.specs import ModelSpecError, resolve_spec
from ..settings import Settings


def run_devices(settings: Settings, environ: MutableMapping[str, str] = os.environ,
                list_gpus: Callable[[], list[str]] = nvidia_smi_gpus) -> list[str]:
    """The GPUs handed to workers: those named by --humanfix-devices, or else, for a model that
    runs in the workers (transformers), every visible GPU; none for a server or a control, and
    none under --humanfix-serve, where the engines hold the GPUs."""
    if settings.serve:
        return []
    if not settings.devices and resolve_spec(settings.model or "").kind != "transformers":
        return []
    return requested_or_visible(settings, environ, list_gpus)


def auto_num_workers(settings: Settings, environ: MutableMapping[str, str] = os.environ,
                     list_gpus: Callable[[], list[str]] = nvidia_smi_gpus) -> int | None:
    """`-n auto` with GPUs: one worker per GPU. None leaves the choice to xdist (one per CPU)."""
    try:
        return len(run_devices(settings, environ, list_gpus)) or None
    except (DeviceError, ModelSpecError):
        return None  # the run's start reports it as a usage error
