"""The data a run reads when none is named: the copy in the package, the same rows and dataset
hash as the upstream files, without `datasets`; a dataset the user names wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_humanfix.datafiles import HUMANEVALPACK, PACKAGED
from pytest_humanfix.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def bare(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A folder with only an ini file, no dataset named anywhere, the Hub out of reach."""
    pytester.makeini("[pytest]\naddopts = -p no:randomly\n")
    monkeypatch.delenv("HUMANFIX_DATASET", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return pytester


def dataset_setting(pytester: pytest.Pytester, *args: str) -> str:
    """The dataset a run started with `args` from the current folder would read."""
    recorder = pytester.inline_run("-p", "no:cacheprovider", *args)
    config = recorder.getcall("pytest_sessionstart").session.config
    return Settings.from_config(config).dataset


# Each pytest process of the run, xdist's workers included, writes down whether it imported
# `datasets` (tests/runs/test_fixed_costs.py does the same for a run given a dataset file).
NO_DATASETS_PROBE = """
import json, sys

def pytest_unconfigure(config):
    # Not PYTEST_XDIST_WORKER: an outer xdist run passes its own down to this one.
    role = getattr(config, "workerinput", {}).get("workerid", "controller")
    (config.rootpath / f"modules-{role}.json").write_text(json.dumps("datasets" in sys.modules))
"""


def test_a_run_naming_no_dataset_scores_the_packaged_copy_without_datasets_or_warnings(
        bare, read_jsonl):
    """The control run as a newcomer starts it, under xdist, so that the workers are shown to
    read the packaged copy too; it prints no warning."""
    bare.makeconftest(NO_DATASETS_PROBE)
    result = bare.runpytest_subprocess("--humanfix-model", "canonical", "--humanfix-max", "4",
                                       "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, warnings=0)
    output = result.stdout.str() + result.stderr.str()
    assert "warnings summary" not in output and "Warning" not in output, output
    records = read_jsonl(bare.path / "reports" / "humanfix.jsonl")
    python = HUMANEVALPACK["python"]
    assert {r["dataset"] for r in records} == {
        f"packaged humanevalpack-python (sha256 {python.sha256})"}
    summary = json.loads((bare.path / "reports" / "summary.json").read_text())
    assert summary["run"]["dataset"] == python.label
    imported = {path.name: json.loads(path.read_text())
                for path in bare.path.glob("modules-*.json")}
    assert set(imported) == {"modules-controller.json", "modules-gw0.json", "modules-gw1.json"}
    assert not any(imported.values()), imported


def test_a_language_reads_its_own_packaged_file(bare, read_jsonl):
    result = bare.runpytest("--humanfix-model", "buggy", "--humanfix-language", "js",
                            "--humanfix-max", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    records = read_jsonl(bare.path / "reports" / "humanfix.jsonl")
    assert {r["dataset"] for r in records} == {HUMANEVALPACK["js"].label}
    assert {r["task_id"] for r in records} == {"JavaScript/0", "JavaScript/1"}


@pytest.mark.parametrize("given", ["option", "ini", "environment"])
def test_a_dataset_the_user_names_wins(bare, dataset_rows, monkeypatch, given):
    mine = write_rows(bare.path / "mine.jsonl", dataset_rows[:2])
    args: list[str] = []
    if given == "option":
        args = [f"--humanfix-dataset={mine}"]
    elif given == "ini":
        bare.makeini(f"[pytest]\naddopts = -p no:randomly\nhumanfix_dataset = {mine}\n")
    else:
        monkeypatch.setenv("HUMANFIX_DATASET", str(mine))
    assert dataset_setting(bare, *args) == str(mine)
    bare.runpytest("--humanfix-model", "canonical", "-p", "no:cacheprovider",
                   *args).assert_outcomes(passed=2)


def test_without_a_dataset_named_the_default_is_the_packaged_copy(bare):
    assert dataset_setting(bare) == PACKAGED


def test_the_repository_has_no_conftest_that_picks_a_dataset():
    """The checkout's runs read what a user's do: no root conftest.py reaching for ../shared."""
    assert not (REPO / "conftest.py").exists()
    assert "shared/" not in (REPO / ".ci" / "run").read_text()
    assert "HUMANFIX_DATASET" not in (REPO / ".ci" / "run").read_text()


def test_a_run_without_the_plugin_is_untouched(bare):
    recorder = bare.inline_run("-p", "no:cacheprovider", "-p", "no:humanfix")
    assert recorder.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    config = recorder.getcall("pytest_sessionstart").session.config
    assert not hasattr(config.option, "humanfix_dataset")
