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


@pytest.fixture(scope="session")
def tiny_base_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model without a chat template, as a base model ships."""
    from tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-base-model"), chat_template=False)


@pytest.fixture(scope="session")
def tiny_gguf(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny chat model as one GGUF file, alone in its folder."""
    from tinymodel import write_gguf

    return write_gguf(tiny_model, tmp_path_factory.mktemp("tiny-gguf") / "tiny.F32.gguf")


@pytest.fixture
def humanfix_pytester(pytester: pytest.Pytester, dataset: Path,
                      monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester folder with an ini file (so rootdir is the folder) and the dataset in env."""
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("HUMANFIX_DATASET", str(dataset))
    return pytester


@pytest.fixture
def no_outer_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CUDA_VISIBLE_DEVICES around the test, and whatever a run sets there undone after."""
    # Setting before deleting makes monkeypatch restore the original state, even "unset".
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")


@pytest.fixture(scope="session", autouse=True)
def charts_loaded(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Draws one chart before any in-process pytester run. pytester drops the modules a run
    imported; matplotlib imports some lazily, so a later run would mix two copies of its
    classes. Loading it whole first keeps one copy (and spares each run the import). Every
    humanfix run draws its chart, so this comes before the first test of every worker."""
    from pytest_humanfix.reporting.chart import write_chart

    summary = {"by_bug_type": [], "pass_at_1": {"value": 0.0}, "run": {"model": None}}
    write_chart(summary, [], tmp_path_factory.mktemp("chart") / "warm.png")
