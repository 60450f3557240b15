"""The run's state crosses to xdist workers as one key of plain JSON, and comes back whole."""

import json

from pytest_humanfix.devices import DevicePool
from pytest_humanfix.session.state import WORKERINPUT_KEY, RunState
from pytest_humanfix.session.xdist import XdistHooks


class Gateway:
    id = "gw0"


class Node:
    def __init__(self):
        self.workerinput = {"workerid": "gw0"}
        self.gateway = Gateway()


class Runner:
    state = RunState(
        "run-1",
        resumed={"Python/0": {"task_id": "Python/0", "outcome": "fixed", "attempts": []}},
        canonical_seconds={"Python/0": 0.25},
        plus_reference={"Python/0": {"seconds": 0.5, "inputs": [0.1, 0.2]}})


def test_state_round_trips_through_json():
    state = Runner.state
    assert RunState.from_json(json.loads(json.dumps(state.to_json()))) == state


def test_a_worker_is_sent_one_key_of_plain_json():
    node = Node()
    XdistHooks(Runner(), DevicePool(["3"]), None).pytest_configure_node(node)
    assert set(node.workerinput) == {"workerid", WORKERINPUT_KEY}
    sent = json.loads(json.dumps(node.workerinput[WORKERINPUT_KEY]))
    assert sent == node.workerinput[WORKERINPUT_KEY]  # nothing but JSON's builtins
    assert sent["device"] == "3" and sent["endpoint"] is None
    assert RunState.from_json(sent["run"]) == Runner.state
