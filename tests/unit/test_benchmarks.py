"""The benchmarks' shared command line and JSON file: every script under benchmarks/harness and
benchmarks/engine takes `--json PATH`, and common.write_json writes the figures it is given
beside the machine that measured them. No benchmark measures anything here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_humanfix.computed_by import host

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted([*BENCHMARKS.glob("harness/*.py"), *BENCHMARKS.glob("engine/*.py")])

# Each script's --help, in one interpreter (one start-up for all of them): run as
# `python benchmarks/<folder>/<script>.py` runs it, its folder first on the path.
HELP_ALL = """
import contextlib, io, json, runpy, sys
helps = {}
for path in sys.argv[1:]:
    sys.argv = [path, "--help"]
    sys.path.insert(0, path.rsplit("/", 1)[0])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            runpy.run_path(path, run_name="__main__")
            code = "returned"
        except SystemExit as exit:
            code = exit.code
    helps[path] = {"code": code, "help": printed.getvalue()}
print(json.dumps(helps))
"""


@pytest.fixture
def common() -> ModuleType:
    """benchmarks/common.py, loaded from its file: no `common` module left behind."""
    spec = importlib.util.spec_from_file_location("benchmarks_common", BENCHMARKS / "common.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_is_in_the_harness_or_the_engine_folder():
    loose = [path.name for path in BENCHMARKS.glob("*.py") if path.name != "common.py"]
    assert loose == [], "benchmarks/ holds only common.py; a script goes in harness/ or engine/"
    folders = {path.parent.name for path in SCRIPTS}
    assert folders == {"harness", "engine"}


def test_every_benchmark_takes_json():
    done = subprocess.run([sys.executable, "-c", HELP_ALL, *map(str, SCRIPTS)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    helps = json.loads(done.stdout)
    failed = {Path(path).name: found["code"] for path, found in helps.items()
              if found["code"] != 0}
    assert failed == {}, "--help did not exit 0"
    without = [Path(path).name for path, found in helps.items()
               if "--json PATH" not in found["help"]]
    assert without == []


def test_write_json_writes_the_figures_with_the_machine(common, tmp_path):
    path = tmp_path / "figures" / "run.json"
    figures = {"ratio": 1.25, "rows": [{"config": "plain", "tokens_per_s": 4.5}],
               "report": tmp_path}
    computed = {"engine": "llamacpp", "device": "cpu", "dtype": "Q4_K_M"}

    common.write_json(path, figures, computed)

    written = json.loads(path.read_text())
    assert written["figures"] == {**figures, "report": str(tmp_path)}
    assert written["computed_by"] == computed
    assert {key: written["machine"][key] for key in host()} == host()
    assert {"platform", "python", "load"} <= written["machine"].keys()
    assert written["arguments"] == sys.argv[1:]
    assert written["commit"]


def test_write_json_without_a_path_writes_nothing(common, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    common.write_json(None, {"ratio": 1.0})
    assert list(tmp_path.iterdir()) == []


def test_a_benchmark_writes_its_figures_and_what_computed_them(tmp_path):
    # compare_agents reads two runs' JSONL: the cheapest script to run whole.
    runs = []
    for name, reply in (("first", "return 1"), ("second", "return 2")):
        record = {"task_id": "Python/0", "outcome": "fixed", "fixed_round": 0,
                  "attempts": [{"prompt": "fix it", "reply": reply}],
                  "computed_by": {"engine": name, "device": "cpu"}}
        runs.append(tmp_path / f"{name}.jsonl")
        runs[-1].write_text(json.dumps(record) + "\n")
    path = tmp_path / "compare.json"

    done = subprocess.run([sys.executable, "benchmarks/harness/compare_agents.py", *map(str, runs),
                           "--json", str(path)], capture_output=True, text=True, cwd=REPO,
                          timeout=60)

    assert done.returncode == 1, done.stdout + done.stderr
    written = json.loads(path.read_text())
    assert written["benchmark"] == "benchmarks/harness/compare_agents.py"
    assert written["figures"]["tasks_differ"] == 1
    assert written["figures"]["differences"] == {"Python/0": ["replies differ (1 and 1)"]}
    assert written["computed_by"] == {"first": {"engine": "first", "device": "cpu"},
                                      "second": {"engine": "second", "device": "cpu"}}


def test_print_table_aligns_its_columns_and_a_table_without_rows_is_its_header(common, capsys):
    common.print_table([{"runs": "cold / warm", "differ": 3, "rate": 0.5},
                        {"runs": "a / b", "differ": 12, "rate": None}],
                       ["runs", "differ", "rate"])
    assert capsys.readouterr().out.splitlines() == [
        "runs         differ  rate",
        "cold / warm       3  0.50",
        "a / b            12  None"]
    # A GPU run with no two runs to compare printed its rows, then died here on the empty
    # agreements table.
    common.print_table([], ["runs", "tasks", "differ"])
    assert capsys.readouterr().out.splitlines() == ["runs  tasks  differ"]
