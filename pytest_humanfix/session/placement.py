"""Where a run's model runs, and which GPUs its xdist workers get: a transformers model runs in
shared batching engines where GPUs are present (one per GPU, `--humanfix-serve`'s layout), else
in each worker; servers, controls and replays run nowhere of ours (docs/models.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass

from ..devices import DeviceError, nvidia_smi_gpus, requested_or_visible
from ..models.specs import ModelSpecError, resolve_spec
from ..settings import Settings

# Workers that keep one batching engine fed under `-n auto`: each mostly waits for its reply
# and then runs the sandbox, so an engine's batch holds about as many replies as it has workers.
WORKERS_PER_ENGINE = 16


@dataclass(frozen=True)
class Layout:
    """`serve`: the controller starts shared engines and every worker asks them; else each
    worker loads the model. `why`: the reason, for the terminal's header."""

    serve: bool
    why: str


def choose_layout(settings: Settings, environ: MutableMapping[str, str] = os.environ,
                  list_gpus: Callable[[], list[str]] = nvidia_smi_gpus) -> Layout:
    """The user's layout, else a shared engine per GPU for a transformers model where
    nvidia-smi lists GPUs (a CUDA_VISIBLE_DEVICES alone does not make a GPU present)."""
    if settings.serve:
        return Layout(True, "as --humanfix-serve asks")
    if not settings.model or resolve_spec(settings.model).kind != "transformers":
        return Layout(False, "")
    if settings.in_process:
        return Layout(False, "as --humanfix-in-process asks")
    gpus = requested_or_visible(settings, environ, list_gpus) if list_gpus() else []
    if gpus:
        return Layout(True, f"{len(gpus)} GPU(s) present: one batching engine per GPU serves "
                            "every worker, where a copy per worker loads the model once per "
                            "worker; --humanfix-in-process loads the copies instead")
    return Layout(False, "no GPU present; --humanfix-serve shares engines instead (llama.cpp "
                         "for a GGUF model)")


def run_devices(settings: Settings, environ: MutableMapping[str, str] = os.environ,
                list_gpus: Callable[[], list[str]] = nvidia_smi_gpus) -> list[str]:
    """The GPUs handed to workers: those named by --humanfix-devices, or else, for a model that
    runs in the workers (transformers), every visible GPU; none for a server or a control, and
    none under a shared engine's layout, where the engines hold the GPUs."""
    if choose_layout(settings, environ, list_gpus).serve:
        return []
    if not settings.devices and (not settings.model
                                 or resolve_spec(settings.model).kind != "transformers"):
        return []
    return requested_or_visible(settings, environ, list_gpus)


def auto_num_workers(settings: Settings, environ: MutableMapping[str, str] = os.environ,
                     list_gpus: Callable[[], list[str]] = nvidia_smi_gpus) -> int | None:
    """`-n auto` with GPUs: one worker per GPU for copies in the workers; enough workers to keep
    the engines fed (and at least one per core, for the sandbox) under shared engines. None
    leaves the choice to xdist (one per CPU)."""
    try:
        if choose_layout(settings, environ, list_gpus).serve:
            gpus = requested_or_visible(settings, environ, list_gpus)
            if not gpus:
                return None
            return max(len(os.sched_getaffinity(0)), WORKERS_PER_ENGINE * len(gpus))
        return len(run_devices(settings, environ, list_gpus)) or None
    except (DeviceError, ModelSpecError):
        return None  # the run's start reports it as a usage error
