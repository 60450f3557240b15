from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = REPO.parent / "shared" / "data" / "humanevalpack-python.jsonl"


def dataset_path() -> Path:
    path = Path(os.environ.get("HUMANFIX_DATASET") or DEFAULT_DATASET)
    if not path.is_file():
        # Never skip: a missing dataset must turn the run red, not shrink it silently.
        raise pytest.UsageError(
            f"the HumanEvalFix dataset is not at {path}; set HUMANFIX_DATASET to its .jsonl file")
    return path


@pytest.fixture(scope="session")
def dataset() -> Path:
    return dataset_path()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture
def humanfix_pytester(pytester: pytest.Pytester, dataset: Path,
                      monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester folder with an ini file (so rootdir is the folder) and the dataset in env."""
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("HUMANFIX_DATASET", str(dataset))
    return pytester
