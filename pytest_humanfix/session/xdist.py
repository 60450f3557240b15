"""The controller's pytest-xdist hooks, in a class registered only when xdist is installed: they
send each worker the run state (run id, resumed records, its GPU, its engine) through
`workerinput`, as plain JSON-able data, and take a GPU back when a worker goes down."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..devices import DevicePool
from .runner import Runner

if TYPE_CHECKING:
    from ..models.engines.serving import Serving


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
        node.workerinput["humanfix_run_id"] = self.runner.run_id
        # Only the controller reads the results file; workers learn from it what is done.
        node.workerinput["humanfix_resumed"] = self.runner.resumed
        node.workerinput["humanfix_canonical_seconds"] = self.runner.canonical_seconds
        node.workerinput["humanfix_plus_reference"] = self.runner.plus_reference
        node.workerinput["humanfix_device"] = self.devices.acquire(node.gateway.id)
        if self.serving is not None:
            node.workerinput["humanfix_endpoint"] = \
                self.serving.endpoint_for(node.workerinput["workerid"])

    def pytest_testnodedown(self, node: WorkerNode, error: object | None) -> None:
        self.devices.release(node.gateway.id)
