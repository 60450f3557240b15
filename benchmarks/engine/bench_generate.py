"""Tokens per second through the plugin's transformers backend against a bare generate loop, on the
tiny random model the tests build. Method: docs/benchmarks.md, "How each script measures".

    python benchmarks/engine/bench_generate.py [--dataset PATH] [--tasks 20] [--max-new-tokens 64]
        [--rounds 3] [--threads 1] [--json PATH]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, add_dataset_argument, benchmark_parser, write_json

from pytest_humanfix.agent.prompts import first_messages
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.hf import TransformersModel
from pytest_humanfix.settings import Settings

sys.path.insert(0, str(REPO / "tests"))
from tinymodel import build_tiny_model  # noqa: E402


def plugin_round(model: TransformersModel, tasks: list[Task]) -> tuple[float, int]:
    started = time.perf_counter()
    tokens = sum(model.generate(first_messages(task, "tests"), task).completion_tokens
                 for task in tasks)
    return time.perf_counter() - started, tokens


def bare_round(tokenizer, model, tasks: list[Task], max_new_tokens: int) -> tuple[float, int]:
    import torch

    started = time.perf_counter()
    tokens = 0
    for task in tasks:
        inputs = tokenizer.apply_chat_template(first_messages(task, "tests"),
                                               add_generation_prompt=True, return_tensors="pt",
                                               return_dict=True)
        with torch.inference_mode():
            output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        new = output[0, inputs["input_ids"].shape[-1]:]
        tokenizer.decode(new, skip_special_tokens=True)
        tokens += len(new)
    return time.perf_counter() - started, tokens


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads, both sides (default 1: on a shared machine, "
                             "OpenMP threads spin-waiting for busy cores swamp a tiny model)")
    args = parser.parse_args()
    # Read by torch when it is imported, below; the backend leaves a set value alone.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    from transformers import AutoModelForCausalLM, AutoTokenizer

    tasks = load_tasks(str(args.dataset))[:args.tasks]
    with tempfile.TemporaryDirectory() as folder:
        source = str(build_tiny_model(Path(folder)))
        plugin = TransformersModel(source, source, GenerationConfig.of(Settings(
            model=source, max_new_tokens=args.max_new_tokens)))
        tokenizer = AutoTokenizer.from_pretrained(source)
        bare = AutoModelForCausalLM.from_pretrained(source).eval()
    plugin_round(plugin, tasks[:2])  # warm-up: first-call allocations on both sides
    bare_round(tokenizer, bare, tasks[:2], args.max_new_tokens)
    plugin_rates, bare_rates, counts = [], [], set()
    for _ in range(args.rounds):
        seconds, tokens = plugin_round(plugin, tasks)
        plugin_rates.append(tokens / seconds)
        counts.add(("plugin", tokens))
        seconds, tokens = bare_round(tokenizer, bare, tasks, args.max_new_tokens)
        bare_rates.append(tokens / seconds)
        counts.add(("bare", tokens))

    import torch

    plugin_rate, bare_rate = statistics.median(plugin_rates), statistics.median(bare_rates)
    print(f"machine: {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, device {plugin.device}")
    print(f"{len(tasks)} prompts, greedy, max {args.max_new_tokens} new tokens, "
          f"{args.rounds} alternating rounds; completion tokens per round: {sorted(counts)}")
    print(f"plugin backend (TransformersModel.generate): {plugin_rate:9.1f} tokens/s  "
          f"(rounds: {', '.join(f'{r:.0f}' for r in plugin_rates)})")
    print(f"bare model.generate loop:                     {bare_rate:9.1f} tokens/s  "
          f"(rounds: {', '.join(f'{r:.0f}' for r in bare_rates)})")
    print(f"ratio plugin / bare: {plugin_rate / bare_rate:.3f}")
    write_json(args.json, {"tasks": len(tasks), "max_new_tokens": args.max_new_tokens,
                           "rounds": args.rounds, "threads": torch.get_num_threads(),
                           "completion_tokens_per_round": sorted(counts),
                           "plugin_tokens_per_s": plugin_rate, "bare_tokens_per_s": bare_rate,
                           "plugin_rounds": plugin_rates, "bare_rounds": bare_rates,
                           "ratio_plugin_bare": plugin_rate / bare_rate},
               plugin.computed_by)


if __name__ == "__main__":
    main()
