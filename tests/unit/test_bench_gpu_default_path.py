"""benchmarks/engine/bench_gpu_default_path.py, the GPU run's script, on a CPU: what it reads
of an engine's start from the log's lines (vLLM's CPU build's as logged here, and the GPU path's
messages of vLLM 0.26), when the first task began, the GPU's busy share over a window, the log
watcher, and a whole run of the script on the controls (no engine): rows, agreements and the
archive as it writes them."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
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
# vLLM 0.32's CPU build sized by the plugin, 2026-12-05 (server-0.log of a `cold` phase of 4
# tasks with 2 workers; the lines from its KV cache to its answer).
SIZED_CPU_LOG = """\
(Worker pid=28242) INFO 12-05 08:24:13 [cpu_worker.py:260] Explicitly set (0.16/23.54) GiB for KV cache on node 0.
(EngineCore pid=27156) INFO 12-05 08:24:13 [kv_cache_utils.py:2327] CPU KV cache size: 6,703 tokens, Maximum concurrency for 1,738 tokens per request: 3.86x
(EngineCore pid=27156) INFO 12-05 08:24:13 [core.py:402] init engine (profile, create kv cache, warmup model) took 0.25 s
INFO:     Application startup complete."""  # noqa: E501
# vLLM 0.26.0 starting qwen-coder in bf16 on an H200, by the plugin's `launch` at its defaults
# then (2026-12-04, ../shared/gpu-runs/2026-12-04-h200, warm-engine.log; trimmed to the lines the
# script reads and the memory report, the last line before 100 s of nothing).
GPU_LOG = """\
(EngineCore pid=2495) INFO 12-04 18:04:07 [core.py:116] Initializing a V1 LLM engine (v0.26.0) with config: model='/root/gpu/hf', speculative_config=None
(EngineCore pid=2495) INFO 12-04 18:04:12 [default_loader.py:430] Loading weights took 0.36 seconds
(EngineCore pid=2495) INFO 12-04 18:04:14 [model_runner.py:305] Model loading took 1.18 GiB and 3.959789 seconds
(EngineCore pid=2495) INFO 12-04 18:04:19 [monitor.py:53] torch.compile took 4.64 s in total
(EngineCore pid=2495) INFO 12-04 18:04:21 [gpu_worker.py:560] Available KV cache memory: 126.87 GiB
(EngineCore pid=2495) INFO 12-04 18:04:21 [kv_cache_utils.py:2177] GPU KV cache size: 11,086,176 tokens
(EngineCore pid=2495) INFO 12-04 18:04:25 [model_runner.py:747] Graph capturing finished in 4 secs, took 0.39 GiB
(EngineCore pid=2495) INFO 12-04 18:04:25 [gpu_worker.py:857] Free memory on device (139.29/139.8 GiB) on startup. Desired GPU memory utilization is (0.92, 128.62 GiB).
(EngineCore pid=2495) INFO 12-04 18:06:06 [core.py:340] init engine (profile, create kv cache, warmup model) took 111.99 s (compilation: 4.64 s)
(APIServer pid=2423) INFO:     Application startup complete."""  # noqa: E501
# An eager engine given its KV cache's size, in vLLM 0.26's own format strings
# (v1/worker/gpu_worker.py, the --kv-cache-memory-bytes branch; v1/core/kv_cache_utils.py).
SIZED_GPU_LOG = """\
(EngineCore pid=7) INFO 12-05 10:00:02 [core.py:116] Initializing a V1 LLM engine (v0.26.0) with config: model='/root/gpu/hf'
(EngineCore pid=7) INFO 12-05 10:00:05 [gpu_worker.py:478] Initial free memory 139.29 GiB, reserved 1.1 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling.
(EngineCore pid=7) INFO 12-05 10:00:05 [kv_cache_utils.py:2177] GPU KV cache size: 96,096 tokens
(EngineCore pid=7) INFO 12-05 10:00:07 [core.py:340] init engine (profile, create kv cache, warmup model) took 5.01 s (compilation: 0.00 s)
(APIServer pid=8) INFO:     Application startup complete."""  # noqa: E501


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
                      "init_engine_s": 6.02, "kv_cache_gib": None, "kv_cache_tokens": None,
                      "core_at_s": 10.0, "kv_cache_at_s": None, "graphs_at_s": None,
                      "ready_at_s": 13.0, "healthy_s": 15.0, "warmup_s": None}


def h200_clock(text: str) -> list[tuple[float, str]]:
    """Each line stamped with the second of the day its own time says (the H200's log)."""
    stamped_lines = []
    for line in text.splitlines():
        found = re.search(r" (\d\d):(\d\d):(\d\d) ", line)
        if found:
            hours, minutes, seconds = map(int, found.groups())
            at = hours * 3600 + minutes * 60 + seconds
        stamped_lines.append((float(at), line))
    return stamped_lines


def test_the_gpu_paths_start_is_read_step_by_step(bench):
    started = 18 * 3600 + 4 * 60  # 7 s before the engine core's first line
    phases = bench.engine_start(h200_clock(GPU_LOG), started=started)
    assert phases == {"weights_s": 0.36, "load_s": 3.959789, "compile_s": 4.64,
                      "graphs_s": 4.0, "init_engine_s": 111.99, "kv_cache_gib": 126.87,
                      "kv_cache_tokens": 11086176.0, "core_at_s": 7.0, "kv_cache_at_s": 21.0,
                      "graphs_at_s": 25.0, "ready_at_s": 126.0, "healthy_s": 126.0,
                      "warmup_s": 101.0}


def test_the_cpu_builds_kv_cache_as_the_plugin_sized_it(bench):
    phases = bench.engine_start(stamped(SIZED_CPU_LOG), started=90.0)
    assert (phases["kv_cache_gib"], phases["kv_cache_tokens"], phases["init_engine_s"]) == \
        (0.16, 6703.0, 0.25)
    assert (phases["kv_cache_at_s"], phases["ready_at_s"], phases["warmup_s"]) == \
        (11.0, 12.0, 1.0)


def test_an_eager_sized_engines_warm_up_runs_from_its_kv_cache(bench):
    phases = bench.engine_start(stamped(SIZED_GPU_LOG, start=50.0), started=40.0)
    assert (phases["kv_cache_gib"], phases["kv_cache_tokens"]) == (1.1, 96096.0)
    assert (phases["graphs_at_s"], phases["kv_cache_at_s"], phases["ready_at_s"]) == \
        (None, 12.0, 13.0)
    assert phases["warmup_s"] == 1.0


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


def test_the_engine_levers_are_phases_that_start_their_own_engine(bench, tmp_path):
    args = argparse.Namespace(cpu_rehearsal=None, lever_args="--max-num-seqs 1024",
                              workers="auto", out=tmp_path)
    script = bench.Bench(args)
    assert script.arguments("eager") == ["--humanfix-engine-args", "--enforce-eager"]
    assert script.arguments("flashinfer") == []
    assert bench.PHASE_ENVIRONMENT["flashinfer"] == {"VLLM_USE_FLASHINFER_SAMPLER": "1"}
    assert script.arguments("levers") == ["--humanfix-engine-args", "--max-num-seqs 1024"]
    assert ("eager", "cold") in bench.COMPARED and ("flashinfer", "cold") in bench.COMPARED
    # A CPU rehearsal starts vLLM's CPU build in each of them.
    args.cpu_rehearsal = "/envs/vllm/bin/python"
    assert bench.Bench(args).arguments("eager")[:3] == \
        ["--humanfix-serve", "--humanfix-engine", "vllm"]


def test_the_warm_engine_is_sized_for_the_phases_workers(bench, tmp_path, monkeypatch):
    args = argparse.Namespace(cpu_rehearsal=None, workers="3", out=tmp_path)
    script = bench.Bench(args)
    assert script.workers(bench.Settings(model="m")) == 3
    args.workers = "auto"  # as the plugin resolves it, else one a core as xdist does
    monkeypatch.setattr(bench, "auto_num_workers", lambda settings: 16)
    assert script.workers(bench.Settings(model="m")) == 16
    monkeypatch.setattr(bench, "auto_num_workers", lambda settings: None)
    assert script.workers(bench.Settings(model="m")) == len(bench.os.sched_getaffinity(0))
