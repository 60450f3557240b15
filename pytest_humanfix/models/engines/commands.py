"""The command line of each engine `--humanfix-serve` starts, and the sizes it is given: llama.cpp's
share of the cores (`cpu_layout`) and transformers' paged KV cache (`cache_blocks`). See
docs/models.md, "llama.cpp on a CPU" and "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

from ...settings import Settings
from .kinds import VLLM_CPU_ARGS, ServedModel

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


def request_tokens(settings: Settings) -> int:
    """The most tokens one request of this run holds, prompt and reply: --humanfix-max-length,
    or the longest first prompt, each repair round's reply and feedback, and the last reply."""
    if settings.max_length is not None:
        return settings.max_length
    return FIRST_PROMPT_TOKENS + settings.iters * (settings.max_new_tokens + FEEDBACK_TOKENS) \
        + settings.max_new_tokens


def cache_blocks(requests: int, tokens: int) -> int:
    """Blocks of transformers' paged KV cache that hold `requests` concurrent requests of up to
    `tokens` tokens each with the scheduler's free share left over, so that none waits for
    another to end. Sized from free memory instead, the cache took 69 GB of an H100 for
    0.5B-model replies, and on a CPU 10 GB and half a minute at the first request."""
    return math.ceil(requests * -(-tokens // CB_BLOCK_TOKENS) / (1 - CB_FREE_SHARE))


def engine_command(model: ServedModel, port: int, device: str | None, seed: int,
                   engine_args: tuple[str, ...] = (), layout: CpuLayout | None = None,
                   tools: bool = False, kv_blocks: int | None = None,
                   python: str | None = None) -> list[str]:
    """The engine's command line; `device` is one CUDA device, several ("0,1": one vLLM engine
    over them, tensor-parallel), or None (the CPU); `layout` is a llama.cpp engine's share of
    the cores (default: all of them, one slot); `tools`: the engine must answer tool calls
    (--humanfix-agent tools); `kv_blocks`: the blocks of transformers' KV cache
    (`cache_blocks`; default: one request of `request_tokens` under default settings);
    `python`: the interpreter that runs it (default: this one). The user's `engine_args` come
    last, so each engine's parser lets them override a default set here."""
    return base_command(model, port, device, seed, layout, tools, kv_blocks, python) \
        + list(engine_args)


def base_command(model: ServedModel, port: int, device: str | None, seed: int,
                 layout: CpuLayout | None = None, tools: bool = False,
                 kv_blocks: int | None = None, python: str | None = None) -> list[str]:
    if model.engine == "vllm":
        command = [python or sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model",
                   model.source, "--served-model-name", model.name, "--host", HOST,
                   "--port", str(port), "--seed", str(seed)]
        gpus = len(device.split(",")) if device else 1
        if gpus > 1:
            command += ["--tensor-parallel-size", str(gpus)]
        if device is None:
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
    blocks = kv_blocks or cache_blocks(1, request_tokens(Settings()))
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", model.source,
               "--continuous-batching", "--host", HOST, "--port", str(port),
               "--default-seed", str(seed), "--log-level", "info", "--cb-num-blocks", str(blocks)]
    if device is None:
        # bf16 weights run slowly on a CPU; the in-process backend uses fp32 there too.
        command += ["--dtype", "float32", "--cb-max-batch-tokens", "2048"]
    return command
