"""Generation on the tiny random model: four concurrent workers against one shared engine (the
`--humanfix-serve` engine, started by launch.launch exactly as the plugin does) versus four
in-process model copies (one process each, as `-n 4 --humanfix-model <folder>` loads them).

Steady state: the clock starts once the engine is healthy / every copy has loaded, and both
sides answer the same repair prompts (the first N tasks) with greedy decoding. Prints requests
and completion tokens per second for each side and their ratio, plus the start-up costs. Then
the end-to-end `pytest -n 4 --humanfix-serve` run, and `pytest -n 4 --humanfix-model <folder>`
when the in-process transformers backend is installed.

    HUMANFIX_DATASET=... python benchmarks/bench_serve.py [--requests 32] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from pytest_humanfix.models.generation import GenerationConfig  # noqa: E402
from pytest_humanfix.models.engines import launch  # noqa: E402
from pytest_humanfix.agent.graph import repair_messages  # noqa: E402
from pytest_humanfix.dataset import load_tasks  # noqa: E402
from pytest_humanfix.models.specs import ModelSpecError, check_spec  # noqa: E402
from pytest_humanfix.models.openai_api import OpenAIModel  # noqa: E402
from pytest_humanfix.settings import Settings  # noqa: E402

WORKERS = 4


def engine_side(folder: Path, chats: list, max_new_tokens: int, log: Path) -> dict:
    started = time.monotonic()
    engine = launch.launch(str(folder), log)
    startup = time.monotonic() - started
    try:
        settings = Settings(model=f"openai:{engine.model}", base_url=engine.base_url,
                            max_new_tokens=max_new_tokens)
        clients = [OpenAIModel(settings.model, engine.model, GenerationConfig.of(settings)) for _ in range(WORKERS)]
        begin = time.monotonic()
        with ThreadPoolExecutor(WORKERS) as pool:
            tokens = sum(pool.map(
                lambda i: sum(clients[i].generate(c, None).completion_tokens
                              for c in chats[i::WORKERS]), range(WORKERS)))
        seconds = time.monotonic() - begin
    finally:
        engine.stop()
    return {"seconds": seconds, "tokens": tokens, "startup": startup}


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
    ends, tokens = zip(*(results.get(timeout=600) for _ in processes))
    for process in processes:
        process.join()
    return {"seconds": max(ends) - begin, "tokens": sum(tokens), "startup": startup}


def pytest_run(folder: Path, dataset: str, requests: int, max_new_tokens: int,
               extra: list[str], workdir: Path) -> tuple[float, int]:
    workdir.mkdir()
    (workdir / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, HUMANFIX_DATASET=dataset,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--humanfix-model", str(folder), "--humanfix-max", str(requests),
                    "--humanfix-max-new-tokens", str(max_new_tokens), "-n", str(WORKERS),
                    *extra], cwd=workdir, env=env, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    records = [json.loads(line) for line in
               (workdir / "reports" / "humanfix.jsonl").read_text().splitlines()]
    return seconds, sum(r["outcome"] != "error" for r in records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    dataset = os.environ.get("HUMANFIX_DATASET") or sys.exit("set HUMANFIX_DATASET")
    chats = [repair_messages(t) for t in load_tasks(dataset)[:args.requests]]
    from tinymodel import build_tiny_model

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
            print(f"{name:>22}: {rates[name]:6.2f} requests/s, "
                  f"{side['tokens'] / side['seconds']:7.1f} completion tokens/s "
                  f"({side['seconds']:.1f} s; start-up {side['startup']:.1f} s)")
        print(f"ratio shared engine / in-process copies (requests/s): "
              f"{rates['one shared engine'] / rates[f'{WORKERS} in-process copies']:.2f}")
        served, answered = pytest_run(folder, dataset, args.requests, args.max_new_tokens,
                                      ["--humanfix-serve"], Path(tmp) / "serve")
        print(f"end to end, pytest -n {WORKERS} --humanfix-serve: {served:.1f} s "
              f"({answered}/{args.requests} tasks answered)")
        try:
            check_spec(str(folder))
        except ModelSpecError:
            print("end to end, pytest -n 4 --humanfix-model <folder>: the in-process transformers "
                  "backend is not installed in this tree; skipped")
            return
        local, answered = pytest_run(folder, dataset, args.requests, args.max_new_tokens, [],
                                     Path(tmp) / "local")
        print(f"end to end, pytest -n {WORKERS} --humanfix-model <folder>: {local:.1f} s "
              f"({answered}/{args.requests} tasks answered); ratio {local / served:.2f}")


if __name__ == "__main__":
    main()
