"""The controller's pytest-xdist hooks, in a class registered only when xdist is installed: they
send each worker the run's state, its GPU and its engine as one JSON-able key of `workerinput`
(session/state), and take a GPU back when a worker goes down (docs/architecture.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ..devices import DevicePool
from .runner import Runner
from .state import WORKERINPUT_KEY, WorkerInput

if TYPE_CHECKING:
    from ..models.engines.serving import Serving


def is_distributing(config: pytest.Config) -> bool:
    """This process is an xdist controller: it hands out tasks and devices, runs nothing."""
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def workers_of(config: pytest.Config) -> int:
    """The xdist workers this run starts; 1 without xdist (the process runs its items)."""
    workers = getattr(config.option, "numprocesses", None)
    return workers if is_distributing(config) and workers else 1


class Gateway(Protocol):
    id: str


class WorkerNode(Protocol):
    """What these hooks use of xdist's WorkerController (xdist ships no type information)."""

    workerinput: dict[str, Any]
    gateway: Gateway


class XdistHooks:
    def __init__(self, runner: Runner, devices: DevicePool, serving: Serving | None) -> None:
        self.runner = runner
        self.devices = devices
        self.serving = serving

    def pytest_configure_node(self, node: WorkerNode) -> None:
        # Only the controller reads the results file; workers learn from it what is done.
        node.workerinput[WORKERINPUT_KEY] = WorkerInput(
            run=self.runner.state.to_json(), device=self.devices.acquire(node.gateway.id),
            endpoint=self.serving.endpoint_for(node.workerinput["workerid"])
            if self.serving is not None else None)

    def pytest_testnodedown(self, node: WorkerNode, error: object | None) -> None:
        self.devices.release(node.gateway.id)
