"""The xdist worker's side of a run: it runs the items it is sent, with the run state the
controller put in `workerinput` (plain JSON-able data), and writes no files."""

from __future__ import annotations

from typing import Any

import pytest

from ..dataset import DatasetError
from ..devices import DeviceError, pin
from ..models.specs import ModelSpecError, check_spec
from ..sandbox.choose import Start
from ..sandbox.environment import SandboxError
from ..settings import Settings
from .runner import Runner, choose_sandbox
from .workload import Workload


def start(config: pytest.Config, settings: Settings) -> Runner:
    workerinput: dict[str, Any] = config.workerinput  # type: ignore[attr-defined]
    device = workerinput.get("humanfix_device")
    try:
        endpoint = workerinput.get("humanfix_endpoint")
        if endpoint is None:  # a shared engine's model was checked by the controller
            check_spec(settings.model or "", settings)
        # The collector needs the tasks: a bad dataset fails here, not per item.
        workload = Workload.load(settings)
        # The warm executor imports the prelude while this worker collects; only one asked for
        # by name must be shown to start here, before any task (a usage error otherwise).
        start: Start = "wait" if settings.executor == "warm" else "launch"
        runner = Runner(settings, workerinput["humanfix_run_id"], workload=workload,
                        sandbox_choice=choose_sandbox(settings, workload, start), device=device,
                        endpoint=endpoint,
                        resumed=workerinput.get("humanfix_resumed", {}),
                        canonical_seconds=workerinput.get("humanfix_canonical_seconds", {}),
                        plus_reference=workerinput.get("humanfix_plus_reference", {}))
        if device is not None:
            pin(device)
    except (ModelSpecError, DatasetError, DeviceError, SandboxError) as exc:
        raise pytest.UsageError(str(exc)) from None
    return runner
