"""The command lines and sizes `--humanfix-serve` gives its engines."""

import json
import sys

import pytest

from pytest_humanfix.models.engines import commands
from pytest_humanfix.models.engines.commands import CpuLayout, cache_blocks, cpu_layout
from pytest_humanfix.models.engines.kinds import ServedModel


@pytest.mark.parametrize(("workers", "layout"), [
    (1, CpuLayout(1, 4, 1)), (2, CpuLayout(2, 2, 1)), (3, CpuLayout(3, 1, 1)),
    (4, CpuLayout(4, 1, 1)), (5, CpuLayout(4, 1, 2)), (8, CpuLayout(4, 1, 2)),
    (9, CpuLayout(4, 1, 3))])
def test_workers_are_laid_over_four_cores(monkeypatch, workers: int, layout: CpuLayout):
    monkeypatch.setattr(commands.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert cpu_layout(workers) == layout


def test_the_kv_cache_holds_every_request_with_the_free_share_left():
    # 2 requests of 257 tokens: 2 blocks each, 4 blocks, over 85% usable.
    assert cache_blocks(2, 257) == 5
    assert cache_blocks(1, 256) == 2  # 1 / 0.85, rounded up


def test_our_llama_cpp_engine_is_run_as_a_module_with_its_layout():
    command = commands.engine_command(ServedModel("llamacpp", "/m.gguf", "m"), 8123, None, 5,
                                      engine_args=("--n_batch", "128"),
                                      layout=CpuLayout(2, 1, 3))
    assert command[:3] == [sys.executable, "-m", "pytest_humanfix.models.engines.llamacpp"]
    flags = dict(zip(command[3::2], command[4::2]))
    assert flags["--model"] == "/m.gguf" and flags["--model_alias"] == "m"
    assert (flags["--n_threads"], flags["--parallel"], flags["--seed"]) == ("1", "3", "5")
    assert command[-2:] == ["--n_batch", "128"]  # the user's arguments come last, and win


# Qwen2.5-Coder-0.5B's shape (its config.json): a token is a key and a value of 2 KV heads of 64
# in each of 24 layers, 12,288 bytes in bf16, as vLLM 0.26 counted it on the H200 (126.87 GiB
# of KV cache held 11,086,176 tokens).
QWEN_CODER = {"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
              "hidden_size": 896, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}


def test_a_first_prompt_takes_at_most_a_token_a_byte_with_the_templates_room():
    assert commands.prompt_tokens(1979) == 1979 + commands.TEMPLATE_TOKENS


def test_vllm_is_sized_to_its_workers_longest_requests():
    sizing = commands.vllm_sizing(QWEN_CODER, commands.Work(workers=16, tokens=3003))
    assert sizing == commands.VllmSizing(model_len=3003, sequences=32,
                                         cache_bytes=32 * 3003 * 12288)
    assert sizing.arguments() == ["--max-num-seqs", "32", "--max-model-len", "3003",
                                  "--kv-cache-memory-bytes", str(32 * 3003 * 12288)]
    # On a CPU vLLM computes in float32: twice the bytes a token.
    on_cpu = commands.vllm_sizing(QWEN_CODER, commands.Work(2, 3003), dtype="float32")
    assert on_cpu.cache_bytes == 4 * 3003 * 24576
    # transformers 5 writes `dtype`; no dtype at all counts 4 bytes, never too few.
    written = {k: v for k, v in QWEN_CODER.items() if k != "torch_dtype"}
    assert commands.vllm_sizing({**written, "dtype": "bfloat16"},
                                commands.Work(1, 100)).cache_bytes == 2 * 100 * 12288
    assert commands.vllm_sizing(written, commands.Work(1, 100)).cache_bytes == 2 * 100 * 24576


def test_the_models_context_caps_the_longest_request_and_its_shape_may_be_nested():
    sizing = commands.vllm_sizing({"text_config": {**QWEN_CODER, "head_dim": 128}},
                                  commands.Work(1, 50000))
    assert sizing.model_len == 32768 and sizing.cache_bytes == 2 * 32768 * 24576


@pytest.mark.parametrize("config", [None, {}, {"num_hidden_layers": 24}, {"text_config": "x"}])
def test_without_the_models_shape_only_the_batch_is_sized(config):
    assert commands.vllm_sizing(config, commands.Work(3, 3003)) == \
        commands.VllmSizing(None, 6, None)


def test_a_model_folders_config_is_read_and_a_hub_model_only_from_the_local_cache(tmp_path,
                                                                                 monkeypatch):
    (tmp_path / "config.json").write_text(json.dumps(QWEN_CODER))
    assert commands.model_config(str(tmp_path)) == QWEN_CODER
    assert commands.model_config(str(tmp_path / "missing")) is None
    hub = tmp_path / "hub"
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))
    snapshot = hub / "models--org--cached" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(QWEN_CODER))
    (hub / "models--org--cached" / "refs").mkdir()
    (hub / "models--org--cached" / "refs" / "main").write_text("abc123")
    assert commands.model_config("org/cached") == QWEN_CODER
    assert commands.model_config("org/not-cached") is None


def test_vllm_gets_its_sizes_before_the_users_arguments(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN_CODER))
    vllm = ServedModel("vllm", str(tmp_path), str(tmp_path))
    command = commands.engine_command(vllm, 8123, "0", 0, engine_args=("--max-num-seqs", "8"),
                                      work=commands.Work(16, 3003))
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert (flags["--max-model-len"], flags["--kv-cache-memory-bytes"]) == \
        ("3003", str(32 * 3003 * 12288))
    assert command[-2:] == ["--max-num-seqs", "8"]  # the user's, after ours: theirs wins
    # A model whose shape is not at hand: its KV cache is vLLM's own choice on a GPU, and the
    # set fallback on a CPU.
    plain = ServedModel("vllm", str(tmp_path / "elsewhere"), "m")
    assert "--kv-cache-memory-bytes" not in commands.engine_command(plain, 8123, "0", 0)
    on_cpu = commands.engine_command(plain, 8123, None, 0)
    assert on_cpu[on_cpu.index("--kv-cache-memory-bytes") + 1] == "2G"
