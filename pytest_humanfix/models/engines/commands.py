"""The command line of each engine `--humanfix-serve` starts, and the sizes it is given: llama.cpp's
share of the cores (`cpu_layout`), transformers' paged KV cache (`cache_blocks`), and vLLM's
longest request, batch and KV cache (`vllm_sizing`), each from the run's work (`Work`). See
docs/models.md, "llama.cpp on a CPU" and "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...settings import Settings
from .kinds import CPU_KV_CACHE, VLLM_CPU_ARGS, ServedModel

HOST = "127.0.0.1"
# llama.cpp's context window: a repair chat of several rounds fits, and the KV cache of a small
# model stays small on a CPU (the file's own training context can be far larger).
LLAMACPP_CONTEXT = 8192
# transformers' paged KV cache: tokens a block holds (ContinuousBatchingConfig.page_size, its
# default, left as it is), and the share of blocks its FIFO scheduler keeps free (no new request
# starts below it: FIFOScheduler's default safety margin).
CB_BLOCK_TOKENS = 256
CB_FREE_SHARE = 0.15
# Bounds of what one request holds, for sizing that cache: HumanEvalFix's longest first prompt
# (Rust's, 4,741 characters of prompt, buggy code and tests, with the instruction) is under 2,048
# tokens; a repair round adds a reply and its feedback, whose text is cut at 1,200 characters
# (`feedback.FEEDBACK_CHARS`), under 512 tokens.
FIRST_PROMPT_TOKENS = 2048
FEEDBACK_TOKENS = 512
# What a chat template adds to a prompt: a system prompt, role markers, and for the tools agent
# the tool's schema (qwen-coder's template with the tool: under 300 tokens).
TEMPLATE_TOKENS = 512
# vLLM's batch and KV cache hold twice the requests of the workers it serves: room for requests
# a worker asks ahead, and for prefixes cached between requests.
HEADROOM = 2
KV_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class CpuLayout:
    """llama.cpp on a CPU: `engines` engines of `threads` threads and `slots` slots each."""

    engines: int
    threads: int
    slots: int


def cpu_layout(workers: int) -> CpuLayout:
    """How `workers` xdist workers share the cores. Up to one per core, each worker gets an
    engine of its own with the cores shared out. Beyond, there is one engine per core, on one
    thread, with a slot for each of its workers, decoded together: a slot's reply depends on
    what else its step decodes only when the step runs on several threads, and one thread waits
    at no barrier. Measured, and the same rule on more cores: docs/models.md, "llama.cpp on a
    CPU"."""
    cores = len(os.sched_getaffinity(0))
    if workers <= cores:
        engines = max(1, workers)
        return CpuLayout(engines, max(1, cores // engines), 1)
    return CpuLayout(cores, 1, -(-workers // cores))


def prompt_tokens(prompt_bytes: int) -> int:
    """The most tokens a prompt of `prompt_bytes` UTF-8 bytes can take, templated: no token of a
    byte-level BPE (qwen-coder's, SmolLM2's) or of a SentencePiece with byte fallback holds
    less than a byte. Loose for code (qwen-coder: about 3 bytes a token), never short."""
    return prompt_bytes + TEMPLATE_TOKENS


def request_tokens(settings: Settings, first_prompt: int = FIRST_PROMPT_TOKENS) -> int:
    """The most tokens one request of this run holds, prompt and reply: --humanfix-max-length
    (the protocol's budget of both), or the first prompt's `first_prompt` tokens, each repair
    round's reply and feedback, and the last reply (--humanfix-max-new-tokens)."""
    if settings.max_length is not None:
        return settings.max_length
    return first_prompt + settings.iters * (settings.max_new_tokens + FEEDBACK_TOKENS) \
        + settings.max_new_tokens


@dataclass(frozen=True)
class Work:
    """What one engine serves: `workers` xdist workers, each with one request at a time of up
    to `tokens` tokens (`request_tokens`)."""

    workers: int
    tokens: int


@dataclass(frozen=True)
class VllmSizing:
    """vLLM sized to its work rather than to the model and the device (32,768 tokens a request,
    1,024 of them, a KV cache of 92% of the GPU): each None where the model's config is not at
    hand, left to vLLM."""

    model_len: int | None  # --max-model-len
    sequences: int  # --max-num-seqs
    cache_bytes: int | None  # --kv-cache-memory-bytes

    def arguments(self) -> list[str]:
        arguments = ["--max-num-seqs", str(self.sequences)]
        if self.model_len is not None:
            arguments += ["--max-model-len", str(self.model_len)]
        if self.cache_bytes is not None:
            arguments += ["--kv-cache-memory-bytes", str(self.cache_bytes)]
        return arguments


def model_config(source: str) -> dict[str, Any] | None:
    """The config.json of a model folder, or of a Hub model already in the local cache (never
    fetched here); None where there is none."""
    path: Path | None = Path(source) / "config.json"
    if not Path(source).is_dir():
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            return None
        try:
            cached = try_to_load_from_cache(source, "config.json")
        except ValueError:  # not a Hub id: a folder that is not there
            return None
        path = Path(cached) if isinstance(cached, str) else None
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path else None
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def vllm_sizing(config: dict[str, Any] | None, work: Work, dtype: str | None = None
                ) -> VllmSizing:
    """The longest request, the batch and the KV cache of a vLLM engine for `work`, from the
    model's `config`: a key and a value per layer and KV head for each token, in `dtype` (the
    checkpoint's by default; 4 bytes where unknown), for the batch's requests each at its
    longest. The model's own context caps the request (vLLM refuses a longer one)."""
    sequences = HEADROOM * max(work.workers, 1)
    text = (config or {}).get("text_config") or config or {}
    try:
        heads = int(text["num_attention_heads"])
        kv_heads = int(text.get("num_key_value_heads") or heads)
        head_dim = int(text.get("head_dim") or int(text["hidden_size"]) // heads)
        per_token = 2 * int(text["num_hidden_layers"]) * kv_heads * head_dim \
            * KV_DTYPE_BYTES.get(str(dtype or text.get("dtype") or text.get("torch_dtype")), 4)
        model_len = min(work.tokens, int(text.get("max_position_embeddings") or work.tokens))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return VllmSizing(None, sequences, None)
    return VllmSizing(model_len, sequences, sequences * model_len * per_token)


def cache_blocks(requests: int, tokens: int) -> int:
    """Blocks of transformers' paged KV cache that hold `requests` concurrent requests of up to
    `tokens` tokens each with the scheduler's free share left over, so that none waits for
    another to end. Sized from free memory instead, the cache took 69 GB of an H100 for
    0.5B-model replies, and on a CPU 10 GB and half a minute at the first request."""
    return math.ceil(requests * -(-tokens // CB_BLOCK_TOKENS) / (1 - CB_FREE_SHARE))


def engine_command(model: ServedModel, port: int, device: str | None, seed: int,
                   engine_args: tuple[str, ...] = (), layout: CpuLayout | None = None,
                   tools: bool = False, work: Work | None = None,
                   python: str | None = None) -> list[str]:
    """The engine's command line; `device` is one CUDA device, several ("0,1": one vLLM engine
    over them, tensor-parallel), or None (the CPU); `layout` is a llama.cpp engine's share of
    the cores (default: all of them, one slot); `tools`: the engine must answer tool calls
    (--humanfix-agent tools); `work`: what the engine serves, which sizes vLLM's requests,
    batch and KV cache and transformers' KV cache (default: one worker's requests of
    `request_tokens` under default settings); `python`: the interpreter that runs it (default:
    this one). The user's `engine_args` come last, so each engine's parser lets them override a
    default set here."""
    return base_command(model, port, device, seed, layout, tools, work, python) \
        + list(engine_args)


def base_command(model: ServedModel, port: int, device: str | None, seed: int,
                 layout: CpuLayout | None = None, tools: bool = False,
                 work: Work | None = None, python: str | None = None) -> list[str]:
    work = work or Work(1, request_tokens(Settings()))
    if model.engine == "vllm":
        command = [python or sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model",
                   model.source, "--served-model-name", model.name, "--host", HOST,
                   "--port", str(port), "--seed", str(seed)]
        gpus = len(device.split(",")) if device else 1
        if gpus > 1:
            command += ["--tensor-parallel-size", str(gpus)]
        sizing = vllm_sizing(model_config(model.source), work,
                             "float32" if device is None else None)
        command += sizing.arguments()
        if device is None:
            if sizing.cache_bytes is None:
                command += ["--kv-cache-memory-bytes", CPU_KV_CACHE]
            command += VLLM_CPU_ARGS
        if tools:
            # vLLM answers `tools` only with a parser for the model's calls; the Hermes form is
            # the one Qwen2.5's template asks for (and the one our llama.cpp engine reads).
            command += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
        return command
    if model.engine == "llamacpp":
        layout = layout or CpuLayout(1, len(os.sched_getaffinity(0)), 1)
        return [sys.executable, "-m", f"{__package__}.llamacpp", "--model", model.source,
                "--model_alias", model.name, "--host", HOST, "--port", str(port),
                "--n_threads", str(layout.threads), "--parallel", str(layout.slots),
                "--n_ctx", str(LLAMACPP_CONTEXT), "--seed", str(seed)]
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", model.source,
               "--continuous-batching", "--host", HOST, "--port", str(port),
               "--default-seed", str(seed), "--log-level", "info", "--cb-num-blocks",
               str(cache_blocks(work.workers, work.tokens))]
    if device is None:
        # bf16 weights run slowly on a CPU; the in-process backend uses fp32 there too.
        command += ["--dtype", "float32", "--cb-max-batch-tokens", "2048"]
    return command
