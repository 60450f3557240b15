"""The xdist worker's side of a run: it runs the items it is sent, with the run's state the
controller put in `workerinput["humanfix"]` (session/state), and writes no files
(docs/architecture.md)."""

from __future__ import annotations

import pytest

from ..agent.loader import run_as
from ..dataset import DatasetError
from ..devices import DeviceError, pin
from ..models.specs import ModelSpecError, check_spec
from ..sandbox.choose import Start
from ..sandbox.environment import SandboxError
from ..settings import Settings
from .runner import Runner, choose_sandbox
from .state import WORKERINPUT_KEY, RunState, WorkerInput
from .workload import Workload


def start(config: pytest.Config, settings: Settings) -> Runner:
    sent: WorkerInput = config.workerinput[WORKERINPUT_KEY]  # type: ignore[attr-defined]
    device, endpoint = sent["device"], sent["endpoint"]
    try:
        if settings.model and endpoint is None:  # a shared engine's: checked by the controller
            check_spec(settings.model, settings)
        # The collector needs the tasks: a bad dataset fails here, not per item.
        workload = Workload.load(settings)
        # The warm executor imports the prelude while this worker collects; only one asked for
        # by name must be shown to start here, before any task (a usage error otherwise).
        start: Start = "wait" if settings.executor == "warm" else "launch"
        state = RunState.from_json(sent["run"])
        settings = run_as(settings, state.agent)
        runner = Runner(settings, state, workload=workload,
                        sandbox_choice=choose_sandbox(settings, workload, start), device=device,
                        endpoint=endpoint)
        if device is not None:
            pin(device)
    except (ModelSpecError, DatasetError, DeviceError, SandboxError) as exc:
        raise pytest.UsageError(str(exc)) from None
    return runner
