"""Real OpenAI-compatible servers on loopback: `transformers serve` on the tiny model, started by
server.py both for the openai: backend test and by the plugin itself under --humanfix-serve."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest
from serving import (
    assert_answered_by_a_model,
    assert_served_and_gone,
    chat_requests,
    engine_pid_and_port,
    process_alive,
    processes_with,
)

from pytest_humanfix.models.engines import commands, kinds, launch, serving
from pytest_humanfix.settings import Settings

TINY = ("--humanfix-max", "2", "--humanfix-max-new-tokens", "16", "-n", "2")


@pytest.mark.slow
def test_openai_backend_against_transformers_serve(humanfix_pytester, tiny_engine, read_records):
    before = chat_requests(tiny_engine.log_path)
    # Not asking ahead: this counts one request a task, and with asking ahead CI once counted
    # three for two tasks (a request asked ahead and not handed over is one more; asking ahead
    # has its own tests in tests/unit/session).
    humanfix_pytester.runpytest("--humanfix-model", f"openai:{tiny_engine.model.name}",
                                "--humanfix-base-url", tiny_engine.base_url, *TINY,
                                "--humanfix-ask-ahead", "0")
    assert_answered_by_a_model(read_records(), 2)
    assert chat_requests(tiny_engine.log_path) - before == 2




@pytest.mark.slow
def test_serve_shares_one_engine_and_leaves_nothing_running(humanfix_pytester, tiny_model,
                                                            read_records):
    result = humanfix_pytester.runpytest("--humanfix-model", str(tiny_model), "--humanfix-serve",
                                         *TINY)
    pid, port = engine_pid_and_port(result.outlines, "transformers")
    reports = humanfix_pytester.path / "reports"
    assert sorted(p.name for p in reports.glob("server-*.log")) == ["server-0.log"]
    assert_served_and_gone(read_records(), reports / "server-0.log", pid, port)


@pytest.mark.slow
def test_an_engine_that_cannot_start_is_a_clear_error(humanfix_pytester, tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    # Looks like a model folder to the spec check; the engine itself cannot load it.
    (empty / "config.json").write_text("{}")
    result = humanfix_pytester.runpytest("--humanfix-model", str(empty), "--humanfix-serve",
                                         "--humanfix-max", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = "\n".join(result.errlines)
    assert "the transformers engine for" in message and "exited with status" in message
    assert "server-0.log" in message
    assert processes_with(str(empty)) == []


def test_serve_needs_a_model_an_engine_can_load(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-serve")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--humanfix-serve starts an engine for a transformers model*"])


def test_each_worker_is_pointed_at_an_engine_round_robin():
    model = kinds.ServedModel("transformers", "m", "m")
    engines = [launch.Engine(model, str(d), 9000 + d, Path(f"server-{d}.log"), []) for d in (0, 1)]
    shared = serving.Serving(engines)
    ports = [shared.endpoint_for(w)["base_url"].rsplit(":", 1)[1] for w in ("gw0", "gw1", "gw2")]
    assert ports == ["9000/v1", "9001/v1", "9000/v1"]


def pretend_installed(monkeypatch, *engines: str) -> None:
    """Only `engines` count as installed, whatever this machine has."""
    monkeypatch.setattr(kinds, "installed", lambda kind, python=None: kind.name in engines)


def test_vllm_is_preferred_with_a_gpu(monkeypatch):
    pretend_installed(monkeypatch, "vllm", "llamacpp", "transformers")
    settings = Settings(model="org/model")
    assert kinds.choose_engine(settings, kinds.served_spec("org/model"), gpus=True) == "vllm"
    assert kinds.choose_engine(settings, kinds.served_spec("org/model"), gpus=False) == \
        "transformers"
    command = commands.engine_command(kinds.ServedModel("vllm", "org/model", "org/model"), 8123,
                                    "0", seed=3)
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert "--port" in command and "8123" in command


def test_vllm_parses_tool_calls_only_for_the_tools_agent():
    vllm = kinds.ServedModel("vllm", "org/model", "org/model")
    flags = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    command = commands.engine_command(vllm, 8123, "0", seed=0, tools=True)
    assert command[-3:] == flags
    assert "--tool-call-parser" not in commands.engine_command(vllm, 8123, "0", seed=0)
    # The user's arguments still come last, to override ours.
    assert commands.engine_command(vllm, 8123, "0", seed=0, engine_args=("--x",),
                                 tools=True)[-4:] == [*flags, "--x"]


def test_an_engine_that_is_not_installed_names_its_extra(monkeypatch):
    pretend_installed(monkeypatch, "transformers")
    for engine, install in (("llamacpp", "pytest-humanfix[llamacpp]"),
                            ("vllm", "pip install 'pytest-humanfix[vllm]'"),
                            ("vllm", "bash scripts/setup-vllm")):
        settings = Settings(model="org/model", engine=engine)
        with pytest.raises(kinds.ServeError, match=re.escape(install)):
            kinds.choose_engine(settings, kinds.served_spec("org/model"), gpus=False)


def test_the_llamacpp_engine_takes_every_core_and_the_gguf_itself():
    model = kinds.ServedModel("llamacpp", "/m/model.gguf", "/m/model.gguf")
    command = commands.engine_command(model, 8123, None, seed=0)
    assert command[1:3] == ["-m", "pytest_humanfix.models.engines.llamacpp"]
    threads = command[command.index("--n_threads") + 1]
    assert threads == str(len(os.sched_getaffinity(0)))
    assert command[command.index("--model") + 1] == "/m/model.gguf"
    assert command[command.index("--model_alias") + 1] == "/m/model.gguf"


def test_one_engine_per_device_respecting_cuda_visible_devices(monkeypatch):
    from pytest_humanfix.settings import Settings

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert serving.serve_devices(Settings(model="m")) == ["2", "5"]
    # Numbers in --humanfix-devices count the GPUs left visible, as torch numbers them.
    assert serving.serve_devices(Settings(model="m", devices=("1",))) == ["5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert serving.serve_devices(Settings(model="m")) == [None]


def test_tensor_parallel_is_one_vllm_engine_over_every_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5,6,7")
    settings = Settings(model="org/model", serve_layout="tensor-parallel")
    assert serving.serve_devices(settings) == ["2,5,6,7"]
    assert serving.serve_devices(Settings(model="org/model")) == ["2", "5", "6", "7"]
    vllm = kinds.ServedModel("vllm", "org/model", "org/model")
    command = commands.engine_command(vllm, 8123, "2,5,6,7", seed=0)
    assert command[command.index("--tensor-parallel-size") + 1] == "4"
    # One GPU per engine: no tensor parallelism.
    assert "--tensor-parallel-size" not in commands.engine_command(vllm, 8123, "2", seed=0)
    serving.check_layout(settings, "vllm")
    for engine in ("llamacpp", "transformers"):
        with pytest.raises(kinds.ServeError, match="tensor-parallel needs the vllm engine"):
            serving.check_layout(settings, engine)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(kinds.ServeError, match="none is visible; drop the option"):
        serving.serve_devices(settings)
    # One GPU is no tensor parallelism either: refused, not run as one engine.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    with pytest.raises(kinds.ServeError, match="only GPU 5 is visible; drop the option"):
        serving.serve_devices(settings)


def test_tensor_parallel_on_one_gpu_or_none_is_a_usage_error(humanfix_pytester, monkeypatch):
    for visible in ("", "0"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        result = humanfix_pytester.runpytest("--humanfix-model", "org/model", "--humanfix-serve",
                                             "--humanfix-serve-layout", "tensor-parallel")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*tensor-parallel spreads one engine over several GPUs*"])


def test_vllm_on_a_cpu_starts_eager_in_float32_under_the_users_arguments():
    vllm = kinds.ServedModel("vllm", "/m", "/m")
    command = commands.engine_command(vllm, 8123, None, seed=0, engine_args=("--dtype", "bf16"))
    assert command[-len(kinds.VLLM_CPU_ARGS) - 2:] == [*kinds.VLLM_CPU_ARGS, "--dtype", "bf16"]
    assert "--enforce-eager" not in commands.engine_command(vllm, 8123, "0", seed=0)


def test_vllm_runs_under_the_python_it_is_given(humanfix_pytester, monkeypatch, tmp_path):
    vllm = kinds.ServedModel("vllm", "/m", "/m")
    assert commands.engine_command(vllm, 8123, "0", seed=0)[0] == sys.executable
    settings = Settings(model="/m", vllm_python="/envs/vllm/bin/python")
    engine = launch.new_engine(vllm, tmp_path / "log", None, settings)
    assert engine.command[:3] == ["/envs/vllm/bin/python", "-m",
                                  "vllm.entrypoints.openai.api_server"]
    # Only vLLM's: the other engines are this project's own modules.
    llamacpp = kinds.ServedModel("llamacpp", "/m.gguf", "/m.gguf")
    assert launch.new_engine(llamacpp, tmp_path / "log", None, settings).command[0] == \
        sys.executable
    # A relative path is the invocation folder's; the environment variable names it too.
    config = humanfix_pytester.parseconfig("--humanfix-vllm-python=.venv-vllm/bin/python")
    assert Settings.from_config(config).vllm_python == \
        str(humanfix_pytester.path / ".venv-vllm" / "bin" / "python")
    monkeypatch.setenv("HUMANFIX_VLLM_PYTHON", "/opt/vllm/bin/python")
    assert Settings.from_config(humanfix_pytester.parseconfig()).vllm_python == \
        "/opt/vllm/bin/python"


def test_whether_an_engine_is_installed_is_asked_of_its_python(tmp_path):
    present = kinds.EngineKind("k", ("json", "sqlite3"), "", "/")
    absent = kinds.EngineKind("k", ("json", "no_such_module_here"), "", "/")
    assert kinds.installed(present, sys.executable)
    assert not kinds.installed(absent, sys.executable)
    assert not kinds.installed(present, str(tmp_path / "no-python"))
    with pytest.raises(kinds.ServeError, match=re.escape(
            f"vllm: the engine is not installed for {tmp_path / 'no-python'}; install it")
            + ".*bash scripts/setup-vllm.*--humanfix-vllm-python"):
        kinds.choose_engine(Settings(model="org/model", engine="vllm",
                                      vllm_python=str(tmp_path / "no-python")),
                             kinds.served_spec("org/model"), gpus=False)


def test_vllm_takes_a_gguf_dequantized(monkeypatch, tiny_gguf, tmp_path):
    pretend_installed(monkeypatch, "vllm")
    monkeypatch.setattr(kinds, "dequantized_folder", lambda gguf: tmp_path / "folder")
    served = kinds.served_model(Settings(model=str(tiny_gguf), engine="vllm"), gpus=False)
    assert served == kinds.ServedModel("vllm", str(tmp_path / "folder"),
                                        str(tmp_path / "folder"))


def test_vllm_takes_enough_stop_strings_unless_the_user_says_otherwise(monkeypatch, tmp_path):
    show = [sys.executable, "-c", "import os; print(os.environ['VLLM_MAX_STOP_STRINGS'])"]
    model = kinds.ServedModel("vllm", "/m", "/m")
    monkeypatch.setattr(launch, "engine_version", lambda kind, python=None: "0.32.0")
    for users, seen in ((None, kinds.VLLM_STOP_STRINGS), ("16", "16")):
        if users is None:
            monkeypatch.delenv("VLLM_MAX_STOP_STRINGS", raising=False)
        else:
            monkeypatch.setenv("VLLM_MAX_STOP_STRINGS", users)
        engine = launch.new_engine(model, tmp_path / f"{seen}.log", None, Settings(model="/m"))
        engine.command = show
        engine.start()
        assert engine.process is not None and engine.process.wait(60) == 0
        assert engine.log_path.read_text().splitlines()[-1] == seen


@pytest.mark.parametrize("engine", ["vllm", "llamacpp", "transformers"])
def test_engine_args_come_last_in_every_engine_command(engine):
    model = kinds.ServedModel(engine, "org/model", "org/model")
    extra = ("--max-model-len", "8192", "--enforce-eager")
    plain = commands.engine_command(model, 8123, "0", seed=0)
    assert commands.engine_command(model, 8123, "0", seed=0, engine_args=extra) == \
        plain + list(extra)


def test_engine_args_are_split_as_a_shell_splits_them(humanfix_pytester):
    config = humanfix_pytester.parseconfig(
        "--humanfix-engine-args", "--max-model-len 8192 --chat-template '/a b/t.jinja'")
    assert Settings.from_config(config).engine_args == (
        "--max-model-len", "8192", "--chat-template", "/a b/t.jinja")
    result = humanfix_pytester.runpytest("--humanfix-model=canonical",
                                         "--humanfix-engine-args=--x 'open")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--humanfix-engine-args / humanfix_engine_args: \"--x 'open\" cannot be split into " \
           "arguments (No closing quotation)" in result.stderr.str()


def test_the_summary_says_how_the_engines_were_started():
    model = kinds.ServedModel("vllm", "m", "m")
    engines = [launch.Engine(model, "0,1", 9000, Path("server-0.log"), [])]
    facts = serving.Serving(engines, "tensor-parallel", ("--enforce-eager",)).facts()
    assert facts == {"engine": "vllm", "layout": "tensor-parallel",
                     "engine_args": ["--enforce-eager"],
                     "engines": [{"devices": "0,1", "base_url": "http://127.0.0.1:9000/v1"}],
                     "cpu_layout": None}


ENGINE_MODELS = {"transformers": "tiny_model", "llamacpp": "tiny_gguf"}


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(ENGINE_MODELS))
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "crash"])
def test_the_engine_stops_when_the_run_is_interrupted_or_killed(humanfix_pytester, request,
                                                                 engine, signum, spawn_pytest):
    model = request.getfixturevalue(ENGINE_MODELS[engine])
    run = spawn_pytest("-p", "no:cacheprovider", "--humanfix-model", str(model),
                       "--humanfix-serve", "--humanfix-engine", engine, "--humanfix-max", "30")
    log = humanfix_pytester.path / "reports" / "server-0.log"
    port = None
    try:
        # Any answer will do, an error included: llama-cpp-python 0.3.36 can run a random-weight
        # model's reply to the end of the context (its UTF-8 repair skips the max_tokens check)
        # and answer 500, and all this test needs is an engine at work for the run.
        run.wait_for(lambda: log.exists() and chat_requests(log, r"\d+") > 0, "a chat request")
        port = re.search(r"--port (\d+) ", log.read_text()).group(1)
        assert processes_with(f"--port {port} ")
        run.send(signum)  # to pytest alone: the engine must stop because pytest went away
        run.finish(60)
        deadline = time.monotonic() + 30
        while processes_with(f"--port {port} ") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_with(f"--port {port} ") == []
    finally:
        for pid in processes_with(f"--port {port} ") if port else []:
            os.killpg(pid, signal.SIGKILL)  # a failed test must not leave the engine behind


def test_auto_serves_a_gguf_with_llamacpp_on_a_cpu(monkeypatch, tiny_gguf):
    resolved = kinds.served_spec(str(tiny_gguf))
    settings = Settings(model=str(tiny_gguf))
    pretend_installed(monkeypatch, "vllm", "llamacpp", "transformers")
    assert kinds.choose_engine(settings, resolved, gpus=False) == "llamacpp"
    assert kinds.choose_engine(settings, resolved, gpus=True) == "vllm"
    # Without llama.cpp, transformers serve takes the GGUF through a dequantized copy.
    pretend_installed(monkeypatch, "transformers")
    assert kinds.choose_engine(settings, resolved, gpus=False) == "transformers"


def test_llamacpp_is_refused_for_a_model_that_is_not_gguf(monkeypatch, tiny_model):
    pretend_installed(monkeypatch, "llamacpp", "transformers")
    settings = Settings(model=str(tiny_model), engine="llamacpp")
    with pytest.raises(kinds.ServeError, match="llamacpp serves GGUF files"):
        kinds.choose_engine(settings, kinds.served_spec(str(tiny_model)), gpus=False)


def test_a_gguf_is_dequantized_once_for_transformers_serve(tiny_gguf, tmp_path):
    folder = kinds.dequantized_folder(tiny_gguf, tmp_path)
    assert (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()
    weights = sorted(folder.glob("*.safetensors"))
    assert weights
    written = [w.stat().st_mtime_ns for w in weights]
    # The second run finds the copy; a changed file gets a copy of its own.
    assert kinds.dequantized_folder(tiny_gguf, tmp_path) == folder
    assert [w.stat().st_mtime_ns for w in weights] == written
    assert not list(tmp_path.glob("*.partial-*"))
    changed = tmp_path / "changed" / tiny_gguf.name
    changed.parent.mkdir()
    changed.write_bytes(tiny_gguf.read_bytes())
    assert kinds.dequantized_folder(changed, tmp_path) != folder


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 4])
def test_llamacpp_on_a_cpu_shares_the_workers_over_the_cores_and_leaves_nothing(
        humanfix_pytester, tiny_gguf, read_records, monkeypatch, workers):
    # Two cores seen, whatever this machine has: -n 2 is an engine per worker, -n 4 two engines
    # of two slots each, decoded together.
    monkeypatch.setattr(commands.os, "sched_getaffinity", lambda pid: {0, 1})
    result = humanfix_pytester.runpytest_inprocess(
        "--humanfix-model", str(tiny_gguf), "--humanfix-serve", "--humanfix-max", str(workers),
        "--humanfix-max-new-tokens", "16", "-n", str(workers))
    lines = [out for out in result.outlines if out.startswith("humanfix serve: llamacpp")]
    layout = commands.cpu_layout(workers)
    assert len(lines) == layout.engines == 2
    assert (layout.threads, layout.slots) == ((1, 1) if workers == 2 else (1, 2))
    reports = humanfix_pytester.path / "reports"
    records = read_records()
    assert_answered_by_a_model(records, workers)
    attempts = [a for r in records for a in r["attempts"]]
    assert {a["engine"] for a in attempts} == {"llamacpp"}
    assert {a["finish_reason"] for a in attempts} <= {"stop", "length"}
    summary = json.loads((reports / "summary.json").read_text())
    assert summary["run"]["serve"]["cpu_layout"] == {"engines": 2, "threads": 1,
                                                     "slots": layout.slots}
    for index, line in enumerate(lines):
        log = reports / f"server-{index}.log"
        command = log.read_text().splitlines()[0]
        assert "-m pytest_humanfix.models.engines.llamacpp" in command
        assert f"--n_threads 1 --parallel {layout.slots} " in command
        # gw0, gw2 go to the first engine, gw1, gw3 to the second: one request per worker.
        assert chat_requests(log) == layout.slots
        pid, port = map(int, re.search(r"pid (\d+) .*:(\d+)/v1", line).groups())
        assert not process_alive(pid)
        assert processes_with(f"--port {port} ") == []


def test_the_cpu_layout_gives_an_engine_per_worker_up_to_the_cores_then_slots(monkeypatch):
    monkeypatch.setattr(commands.os, "sched_getaffinity", lambda pid: set(range(8)))
    layouts = {n: commands.cpu_layout(n) for n in (1, 2, 3, 8, 9, 16, 17)}
    assert {n: (x.engines, x.threads, x.slots) for n, x in layouts.items()} == {
        1: (1, 8, 1), 2: (2, 4, 1), 3: (3, 2, 1), 8: (8, 1, 1),
        9: (8, 1, 2), 16: (8, 1, 2), 17: (8, 1, 3)}  # never more engines than cores
    model = kinds.ServedModel("llamacpp", "/m/model.gguf", "/m/model.gguf")
    command = commands.engine_command(model, 8123, None, seed=0, layout=layouts[2])
    assert command[command.index("--n_threads") + 1] == "4"
    assert command[command.index("--parallel") + 1] == "1"
    command = commands.engine_command(model, 8123, None, seed=0, layout=layouts[16])
    assert command[command.index("--n_threads") + 1] == "1"
    assert command[command.index("--parallel") + 1] == "2"


@pytest.mark.slow
def test_engine_args_reach_the_engine_and_the_summary(humanfix_pytester, tiny_gguf):
    result = humanfix_pytester.runpytest("--humanfix-model", str(tiny_gguf), "--humanfix-serve",
                                         "--humanfix-engine-args=--n_ctx 2048",
                                         "--humanfix-max=1", "--humanfix-max-new-tokens=8")
    pid, port = engine_pid_and_port(result.outlines, "llamacpp")
    reports = humanfix_pytester.path / "reports"
    command = (reports / "server-0.log").read_text().splitlines()[0]
    assert command.endswith("--n_ctx 2048")  # after the default, so it wins
    summary = json.loads((reports / "summary.json").read_text())
    assert summary["run"]["serve"] == {
        "engine": "llamacpp", "layout": "per-device", "engine_args": ["--n_ctx", "2048"],
        "engines": [{"devices": None, "base_url": f"http://127.0.0.1:{port}/v1"}],
        "cpu_layout": {"engines": 1, "threads": len(os.sched_getaffinity(0)), "slots": 1}}
    assert summary["tasks"]["errors"] == 0


@pytest.mark.slow
def test_a_llamacpp_engine_that_cannot_start_shows_its_log(humanfix_pytester, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(64))
    result = humanfix_pytester.runpytest("--humanfix-model", str(broken), "--humanfix-serve",
                                         "--humanfix-engine", "llamacpp", "--humanfix-max", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = "\n".join(result.errlines)
    assert "the llamacpp engine for" in message and "exited with status" in message
    assert "server-0.log" in message and "ending:" in message
    assert processes_with(str(broken)) == []


@pytest.mark.slow
@pytest.mark.usefixtures("no_outer_cuda")
def test_gpus_present_mean_one_shared_engine_unless_copies_are_asked_for(
        humanfix_pytester, tiny_gguf, read_records, tmp_path, monkeypatch):
    # A machine whose nvidia-smi lists one GPU; the llama.cpp engine runs on its CPU all the
    # same, which is all this test needs of a "GPU" engine: the layout chosen, said and used.
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: GPU-a)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    run = ("--humanfix-model", str(tiny_gguf), "--humanfix-engine", "llamacpp",
           "--humanfix-max", "2", "--humanfix-max-new-tokens", "16", "-n", "2")
    result = humanfix_pytester.runpytest_subprocess(*run)
    result.stdout.fnmatch_lines([
        "humanfix layout: 1 shared llamacpp engine(s) on GPU 0, asked by 2 worker(s), "
        "1 GPU(s) present: one batching engine per GPU serves every worker*"])
    pid, port = engine_pid_and_port(result.outlines, "llamacpp")
    records = read_records()
    assert {a["engine"] for r in records for a in r["attempts"]} == {"llamacpp"}
    assert_served_and_gone(records, humanfix_pytester.path / "reports" / "server-0.log",
                           pid, port)

    result = humanfix_pytester.runpytest_subprocess(*run, "--humanfix-in-process")
    result.stdout.fnmatch_lines(["humanfix layout: a copy of the model in each of 2 worker(s), "
                                 "as --humanfix-in-process asks"])
    records = read_records()
    assert {a["engine"] for r in records for a in r["attempts"]} == {"transformers"}
    assert {r["device"] for r in records} == {"0"}


def test_a_shared_engine_and_copies_in_the_workers_are_not_asked_for_together(
        humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-serve",
                                         "--humanfix-in-process")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "are two layouts: give one of them" in result.stderr.str()


def test_the_fallbacks_kv_cache_holds_each_workers_longest_request(tmp_path):
    settings = Settings(model="m", max_new_tokens=512)
    assert commands.request_tokens(settings) == 2048 + 512
    assert commands.request_tokens(dataclasses.replace(settings, iters=2)) == \
        2048 + 2 * (512 + 512) + 512
    assert commands.request_tokens(Settings(model="m", max_length=1000)) == 1000
    # Ten blocks of 256 tokens hold 2,560; the scheduler keeps 15% of the blocks free.
    assert commands.cache_blocks(4, 2560) == 48 and commands.cache_blocks(1, 2560) == 12
    model = kinds.ServedModel("transformers", "m", "m")
    for device in (None, "0"):  # sized alike on a CPU and a GPU, never from free memory
        alone = dataclasses.replace(settings, ask_ahead=0)
        command = launch.new_engine(model, tmp_path / "log", device, alone, workers=4).command
        assert command[command.index("--cb-num-blocks") + 1] == "48"
        assert "--cb-max-memory-percent" not in command
        # Each worker's requests asked ahead are in flight beside its task's own.
        command = launch.new_engine(model, tmp_path / "log", device, settings, workers=4).command
        blocks = commands.cache_blocks(4 * (1 + settings.ask_ahead), 2560)
        assert settings.ask_ahead > 0 and command[command.index("--cb-num-blocks") + 1] == \
            str(blocks)
