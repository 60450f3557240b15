"""An xdist worker's start (session/worker): its Runner built from the one key the controller
sent, and each bad input a usage error before any task."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_humanfix.models import specs
from pytest_humanfix.models.openai_servers import ServerProbe
from pytest_humanfix.records import Record
from pytest_humanfix.session import worker
from pytest_humanfix.session.state import WORKERINPUT_KEY, RunState, WorkerInput
from pytest_humanfix.settings import Settings

RESUMED: Record = {"task_id": "Python/1", "outcome": "fixed"}
SERVERS: dict[str, ServerProbe] = {"http://a/v1": ServerProbe(out="", computed_by={
    "engine": "vllm", "version": "0.26.0", "device": "unknown"})}


def config(device: str | None = None) -> pytest.Config:
    sent = WorkerInput(run=RunState("run-7", resumed={"Python/1": RESUMED},
                                    canonical_seconds={"Python/0": 0.25},
                                    servers=SERVERS).to_json(),
                       device=device, endpoint=None)
    return SimpleNamespace(workerinput={WORKERINPUT_KEY: sent})  # type: ignore[return-value]


def settings(dataset: Path, **changes: object) -> Settings:
    return Settings(**{"model": "canonical", "dataset": str(dataset), "max": 2,
                       "sandbox": "process", "executor": "fresh", **changes})


def test_the_runner_holds_the_state_the_controller_sent(dataset, no_outer_cuda):
    runner = worker.start(config(), settings(dataset))
    assert runner.state == RunState("run-7", resumed={"Python/1": RESUMED},
                                    canonical_seconds={"Python/0": 0.25}, servers=SERVERS)
    assert [t.task_id for t in runner.tasks] == ["Python/0", "Python/1"]
    assert runner.device is None and runner.endpoint is None
    assert runner.sandbox.layer.name == "process"  # the fresh executor asked for, not warm
    assert type(runner.sandbox).__name__ == "FreshSandbox"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_the_worker_is_pinned_to_the_gpu_it_was_sent(dataset, no_outer_cuda, cuda_initialised):
    if cuda_initialised:  # a GPU machine where a test ran a model: pinning is refused, rightly
        with pytest.raises(pytest.UsageError, match="before pytest-humanfix could pin it"):
            worker.start(config(device="3"), settings(dataset))
        return
    runner = worker.start(config(device="3"), settings(dataset))
    assert runner.device == "3" and os.environ["CUDA_VISIBLE_DEVICES"] == "3"


def test_the_model_spec_is_checked_once_by_the_controller_not_by_each_worker(
        dataset, monkeypatch):
    def resolved(spec):
        raise AssertionError(f"{spec} resolved again at the worker's start")

    monkeypatch.setattr(specs, "resolve_spec", resolved)
    runner = worker.start(config(), settings(dataset, model="openai:m"))
    assert runner.settings.model == "openai:m"


def test_a_dataset_that_cannot_load_is_a_usage_error(tmp_path):
    with pytest.raises(pytest.UsageError, match="absent.jsonl"):
        worker.start(config(), settings(tmp_path / "absent.jsonl"))
