"""What computed a run's replies (`computed_by`): read from ggml's system info and the library,
compared field by field, written in every record and view of the summary, and held against a
baseline and between shards."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix import computed_by
from pytest_humanfix.reporting.cli import main as report_main

# ggml's system info of the portable build and of a native AVX-512 build, as this version
# prints them.
PORTABLE_INFO = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
                 "BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ")
NATIVE_INFO = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
               "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
               "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ")
PORTABLE = {"engine": "llamacpp", "version": "llama-cpp-python 0.3.36",
            "kernels": "x86-64-v3: AVX AVX2 BMI2 F16C FMA SSE3 SSSE3", "device": "cpu",
            "dtype": "qwen2 1B Q4_K - Medium", "threads": 1, "host": {"cpu": "AMD EPYC"}}


def test_the_kernels_are_read_from_ggml_and_the_portable_set_is_named():
    kernels = computed_by.ggml_kernels(PORTABLE_INFO)
    assert kernels == ["AVX", "AVX2", "BMI2", "F16C", "FMA", "SSE3", "SSSE3"]
    assert computed_by.kernel_set(kernels) == "x86-64-v3"
    assert computed_by.ggml_build_features(PORTABLE_INFO) == ["LLAMAFILE", "OPENMP", "REPACK"]
    native = computed_by.ggml_kernels(NATIVE_INFO)
    assert "AVX512_VNNI" in native and computed_by.kernel_set(native) == "not portable"
    assert computed_by.kernel_set(["AVX", "SSE3", "SSSE3"]) == "not portable"


def test_the_compiler_is_read_from_the_library(tmp_path):
    library = tmp_path / "libggml-cpu.so"
    library.write_bytes(b"\x7fELF\0\0junk\0GCC: (Debian 12.2.0-14) 12.2.0\0more")
    assert computed_by.compiler_of(library) == "GCC: (Debian 12.2.0-14) 12.2.0"
    (tmp_path / "bare.so").write_bytes(b"\x7fELF nothing")
    assert computed_by.compiler_of(tmp_path / "bare.so") == "unknown"
    assert computed_by.compiler_of(tmp_path / "missing.so") == "unknown"


def test_the_installed_llama_cpp_says_what_it_computes_with():
    import llama_cpp

    described = computed_by.llamacpp(llama_cpp, 2, "tiny F32")
    assert described["engine"] == "llamacpp"
    assert described["version"].startswith("llama-cpp-python 0.3.")
    kernels = described["kernels"].split(": ", 1)[1].split()
    assert kernels == computed_by.ggml_kernels(
        llama_cpp.llama_print_system_info().decode())
    assert described["build"].startswith("LLAMAFILE OPENMP REPACK; GCC: ")
    assert (described["threads"], described["dtype"], described["device"]) == (2, "tiny F32", "cpu")


def test_only_what_decides_the_arithmetic_is_compared():
    assert computed_by.differences(PORTABLE, dict(PORTABLE)) == []
    # Another machine or thread count with the same kernels computes the same replies.
    elsewhere = {**PORTABLE, "threads": 2, "host": {"cpu": "Intel Xeon"}}
    assert computed_by.differences(elsewhere, PORTABLE) == []
    native = {**PORTABLE, "kernels": "not portable: AVX AVX2 AVX512"}
    assert computed_by.differences(native, PORTABLE) == [
        "kernels: 'not portable: AVX AVX2 AVX512' there, "
        "'x86-64-v3: AVX AVX2 BMI2 F16C FMA SSE3 SSSE3' here"]
    assert computed_by.differences(None, None) == []
    (line,) = computed_by.differences(None, PORTABLE)
    assert line.startswith("computed_by: not recorded there, llamacpp; llama-cpp-python 0.3.36")


def test_one_line_says_engine_kernels_dtype_threads_and_machine():
    line = computed_by.describe(PORTABLE)
    assert line == ("llamacpp; llama-cpp-python 0.3.36; kernels x86-64-v3: AVX AVX2 BMI2 F16C "
                    "FMA SSE3 SSSE3; device cpu; dtype qwen2 1B Q4_K - Medium; 1 thread(s) per "
                    "engine; on AMD EPYC")
    assert computed_by.describe(None) == "not recorded"


def canonical_run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "canonical",
                              "--humanfix-max", "3", *args)


def test_every_view_of_a_run_says_what_computed_it(humanfix_pytester, read_records):
    result = canonical_run(humanfix_pytester)
    result.assert_outcomes(passed=3)
    reports = humanfix_pytester.path / "reports"
    records = read_records()
    assert {json.dumps(r["computed_by"]) for r in records} == {json.dumps(
        {"engine": "control", "device": "none"})}
    line = "control; device none"
    summary = json.loads((reports / "summary.json").read_text())
    assert summary["run"]["computed_by"] == [
        {"computed_by": records[0]["computed_by"], "tasks": 3, "line": line}]
    assert f"computed by: {line}" in result.outlines
    assert f"| computed by | {line} |" in (reports / "summary.md").read_text()
    properties = {p.get("name"): p.get("value")
                  for p in ET.parse(reports / "junit.xml").getroot().iter("property")}
    assert properties["humanfix_computed_by"] == line


def with_computed_by(source: Path, target: Path, described: dict | None) -> Path:
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    target.write_text("".join(json.dumps({**row, "computed_by": described}) + "\n"
                              for row in rows))
    return target


def test_a_baseline_computed_otherwise_is_named_and_may_fail_the_gate(humanfix_pytester,
                                                                      tmp_path):
    canonical_run(humanfix_pytester).assert_outcomes(passed=3)
    reports = humanfix_pytester.path / "reports"
    baseline = with_computed_by(reports / "humanfix.jsonl", tmp_path / "baseline.jsonl",
                                {**PORTABLE, "engine": "control"})
    warned = canonical_run(humanfix_pytester, f"--humanfix-baseline={baseline}")
    assert warned.ret == 0
    (verdict,) = [line for line in warned.outlines if line.startswith("humanfix gates")]
    assert verdict.startswith("humanfix gates held: 0 regression(s)")
    assert ("WARNING: the baseline was computed otherwise than this run (device: 'cpu' there, "
            "'none' here; version: 'llama-cpp-python 0.3.36' there, None here; kernels: ") \
        in verdict
    refused = canonical_run(humanfix_pytester, f"--humanfix-baseline={baseline}",
                            "--humanfix-computed-by-mismatch=error")
    assert refused.ret == 1
    assert any(line.startswith("humanfix gate FAILED: the baseline was computed otherwise")
               and "--humanfix-computed-by-mismatch error refuses" in line
               for line in refused.outlines)
    # The same figures and the same check from the files alone.
    assert report_main([str(reports / "humanfix.jsonl"), "--baseline", str(baseline),
                        "--computed-by-mismatch", "error", "--out", str(tmp_path / "r")]) == 1
    same = with_computed_by(reports / "humanfix.jsonl", tmp_path / "same.jsonl",
                            {"engine": "control", "device": "none"})
    held = canonical_run(humanfix_pytester, f"--humanfix-baseline={same}",
                         "--humanfix-computed-by-mismatch=error")
    assert held.ret == 0
    assert not any("computed otherwise" in line for line in held.outlines)


def test_shards_computed_otherwise_merge_only_when_accepted(humanfix_pytester, tmp_path,
                                                            capsys):
    shards = []
    for index in (1, 2):
        canonical_run(humanfix_pytester, f"--humanfix-shard={index}/2",
                      f"--humanfix-report-dir=shard{index}")
        shards.append(humanfix_pytester.path / f"shard{index}" / "humanfix.jsonl")
    other = with_computed_by(shards[1], tmp_path / "other.jsonl", PORTABLE)
    assert report_main(["merge", str(shards[0]), str(other), "--out",
                        str(tmp_path / "refused")]) == 2
    error = capsys.readouterr().err
    assert "its replies were computed otherwise than shard 1/2" in error
    assert "--accept-computed-by-differences" in error
    assert not (tmp_path / "refused" / "humanfix.jsonl").exists()
    assert report_main(["merge", str(shards[0]), str(other), "--out", str(tmp_path / "merged"),
                        "--accept-computed-by-differences"]) == 0
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert sorted(entry["computed_by"]["engine"] for entry in summary["run"]["computed_by"]) \
        == ["control", "llamacpp"]
    assert sum(entry["tasks"] for entry in summary["run"]["computed_by"]) == 3


def test_determinism_in_process_is_set_as_asked_and_recorded(tiny_model, monkeypatch):
    import torch

    from pytest_humanfix.models.hf import TransformersModel
    from pytest_humanfix.settings import Settings

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    try:
        on = TransformersModel(str(tiny_model), str(tiny_model),
                               GenerationConfig.of(Settings(model=str(tiny_model), deterministic="on")))
        assert torch.are_deterministic_algorithms_enabled()
        assert on.computed_by["determinism"] == {"deterministic_algorithms": True,
                                                 "cublas_workspace": ":4096:8",
                                                 "cudnn_benchmark": False}
        assert on.computed_by["attention"] == "sdpa"
        monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG")
        off = TransformersModel(str(tiny_model), str(tiny_model), GenerationConfig.of(Settings(model=str(tiny_model))))
        assert not torch.are_deterministic_algorithms_enabled()
        assert off.computed_by["determinism"]["deterministic_algorithms"] is False
        assert off.computed_by["determinism"]["cublas_workspace"] is None
        assert (off.computed_by["engine"], off.computed_by["dtype"]) == ("transformers", "float32")
        assert off.computed_by["device"].startswith("cpu (")
        # Plain builtins only: the record crosses xdist's channel.
        assert json.loads(json.dumps(off.computed_by)) == off.computed_by
        assert type(off.computed_by["torch"]) is str
    finally:
        torch.use_deterministic_algorithms(False)


def test_vllm_on_a_gpu_runs_batch_invariant_when_asked_and_says_so(monkeypatch, tmp_path):
    from pytest_humanfix.models.engines import kinds, launch
    from pytest_humanfix.settings import Settings

    monkeypatch.setattr(launch, "gpu_description", lambda device: f"NVIDIA H100 (sm_90) #{device}")
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    model = kinds.ServedModel("vllm", "/m", "/m")
    on = Settings(model="/m", deterministic="on")
    engine = launch.new_engine(model, tmp_path / "log", "1", on)
    assert engine.environment == (("VLLM_BATCH_INVARIANT", "1"),)
    assert engine.endpoint()["computed_by"] == {
        "device": "NVIDIA H100 (sm_90) #1", "determinism": {"VLLM_BATCH_INVARIANT": "1"}}
    # The user's own value wins, and is what is recorded.
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")
    assert engine.endpoint()["computed_by"]["determinism"] == {"VLLM_BATCH_INVARIANT": "0"}
    off = launch.new_engine(model, tmp_path / "log", "1", Settings(model="/m"))
    assert off.environment == () and off.endpoint()["computed_by"]["determinism"] == "off"
    # No batch-invariant mode for vLLM on a CPU, nor for the other engines.
    assert launch.new_engine(model, tmp_path / "log", None, on).environment == ()
    llamacpp = kinds.ServedModel("llamacpp", "/m.gguf", "/m.gguf")
    assert launch.new_engine(llamacpp, tmp_path / "log", None, on).environment == ()
    assert "computed_by" not in launch.new_engine(llamacpp, tmp_path / "log", None, on).endpoint()


@pytest.fixture
def answering(request):
    """A loopback server that answers GET paths with the JSON given (anything else: 404)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    routes: dict[str, dict] = request.param

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps(routes.get(self.path, {})).encode()
            self.send_response(200 if self.path in routes else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


@pytest.mark.parametrize("answering, engine, expected", [
    ({"/props": {"computed_by": PORTABLE}}, "llamacpp", PORTABLE),
    ({"/props": {"build_info": "b6000-abc", "model_ftype": "Q4_K - Medium"}}, "openai",
     {"engine": "llama-server", "version": "b6000-abc", "kernels": "unknown", "device": "unknown",
      "dtype": "Q4_K - Medium"}),
    ({"/version": {"version": "0.26.0"}}, "vllm",
     {"engine": "vllm", "version": "0.26.0", "device": "unknown"}),
], indirect=["answering"])
def test_a_server_says_what_it_computes_with_where_it_can(answering, engine, expected):
    from pytest_humanfix.models.openai_servers import server_computed_by

    assert server_computed_by(answering, engine) == expected


@pytest.mark.parametrize("answering", [{}], indirect=True)
def test_a_server_that_says_nothing_is_recorded_as_unknown(answering):
    from pytest_humanfix.models.openai_servers import server_computed_by

    described = server_computed_by(answering, "openai")
    assert (described["engine"], described["version"], described["device"]) == \
        ("openai", "unknown", "unknown")
    assert described["note"] == f"the server at {answering} says nothing of what it runs"


def test_transformers_serve_says_nothing_so_the_run_that_started_it_does(tmp_path):
    import torch
    import transformers

    from pytest_humanfix.models.engines import kinds, launch
    from pytest_humanfix.settings import Settings

    model = kinds.ServedModel("transformers", "/m", "/m")
    said = launch.new_engine(model, tmp_path / "log", None, Settings(model="/m")).endpoint()
    assert said["computed_by"]["version"] == f"transformers {transformers.__version__}"
    assert said["computed_by"]["torch"] == str(torch.__version__)
    assert said["computed_by"]["device"].startswith("cpu (") and \
        said["computed_by"]["dtype"] == "float32"
    # It replaces the "says nothing" of the server's own answer (runner._load_model).
    assert "described by the run that started it" in said["computed_by"]["note"]
    json.dumps(said)  # plain data for workerinput
