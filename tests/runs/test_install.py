"""The install paths docs/getting-started.md#install gives, each into a clean virtual environment
made here (no system packages): the built wheel, the sdist, an editable clone and the
repository's URL. After each, the canonical control runs (after the wheel, the buggy one too)
from an empty folder on the packaged data, with no torch, transformers or datasets installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# Heavy packages that only an extra installs: a plain install must not pull them.
HEAVY = ("torch", "transformers", "datasets")


def outside_environment() -> dict[str, str]:
    """This process's environment less what points into the checkout or this test run."""
    return {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "HUMANFIX_DATASET", "VIRTUAL_ENV", "PYTEST_ADDOPTS",
                           "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST")}


def run(command: list[str], cwd: Path, timeout: int = 600) -> str:
    """`command`'s output; a non-zero exit fails the test with that output."""
    done = subprocess.run(command, cwd=cwd, env=outside_environment(), capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n" + (
        done.stdout + done.stderr)[-4000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout as git sees it (tracked files, and new ones not ignored), committed in a
    repository of its own so that a `git+file://` URL can name it."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    clone = tmp_path_factory.mktemp("source") / "pytest-humanfix"
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=test", "-c", "user.email=test@localhost",
                     "commit", "-q", "-m", "source"]):
        run(command, clone)
    return clone


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtual environment: its python, with pip and `build` only."""
    folder = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", str(folder)], folder)
    python = folder / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", "build"], folder)
    return python


@pytest.fixture(scope="module")
def built(source: Path, venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel and the sdist `python -m build` makes of the source, in an isolated build."""
    dist = tmp_path_factory.mktemp("dist")
    output = run([str(venv), "-m", "build", "--outdir", str(dist), str(source)], source)
    assert "SetuptoolsDeprecationWarning" not in output, output
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(dist.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


def installed_heavy(venv: Path) -> list[str]:
    found = run([str(venv), "-c", "import importlib.util as u; "
                 f"print(' '.join(m for m in {HEAVY!r} if u.find_spec(m)))"], venv.parent)
    return found.split()


CANONICAL = ("canonical", 0, "100.0% (4/4)")
BUGGY = ("buggy", 1, "0.0% (0/4)")


def assert_controls(venv: Path, folder: Path,
                    controls: tuple[tuple[str, int, str], ...] = (CANONICAL,)) -> None:
    """The controls on the first 4 tasks score what they should (canonical 4/4, buggy 0/4),
    run from an empty folder by the installed plugin."""
    folder.mkdir()
    for model, expected_exit, score in controls:
        done = subprocess.run(
            [str(venv), "-m", "pytest", "--humanfix-model", model, "--humanfix-max", "4",
             "-n", "2", "-p", "no:cacheprovider"],
            cwd=folder, capture_output=True, text=True, timeout=300, env=outside_environment())
        output = done.stdout + done.stderr
        assert done.returncode == expected_exit, f"{model}: exit {done.returncode}\n{output}"
        assert f"pass@1 = {score}" in output, f"{model}:\n{output}"


def where_installed(venv: Path) -> Path:
    return Path(run([str(venv), "-c", "import pytest_humanfix, os; "
                     "print(os.path.dirname(pytest_humanfix.__file__))"],
                    venv.parent).strip())


def test_each_install_path_gives_a_light_install_that_runs_the_controls(built, venv, source,
                                                                        tmp_path):
    """One test, in order, in one environment: xdist would otherwise spread the paths over two
    workers, each without the dependencies the wheel's install brought."""
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata.decode(), re.M)
    # The GPU machine's install, `pip install -e '.[vllm]'`: vLLM brings the torch it pins.
    assert 'vllm; extra == "vllm"' in requires
    assert not [r for r in requires if re.match(r"(torch|transformers|datasets)\b", r)
                and "extra ==" not in r], requires
    assert any(name.startswith("pytest_humanfix/data/") for name in names), names

    # The wheel, with its dependencies: none of the heavy ones.
    run([str(venv), "-m", "pip", "install", "-q", str(built["wheel"])], tmp_path)
    assert installed_heavy(venv) == []
    assert "site-packages" in where_installed(venv).parts
    # The buggy control here only: how a failing task is graded does not depend on the install
    # path, while the canonical control at every path shows that its data and sandbox work.
    assert_controls(venv, tmp_path / "wheel", (CANONICAL, BUGGY))

    # The sdist: it must carry the data too.
    run([str(venv), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
         str(built["sdist"])], tmp_path)
    assert (where_installed(venv) / "data").is_dir()
    assert_controls(venv, tmp_path / "sdist")

    # An editable clone, as a GPU machine installs it (with `[vllm]` there).
    run([str(venv), "-m", "pip", "install", "-q", "--no-deps", "-e", str(source)], tmp_path)
    assert where_installed(venv) == source / "pytest_humanfix"
    assert_controls(venv, tmp_path / "editable")

    # The repository's URL (a `git+file://` one here; `git+https://` for a hosted one).
    run([str(venv), "-m", "pip", "uninstall", "-q", "-y", "pytest-humanfix"], tmp_path)
    run([str(venv), "-m", "pip", "install", "-q", "--no-deps",
         f"git+file://{source}"], tmp_path)
    assert "site-packages" in where_installed(venv).parts
    assert_controls(venv, tmp_path / "url")
    assert installed_heavy(venv) == []
