"""benchmarks/engine/bench_gpu_default_path.py, the GPU run's script, on a CPU: what it reads
of an engine's start from the log's lines (vLLM's CPU build's as logged here, and the GPU path's
messages of vLLM 0.26), when the first task began, the GPU's busy share over a window, the log
watcher, and a whole run of the script on the controls (no engine): rows, agreements and the
archive as it writes them."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "engine" / "bench_gpu_default_path.py"

# Lines of vLLM 0.32's CPU build starting qwen-coder, as its log held them in a rehearsal of
# the script here (server-0.log of the `cold` phase; trimmed to the lines the script reads and
# two it must pass over).
CPU_LOG = """\
(EngineCore pid=10770) INFO 12-02 15:41:28 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: model='/root/.cache/pytest-humanfix/dequantized/qwen2.5-coder-0.5b-instruct-q4_k_m-3add6d112bf5', ...
(Worker pid=10807) INFO 12-02 15:41:38 [base_loader.py:82] Initializing model took 0.119332 seconds
(Worker pid=10807) INFO 12-02 15:41:44 [default_loader.py:501] Loading weights took 5.98 seconds
(EngineCore pid=10770) INFO 12-02 15:41:54 [core.py:402] init engine (profile, create kv cache, warmup model) took 6.02 s
(APIServer pid=10694) INFO 12-02 15:41:56 [entry.py:136] Supported tasks: ['generate']
INFO:     Application startup complete."""  # noqa: E501
# The messages of vLLM 0.26's GPU path, in its own format strings (gpu_model_runner.py,
# gpu_worker.py, compilation/monitor.py, v1/engine/core.py), figures filled in.
GPU_LOG = """\
(EngineCore pid=7) INFO 12-02 10:00:02 [core.py:117] Initializing a V1 LLM engine (v0.26.0) with config: model='/root/gpu/hf'
(EngineCore pid=7) INFO 12-02 10:00:05 [default_loader.py:431] Loading weights took 0.45 seconds
(EngineCore pid=7) INFO 12-02 10:00:05 [gpu_model_runner.py:5348] Model loading took 0.93 GiB memory and 1.052311 seconds
(EngineCore pid=7) INFO 12-02 10:00:31 [monitor.py:20] torch.compile took 21.37 s in total
(EngineCore pid=7) INFO 12-02 10:00:33 [gpu_worker.py:561] Available KV cache memory: 118.4 GiB
(EngineCore pid=7) INFO 12-02 10:00:44 [gpu_model_runner.py:6845] Graph capturing finished in 9 secs, took 0.52 GiB
(EngineCore pid=7) INFO 12-02 10:00:44 [core.py:341] init engine (profile, create kv cache, warmup model) took 38.90 s (compilation: 21.37 s)
INFO:     Application startup complete."""  # noqa: E501


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gpu_default_path", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stamped(text: str, start: float = 100.0) -> list[tuple[float, str]]:
    return [(start + second, line) for second, line in enumerate(text.splitlines())]


def test_the_cpu_builds_start_is_its_weights_its_init_and_when_each_step_ended(bench):
    phases = bench.engine_start(stamped(CPU_LOG), started=90.0)
    assert phases == {"weights_s": 5.98, "load_s": None, "compile_s": None, "graphs_s": None,
                      "init_engine_s": 6.02, "kv_cache_gib": None,
                      "core_at_s": 10.0, "ready_at_s": 13.0, "healthy_s": 15.0}


def test_the_gpu_paths_start_is_read_step_by_step(bench):
    phases = bench.engine_start(stamped(GPU_LOG, start=50.0), started=40.0)
    assert phases == {"weights_s": 0.45, "load_s": 1.052311, "compile_s": 21.37,
                      "graphs_s": 9.0, "init_engine_s": 38.9, "kv_cache_gib": 118.4,
                      "core_at_s": 10.0, "ready_at_s": 16.0, "healthy_s": 17.0}


def test_an_engine_that_never_answered_has_no_healthy_second(bench):
    lines = stamped(CPU_LOG)[:-1]
    assert bench.engine_start(lines, started=0.0)["healthy_s"] is None


def test_the_first_task_began_its_seconds_before_its_record_came(bench):
    records = [(30.0, json.dumps({"seconds": 12.5})), (31.0, json.dumps({"seconds": 20.0})),
               (31.5, "not a record: skipped")]
    assert bench.first_request(records) == 11.0
    assert bench.first_request([]) is None


def test_busy_share_is_the_mean_of_the_samples_inside_the_window(bench):
    samples = [(0.0, 0.0), (1.0, 90.0), (1.5, 100.0), (2.0, 80.0), (3.0, 0.0)]
    assert bench.busy_share(samples, 1.0, 2.0) == 90.0
    assert bench.busy_share(samples, 5.0, 6.0) is None  # no nvidia-smi, or no sample there


def test_the_watcher_stamps_whole_lines_and_holds_a_partial_one(bench, tmp_path):
    clock = bench.Clock()
    watcher = bench.Watcher(clock)
    path = tmp_path / "server-0.log"
    lines = watcher.watch(path)
    watcher.read_all()  # not there yet
    path.write_text("loading\nhalf")
    watcher.read_all()
    assert [line for _, line in lines] == ["loading"]
    appended = clock.now()
    with path.open("a") as log:
        log.write(" done\n")
    watcher.read_all()
    assert [line for _, line in lines] == ["loading", "half done"]
    assert lines[0][0] < appended <= lines[1][0]  # stamped when seen, not when read first


def test_a_file_watched_again_or_written_anew_is_read_from_its_start(bench, tmp_path):
    watcher = bench.Watcher(bench.Clock())
    path = tmp_path / "server-0.log"
    path.write_text("first start, line one\nfirst start, line two\n")
    first = watcher.watch(path)
    watcher.read_all()
    again = watcher.watch(path)  # a second engine's log, at the same path
    path.write_text("second start\n")  # shorter than what was read of the first
    watcher.read_all()
    assert [line for _, line in first] == ["first start, line one", "first start, line two"]
    assert [line for _, line in again] == ["second start"]


def test_a_run_of_the_script_on_the_controls_writes_every_row_and_the_agreements(tmp_path):
    out, figures, archive = tmp_path / "out", tmp_path / "figures.json", tmp_path / "runs.tgz"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--model", "canonical", "--out", str(out), "--max", "3",
         "-n", "1", "--phases", "cold,deterministic,deterministic", "--json", str(figures),
         "--archive", str(archive)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    written = json.loads(figures.read_text())
    rows = written["figures"]["rows"]
    assert [row["phase"] for row in rows] == ["cold", "deterministic-1", "deterministic-2"]
    for row in rows:
        assert (row["status"], row["tasks"], row["fixed"], row["pass_at_1"]) == ("0", 3, 3, 1.0)
        assert row["engine_start"] is None  # a control starts no engine
        assert 0 <= row["first_task_s"] <= row["first_record_s"] <= row["wall_s"]
        if shutil.which("nvidia-smi") is None:
            assert row["gpu_busy_generating"] is None
    assert [(a["runs"], a["tasks"], a["differ"]) for a in written["figures"]["agreements"]] \
        == [("deterministic-1 / deterministic-2", 3, 0), ("cold / deterministic-1", 3, 0)]
    assert written["computed_by"]["cold"]["engine"] == "control"
    with tarfile.open(archive) as kept:
        names = set(kept.getnames())
    assert {"cold/humanfix.jsonl", "cold/summary.json", "cold.out",
            "deterministic-2/humanfix.jsonl"} <= names


def test_an_unknown_phase_is_refused_with_the_phases_it_takes(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--model", "canonical", "--out", str(tmp_path),
         "--phases", "cold,hot"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "unknown phases ['hot']" in done.stderr and "in-process" in done.stderr
