"""Starting a run in one pytest process (session/start): which role starts it, with the agent
settled first, and the tasks collected when no paths were given."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_humanfix.session import controller, start, worker
from pytest_humanfix.settings import Settings


class Config:
    """The little of pytest's config `start` reads and writes."""

    def __init__(self, folder: Path, args_source: pytest.Config.ArgsSource,
                 args: list[str], worker: bool = False) -> None:
        self.args_source = args_source
        self.args = args
        self.invocation_params = SimpleNamespace(dir=folder)
        self.rootpath = folder
        self.inipath = None
        self.pluginmanager = SimpleNamespace(get_plugins=set)
        self.inivalues: list[tuple[str, str]] = []
        if worker:
            self.workerinput = {}

    def addinivalue_line(self, name: str, line: str) -> None:
        self.inivalues.append((name, line))


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Settings]]:
    """Which role's start ran, with which settings."""
    calls: list[tuple[str, Settings]] = []
    monkeypatch.setattr(controller, "start", lambda c, s: calls.append(("controller", s)))
    monkeypatch.setattr(worker, "start", lambda c, s: calls.append(("worker", s)))
    return calls


def test_a_process_with_workerinput_is_a_worker(tmp_path):
    assert start.is_worker(Config(tmp_path, pytest.Config.ArgsSource.ARGS, [], worker=True))
    assert not start.is_worker(Config(tmp_path, pytest.Config.ArgsSource.ARGS, []))


def test_without_paths_only_the_tasks_are_collected_and_the_controller_starts(tmp_path,
                                                                              started):
    config = Config(tmp_path, pytest.Config.ArgsSource.INVOCATION_DIR, ["tests"])
    settings = Settings(model="canonical")
    start.start(config, settings)  # type: ignore[arg-type]
    assert config.args == [str(tmp_path)]
    assert started == [("controller", settings)]
    assert config.inivalues == [("markers",
                                 "humanfix: a HumanEvalFix repair task (pytest-humanfix)")]


def test_paths_given_are_kept_and_a_worker_starts_as_a_worker(tmp_path, started):
    config = Config(tmp_path, pytest.Config.ArgsSource.ARGS, ["tests/x"], worker=True)
    start.start(config, Settings(model="canonical"))  # type: ignore[arg-type]
    assert config.args == ["tests/x"] and [role for role, _ in started] == ["worker"]


def test_the_agent_is_settled_before_either_role_starts(tmp_path, started):
    config = Config(tmp_path, pytest.Config.ArgsSource.ARGS, [])
    with pytest.raises(pytest.UsageError, match="there is no file absent.py"):
        start.start(config, Settings(model="canonical", agent="absent.py:fix"))  # type: ignore[arg-type]
    assert started == []
