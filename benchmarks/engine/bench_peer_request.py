"""One chat request, timed through our llama.cpp engine and through llama.cpp's own `llama-server`,
alternated, on one thread each: what the two engines cost per request when nothing else differs.
Method: docs/benchmarks.md, "How each script measures"; figures: docs/benchmarks.md, "The llama.cpp
engine's levers and its peer".

    python benchmarks/engine/bench_peer_request.py [--model qwen-coder] [--repeats 4] [--tokens 300]
        [--python NAME=PATH ...] [--llama-server PATH] [--json PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from bench_cpu_levers import default_llama_server, peer_engine
from common import REPO, add_dataset_argument, benchmark_parser, write_json

from pytest_humanfix.agent.prompts import first_messages
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.engines.commands import HOST, CpuLayout, engine_command
from pytest_humanfix.models.engines.kinds import ServedModel, ServeError
from pytest_humanfix.models.engines.launch import Engine, free_port
from pytest_humanfix.models.openai_servers import server_computed_by
from pytest_humanfix.models.specs import local_gguf, resolve_spec

START_TIMEOUT = 300.0


def ask(port: int, messages: list[dict], tokens: int) -> tuple[float, dict]:
    """Seconds for one greedy chat request of at most `tokens` new tokens, and its answer."""
    body = json.dumps({"model": "m", "messages": messages, "temperature": 0,
                       "max_tokens": tokens}).encode()
    request = urllib.request.Request(f"http://{HOST}:{port}/v1/chat/completions", body,
                                     {"Content-Type": "application/json"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=900) as response:
        answer = json.load(response)
    return time.perf_counter() - began, answer


def timed(engine: Engine, messages: list[dict], tokens: int
          ) -> tuple[float, dict, dict[str, Any]]:
    """Starts the engine, warms it, times the request, stops it; and what the engine says
    computed the reply."""
    engine.start()
    try:
        engine.wait_healthy(START_TIMEOUT)
        ask(engine.port, messages, 8)
        took, answer = ask(engine.port, messages, tokens)
        return took, answer, server_computed_by(engine.base_url, "llamacpp")
    except ServeError as exc:
        raise SystemExit(str(exc)) from None
    finally:
        engine.stop()


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--model", default="qwen-coder", help="a GGUF model spec")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=300, help="new tokens a request asks for")
    parser.add_argument("--python", action="append", default=[], metavar="NAME=PATH",
                        help="our engine under another interpreter as well")
    parser.add_argument("--llama-server", type=Path, default=None,
                        help="the llama-server binary (default: scripts/build-llama-server's)")
    args = parser.parse_args()
    gguf = local_gguf(resolve_spec(args.model)).gguf_path
    if gguf is None:
        parser.error(f"--model {args.model}: not a GGUF model; llama.cpp needs one")
    binary = args.llama_server or default_llama_server()
    if not binary.is_file():
        parser.error(f"no llama-server at {binary}: build it with scripts/build-llama-server")
    # The first task's first prompt as a run sends it, and a long answer: an explanation.
    messages = [dict(message) for message in
                first_messages(load_tasks(str(args.dataset))[0], "tests")]
    messages[-1]["content"] += "\n\nThen explain every line of the fix in detail."
    pythons = {"ours": sys.executable}
    for pair in args.python:
        name, _, path = pair.partition("=")
        if not path:
            parser.error(f"--python {pair}: write NAME=PATH")
        pythons[name] = path
    # Another interpreter finds this repository's package through the engines' environment,
    # which they take from this process's.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    seconds: dict[str, list[float]] = {name: [] for name in [*pythons, "llama-server"]}
    replies: dict[str, str] = {}
    computed: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as logs:
        for repeat in range(args.repeats):
            for name in seconds:
                log = Path(logs) / f"{name}-{repeat}.log"
                if name == "llama-server":
                    engine = peer_engine(binary, gguf, "m", 1, 1, False, log)
                else:
                    # The engine as --humanfix-serve starts it, with another interpreter where
                    # asked, and no prefix reuse, as the peer's --no-cache-prompt: the warm-up's
                    # cells stay unused.
                    port = free_port()
                    command = engine_command(ServedModel("llamacpp", str(gguf), "m"), port,
                                             None, 0, ("--prefix_cache", "off"),
                                             CpuLayout(1, 1, 1))
                    command[0] = pythons[name]
                    engine = Engine(ServedModel("llamacpp", str(gguf), "m"), None, port, log,
                                    command)
                took, answer, described = timed(engine, messages, args.tokens)
                seconds[name].append(took)
                replies.setdefault(name, answer["choices"][0]["message"]["content"])
                computed.setdefault(name, described)
                print(f"repeat {repeat}: {name:14s} {took:6.2f} s, {answer['usage']}",
                      flush=True)
    reference = statistics.median(seconds["ours"])
    print(f"\n{args.model}, one thread, one request of {args.tokens} new tokens at most, "
          f"median of {args.repeats}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"{'engine':14s} {'median s':>8s} {'x ours':>6s}  {'all':30s} reply as ours")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"{name:14s} {median:8.2f} {reference / median:6.2f}  "
              f"{' '.join(f'{value:.2f}' for value in values):30s} "
              f"{replies[name] == replies['ours']}")
    write_json(args.json, {
        "model": args.model, "tokens": args.tokens, "repeats": args.repeats,
        "engines": {name: {"median_seconds": statistics.median(values),
                           "x_ours": reference / statistics.median(values), "seconds": values,
                           "reply_as_ours": replies[name] == replies["ours"]}
                    for name, values in seconds.items()}}, computed)


if __name__ == "__main__":
    main()
