"""The run's state that the controller decides once and every process shares (the run id, the
agent's identity, the records --humanfix-resume keeps, the calibrated times), and what one
xdist worker is sent of it: one key, `workerinput["humanfix"]`, of plain JSON-able builtins,
since xdist's channel carries nothing else (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from ..models.engines.launch import Endpoint
from ..records import Record

WORKERINPUT_KEY = "humanfix"


class ReferenceTimes(TypedDict):
    """EvalPlus's reference solution on a task's HumanEval+ program, here
    (plus.reference_times): its seconds on the whole, its CPU seconds on each input."""

    seconds: float
    inputs: list[float]


class RunStateJson(TypedDict):
    run_id: str
    agent: str | None
    resumed: dict[str, Record]
    canonical_seconds: dict[str, float]
    plus_reference: dict[str, ReferenceTimes]


class WorkerInput(TypedDict):
    """`workerinput["humanfix"]`: the run's state, and this worker's GPU (a
    CUDA_VISIBLE_DEVICES entry) and shared engine (`Serving.endpoint_for`), if any."""

    run: RunStateJson
    device: str | None
    endpoint: Endpoint | None


@dataclass(frozen=True)
class RunState:
    run_id: str
    # The agent's identity, fixed once by the controller (agent/loader): every worker records
    # it, whatever it finds itself. None: the process's own (a runner without a controller).
    agent: str | None = None
    # --humanfix-resume: finished records by task id.
    resumed: dict[str, Record] = field(default_factory=dict)
    # The canonical solution's seconds per task on this machine (session/calibration); a task
    # without one runs under --humanfix-timeout.
    canonical_seconds: dict[str, float] = field(default_factory=dict)
    # --humanfix-tests plus: EvalPlus's reference solution's seconds on each task's HumanEval+
    # program and its CPU seconds on each input (plus.reference_times), timed the same way.
    plus_reference: dict[str, ReferenceTimes] = field(default_factory=dict)

    def to_json(self) -> RunStateJson:
        return RunStateJson(run_id=self.run_id, agent=self.agent, resumed=self.resumed,
                            canonical_seconds=self.canonical_seconds,
                            plus_reference=self.plus_reference)

    @classmethod
    def from_json(cls, data: RunStateJson) -> RunState:
        return cls(**data)
