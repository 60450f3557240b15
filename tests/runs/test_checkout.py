"""The checkout's own defaults (the repository root's conftest.py): a run started from the root
finds the shared dataset beside the checkout, unless the user names a dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_humanfix.dataset import HUB_DATASET
from pytest_humanfix.settings import Settings

ROOT_CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def checkout(pytester: pytest.Pytester, dataset_rows: list[dict],
             monkeypatch: pytest.MonkeyPatch) -> Path:
    """checkout/ holds the repository's conftest.py and an ini file; the shared file beside it
    (../shared/data/humanevalpack-python.jsonl) holds the first three tasks, so a run tells by
    its item count which dataset it read. The current folder is the checkout."""
    folder = pytester.mkdir("checkout")
    (folder / "conftest.py").write_text(ROOT_CONFTEST.read_text())
    (folder / "pytest.ini").write_text("[pytest]\n")
    write_rows(pytester.path / "shared" / "data" / "humanevalpack-python.jsonl", dataset_rows[:3])
    monkeypatch.delenv("HUMANFIX_DATASET", raising=False)
    monkeypatch.chdir(folder)
    return folder


def dataset_setting(pytester: pytest.Pytester, *args: str) -> str:
    """The dataset a run started with `args` from the current folder would read."""
    recorder = pytester.inline_run("-p", "no:cacheprovider", *args)
    config = recorder.getcall("pytest_sessionstart").session.config
    return Settings.from_config(config).dataset


def test_a_run_from_the_root_reads_the_shared_dataset(pytester, checkout, read_jsonl):
    # Under xdist, so that the workers are shown to read the same file.
    result = pytester.runpytest("--humanfix-model", "canonical", "-p", "no:cacheprovider",
                                "-n", "2")
    result.assert_outcomes(passed=3)
    shared = pytester.path / "shared" / "data" / "humanevalpack-python.jsonl"
    records = read_jsonl(checkout / "reports" / "humanfix.jsonl")
    assert {r["dataset"] for r in records} == {str(shared.resolve())}


@pytest.mark.parametrize("given", ["option", "ini", "environment"])
def test_a_dataset_the_user_names_wins(pytester, checkout, dataset_rows, monkeypatch, given):
    mine = write_rows(pytester.path / "mine.jsonl", dataset_rows[:2])
    args: list[str] = []
    if given == "option":
        args = [f"--humanfix-dataset={mine}"]
    elif given == "ini":
        (checkout / "pytest.ini").write_text(f"[pytest]\nhumanfix_dataset = {mine}\n")
    else:
        monkeypatch.setenv("HUMANFIX_DATASET", str(mine))
    assert dataset_setting(pytester, *args) == str(mine)
    pytester.runpytest("--humanfix-model", "canonical", "-p", "no:cacheprovider",
                       *args).assert_outcomes(passed=2)


def test_without_the_shared_file_the_plugins_default_stands(pytester, checkout):
    (pytester.path / "shared" / "data" / "humanevalpack-python.jsonl").unlink()
    assert dataset_setting(pytester) == HUB_DATASET


def test_a_run_without_the_plugin_is_untouched(pytester, checkout):
    recorder = pytester.inline_run("-p", "no:cacheprovider", "-p", "no:humanfix")
    assert recorder.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    config = recorder.getcall("pytest_sessionstart").session.config
    assert not hasattr(config.option, "humanfix_dataset")
