"""Generation on the tiny random model: four concurrent workers against one shared engine (the
`--humanfix-serve` engine) versus four in-process model copies, then both end to end through pytest.
Method: docs/benchmarks.md, "How each script measures".

    python benchmarks/engine/bench_serve.py [--dataset PATH] [--requests 32] [--max-new-tokens 64]
        [--json PATH]
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, add_dataset_argument, benchmark_parser, project_run, write_json

from pytest_humanfix.agent.prompts import first_messages
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.engines import launch
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.specs import ModelSpecError, check_spec
from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.settings import Settings

sys.path.insert(0, str(REPO / "tests"))  # tinymodel.py, the tests' tiny random model

WORKERS = 4


def engine_side(folder: Path, chats: list, max_new_tokens: int, log: Path) -> dict:
    started = time.monotonic()
    engine = launch.launch(Settings(model=str(folder), engine="transformers"), log)
    startup = time.monotonic() - started
    try:
        settings = Settings(model=f"openai:{engine.model}", base_url=engine.base_url,
                            max_new_tokens=max_new_tokens)
        clients = [OpenAIModel(settings.model, engine.model, GenerationConfig.of(settings))
                   for _ in range(WORKERS)]
        begin = time.monotonic()
        with ThreadPoolExecutor(WORKERS) as pool:
            tokens = sum(pool.map(
                lambda i: sum(clients[i].generate(c, None).completion_tokens
                              for c in chats[i::WORKERS]), range(WORKERS)))
        seconds = time.monotonic() - begin
    finally:
        engine.stop()
    return {"seconds": seconds, "tokens": tokens, "startup": startup,
            "computed_by": clients[0].computed_by}


def _copy(folder: str, chats: list, max_new_tokens: int, loaded, go, results) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    loaded.put(time.monotonic() - started)
    go.wait()
    tokens = 0
    with torch.inference_mode():
        for chat in chats:
            inputs = tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                   return_tensors="pt", return_dict=True)
            output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                    pad_token_id=tokenizer.pad_token_id)
            tokens += output.shape[-1] - inputs["input_ids"].shape[-1]
    results.put((time.monotonic(), tokens))


def copies_side(folder: Path, chats: list, max_new_tokens: int) -> dict:
    context = multiprocessing.get_context("spawn")
    loaded, results, go = context.Queue(), context.Queue(), context.Event()
    processes = [context.Process(target=_copy, args=(str(folder), chats[i::WORKERS],
                                                     max_new_tokens, loaded, go, results))
                 for i in range(WORKERS)]
    for process in processes:
        process.start()
    startup = max(loaded.get(timeout=300) for _ in processes)
    begin = time.monotonic()
    go.set()
    ends, tokens = zip(*(results.get(timeout=600) for _ in processes), strict=True)
    for process in processes:
        process.join()
    return {"seconds": max(ends) - begin, "tokens": sum(tokens), "startup": startup}


def pytest_run(folder: Path, dataset: Path, requests: int, max_new_tokens: int,
               extra: list[str], project: Path) -> tuple[float, list[dict]]:
    """`pytest -n WORKERS` on the model in FOLDER, in the fresh project PROJECT."""
    return project_run(project, ["--humanfix-model", str(folder), "--humanfix-max",
                                 str(requests), "--humanfix-max-new-tokens", str(max_new_tokens),
                                 "-n", str(WORKERS), *extra], dataset)


def answered(records: list[dict]) -> int:
    return sum(r["outcome"] != "error" for r in records)


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    chats = [first_messages(t, "tests") for t in load_tasks(str(args.dataset))[:args.requests]]
    from tinymodel import build_tiny_model

    figures: dict[str, Any] = {"requests": args.requests, "workers": WORKERS,
                               "max_new_tokens": args.max_new_tokens}
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny_model(Path(tmp) / "tiny")
        shared = engine_side(folder, chats, args.max_new_tokens, Path(tmp) / "server.log")
        copies = copies_side(folder, chats, args.max_new_tokens)
        print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}")
        print(f"{args.requests} repair prompts, greedy, max {args.max_new_tokens} new tokens, "
              f"{WORKERS} concurrent workers")
        rates = {}
        for name, side in (("one shared engine", shared), (f"{WORKERS} in-process copies", copies)):
            rates[name] = args.requests / side["seconds"]
            figures[name] = {"requests_per_s": rates[name],
                             "tokens_per_s": side["tokens"] / side["seconds"],
                             "seconds": side["seconds"], "startup_seconds": side["startup"]}
            print(f"{name:>22}: {rates[name]:6.2f} requests/s, "
                  f"{side['tokens'] / side['seconds']:7.1f} completion tokens/s "
                  f"({side['seconds']:.1f} s; start-up {side['startup']:.1f} s)")
        figures["ratio_shared_copies"] = (rates["one shared engine"]
                                          / rates[f"{WORKERS} in-process copies"])
        print(f"ratio shared engine / in-process copies (requests/s): "
              f"{figures['ratio_shared_copies']:.2f}")
        computed = {"one shared engine": shared["computed_by"]}
        served, records = pytest_run(folder, args.dataset, args.requests, args.max_new_tokens,
                                     ["--humanfix-serve"], Path(tmp) / "serve")
        figures["pytest_serve"] = {"seconds": served, "answered": answered(records)}
        computed["pytest --humanfix-serve"] = first_computed_by(records)
        print(f"end to end, pytest -n {WORKERS} --humanfix-serve: {served:.1f} s "
              f"({answered(records)}/{args.requests} tasks answered)")
        try:
            check_spec(str(folder))
        except ModelSpecError:
            print("end to end, pytest -n 4 --humanfix-model <folder>: the in-process transformers "
                  "backend is not installed in this tree; skipped")
        else:
            local, records = pytest_run(folder, args.dataset, args.requests,
                                        args.max_new_tokens, [], Path(tmp) / "local")
            figures["pytest_in_process"] = {"seconds": local, "answered": answered(records),
                                            "ratio_in_process_serve": local / served}
            computed["pytest in-process"] = first_computed_by(records)
            print(f"end to end, pytest -n {WORKERS} --humanfix-model <folder>: {local:.1f} s "
                  f"({answered(records)}/{args.requests} tasks answered); ratio "
                  f"{local / served:.2f}")
    write_json(args.json, figures, computed)

if __name__ == "__main__":
    main()
