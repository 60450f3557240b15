"""The llama.cpp levers on one real model, in one run: our engine plain, with prefix reuse, with
prompt-lookup drafting, with both; llama.cpp's own `llama-server` as the peer; and the CPU layouts,
each timed against plain and its replies compared with plain's. Method: docs/benchmarks.md, "How
each script measures"; figures: docs/benchmarks.md, "The llama.cpp engine's levers and its peer".

    python benchmarks/engine/bench_cpu_levers.py [--tasks 20] [--iters 0,3] [--configs plain,peer]
        [--model qwen-coder] [--llama-server PATH] [--keep DIR] [--json PATH]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, agreement, benchmark_parser, project_run, write_json

from pytest_humanfix.models.engines.commands import HOST, LLAMACPP_CONTEXT, cpu_layout
from pytest_humanfix.models.engines.kinds import ServedModel, ServeError
from pytest_humanfix.models.engines.launch import Engine, free_port
from pytest_humanfix.models.specs import local_gguf, resolve_spec
from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.settings import user_cache_dir

# Each lever of our engine: its flag and the value that turns it off.
LEVERS_OFF = {"--prefix_cache": "off", "--draft": "0"}
DRAFT = ("--draft", "8")  # prompt-lookup drafts of up to 8 tokens
# Up to 3: a decode of 4 tokens costs about 1.6x one of 1 on a CPU thread, 9 tokens about 3.5x
# (benchmarks/engine/bench_batch_shape.py), so short drafts need fewer accepted to pay.
SHORT_DRAFT = ("--draft", "3")
REUSE = ("--prefix_cache", "on")
PEER_START_TIMEOUT = 300.0


@dataclass(frozen=True)
class Config:
    """One way to run the model: `workers` xdist workers and either our engine
    (`--humanfix-serve`, its layout `serve.cpu_layout`'s for that many workers) with `levers`
    on, or `peer` = (servers, threads, slots) of llama-server, the workers spread over them."""

    workers: int
    levers: tuple[tuple[str, str], ...] = ()
    peer: tuple[int, int, int] | None = None
    # llama-server's own prefix reuse (`cache_prompt`): a slot keeps its last prompt and
    # evaluates only what follows the longest common prefix, from wherever that prefix ends.
    peer_cache: bool = False

    def layout(self) -> str:
        if self.peer:
            servers, threads, slots = self.peer
        else:
            ours = cpu_layout(self.workers)
            servers, threads, slots = ours.engines, ours.threads, ours.slots
        return f"-n {self.workers}: {servers} x {threads}t x {slots} slot(s)"


CONFIGS = {
    "plain": Config(2),
    "reuse": Config(2, (REUSE,)),
    "draft": Config(2, (DRAFT,)),
    "reuse+draft": Config(2, (REUSE, DRAFT)),
    "draft3": Config(2, (SHORT_DRAFT,)),
    # The peer in our layout (a server of one thread and one slot per worker), then in its own:
    # one server on every core whose slots share each step (continuous batching).
    "peer": Config(2, peer=(2, 1, 1)),
    "peer-shared": Config(2, peer=(1, 2, 2)),
    # The peer with its prompt cache, the lever that answers our prefix reuse in repair rounds.
    "peer-reuse": Config(2, peer=(2, 1, 1), peer_cache=True),
    # The layouts of `serve.cpu_layout` besides plain's -n 2 (an engine of one thread per core).
    "layout-n1": Config(1),
    "layout-n4": Config(4),
    "peer-n4": Config(4, peer=(2, 1, 2)),
}


def engine_flags() -> set[str]:
    """The flags our engine's parser knows, read from its --help."""
    done = subprocess.run([sys.executable, "-m", "pytest_humanfix.models.engines.llamacpp",
                           "--help"], capture_output=True, text=True, check=True)
    return {word.strip("[],") for word in done.stdout.split() if word.startswith(("--", "[--"))}


def engine_args(config: Config, known: set[str]) -> list[str]:
    """Our engine's arguments for CONFIG: each lever it has, on or off. LookupError names the
    flag a lever needs and the engine lacks."""
    levers = dict(config.levers)
    missing = [flag for flag in levers if flag not in known]
    if missing:
        raise LookupError(f"the engine has no {', '.join(missing)} (python -m "
                          "pytest_humanfix.models.engines.llamacpp --help)")
    return [word for flag, off in LEVERS_OFF.items() if flag in known
            for word in (flag, levers.get(flag, off))]


def peer_command(binary: Path, gguf: Path, alias: str, port: int, threads: int,
                 slots: int, cache_prompt: bool = False) -> list[str]:
    """llama-server with our engine's rules, so that a reply is a function of its prompt:
    nothing kept between requests (`--no-cache-prompt`, no host-memory prompt cache; with
    `cache_prompt`, its own prefix reuse, which gives that rule up); each slot its own KV cells
    (`--no-kv-unified`, a context of our engine's size per slot); prompts evaluated in the same
    chunks of 512 tokens every time (a logical batch of 512 too, so llama-server does not join
    two chunks; ours evaluates in 64, as fast: docs/models.md); attention without flash
    attention, as llama-cpp-python's Llama and our engine compute it; the GGUF's own chat
    template (`--jinja`), as ours uses it.
    Sampling: a request at temperature 0 keeps only the most likely token; the repeat penalty
    is off by default here; above 0 it samples through its default chain (top-k 40, top-p 0.95,
    min-p 0.05, then the temperature), ours through the temperature alone."""
    return [str(binary), "--model", str(gguf), "--alias", alias, "--host", HOST,
            "--port", str(port), "--threads", str(threads), "--threads-batch", str(threads),
            "--parallel", str(slots), "--ctx-size", str(LLAMACPP_CONTEXT * slots),
            "--batch-size", "512", "--ubatch-size", "512", "--flash-attn", "off",
            *(() if cache_prompt else ("--no-cache-prompt",)), "--cache-ram", "0",
            "--no-kv-unified", "--jinja", "--no-webui", "--seed", "0"]


def peer_engine(binary: Path, gguf: Path, alias: str, threads: int, slots: int,
                cache_prompt: bool, log_path: Path) -> Engine:
    """llama-server (`peer_command`) as `--humanfix-serve` runs an engine: on a free port, under
    our engine's environment (its OpenMP policy), its log at `log_path`, waited for and stopped
    the same way."""
    port = free_port()
    return Engine(ServedModel("llamacpp", str(gguf), alias), None, port, log_path,
                  peer_command(binary, gguf, alias, port, threads, slots, cache_prompt))


def run_peer(name: str, config: Config, binary: Path, gguf: Path, alias: str,
             arguments: list[str], folder: Path, dataset: Path) -> tuple[float, list[dict]]:
    """Starts the peer's servers, runs pytest against them through an `openai:` spec, stops
    them; the wall time counts from the first server's start."""
    assert config.peer is not None
    servers, threads, slots = config.peer
    engines = [peer_engine(binary, gguf, alias, threads, slots, config.peer_cache,
                           folder / f"{name}.server-{index}.log") for index in range(servers)]
    started = time.perf_counter()
    try:
        for engine in engines:
            engine.start()
        for engine in engines:
            engine.wait_healthy(PEER_START_TIMEOUT)
        urls = ",".join(engine.base_url for engine in engines)
        _, records = project_run(
            folder / name, ["--humanfix-model", f"openai:{alias}", "--humanfix-base-url", urls,
                            *arguments], dataset)
        return time.perf_counter() - started, records
    except ServeError as exc:
        raise SystemExit(f"{name}: {exc} (--keep DIR keeps the log)") from None
    finally:
        for engine in engines:
            engine.stop()


def default_llama_server() -> Path:
    """Where scripts/build-llama-server puts the binary for the installed llama-cpp-python."""
    import importlib.metadata

    version = importlib.metadata.version("llama_cpp_python")
    return user_cache_dir("llama-server") / version / "build" / "bin" / "llama-server"


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--iters", default="0",
                        help="repair rounds, a comma list: each value is a run of every "
                             "configuration (default 0)")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated subset of " + ", ".join(CONFIGS) + " (plain, the "
                             "reference, always runs)")
    parser.add_argument("--model", default="qwen-coder",
                        help="a GGUF model spec (default qwen-coder)")
    parser.add_argument("--llama-server", type=Path, default=None,
                        help="the llama-server binary (default: scripts/build-llama-server's)")
    parser.add_argument("--keep", type=Path, help="keep each configuration's project here")
    args = parser.parse_args()

    names = ["plain", *[n for n in args.configs.split(",") if n and n != "plain"]]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        parser.error(f"--configs: no configuration {', '.join(unknown)}; choose among "
                     f"{', '.join(CONFIGS)}")
    rounds = [int(value) for value in args.iters.split(",")]
    gguf = local_gguf(resolve_spec(args.model)).gguf_path
    if gguf is None:
        parser.error(f"--model {args.model}: not a GGUF model; llama.cpp needs one")
    binary = args.llama_server or default_llama_server()
    known = engine_flags()
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    computed: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        for iters in rounds:
            folder = base / f"iters-{iters}"
            folder.mkdir(parents=True, exist_ok=True)
            common = ["--humanfix-max", str(args.tasks), "--humanfix-iters", str(iters),
                      "--humanfix-ask-again-temperature", "none"]
            results: dict[str, tuple[float, list[dict]] | str] = {}
            for name in names:
                config = CONFIGS[name]
                arguments = [*common, "-n", str(config.workers)]
                if config.peer:
                    if not binary.is_file():
                        results[name] = (f"not run: no llama-server at {binary} (build it with "
                                         "scripts/build-llama-server)")
                        continue
                    results[name] = run_peer(name, config, binary, gguf, args.model, arguments,
                                             folder, args.dataset)
                    continue
                try:
                    extra = engine_args(config, known)
                except LookupError as exc:
                    results[name] = f"not run: {exc}"
                    continue
                results[name] = project_run(
                    folder / name, ["--humanfix-model", args.model, "--humanfix-serve",
                                    "--humanfix-engine", "llamacpp", "--humanfix-engine-args",
                                    " ".join(extra), *arguments], args.dataset)
            figures[f"iters-{iters}"] = report(
                results, CONFIGS, f"{args.model}, first {args.tasks} tasks, tests variant, "
                f"greedy first attempt, {iters} repair round(s)")
            computed.update({f"iters-{iters} {name}": first_computed_by(result[1])
                             for name, result in results.items() if not isinstance(result, str)})
    write_json(args.json, {"model": args.model, "tasks": args.tasks, "runs": figures}, computed)


def report(results: dict[str, tuple[float, list[dict]] | str], configs: dict[str, Config],
           what: str) -> dict[str, dict[str, Any]]:
    """Prints RESULTS as a table against plain's, and returns its figures by configuration."""
    print(f"\n{what}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the end")
    print(f"{'config':12s} {'layout':28s} {'wall s':>7s} {'tok/s':>6s} {'prompt':>7s} "
          f"{'compl.':>6s} {'fixed/err':>5s} {'wall x':>6s} {'tok/s x':>7s}  replies vs plain")
    plain = results["plain"]
    figures: dict[str, dict[str, Any]] = {}
    for name, result in results.items():
        layout = configs[name].layout()
        if isinstance(result, str):
            figures[name] = {"layout": layout, "not_run": result}
            print(f"{name:12s} {layout:28s} {result}")
            continue
        seconds, records = result
        completion = sum(r["tokens"]["completion"] for r in records)
        prompt = sum(r["tokens"]["prompt"] for r in records)
        fixed = sum(r["outcome"] == "fixed" for r in records)
        errors = sum(r["outcome"] == "error" for r in records)
        figures[name] = {"layout": layout, "wall_seconds": seconds,
                         "tokens_per_s": completion / seconds, "prompt_tokens": prompt,
                         "completion_tokens": completion, "fixed": fixed, "errors": errors}
        line = (f"{name:12s} {layout:28s} {seconds:7.1f} {completion / seconds:6.2f} "
                f"{prompt:7d} {completion:6d} {fixed:3d}/{errors}")
        if not isinstance(plain, str) and name != "plain":
            plain_seconds, plain_records = plain
            plain_rate = sum(r["tokens"]["completion"] for r in plain_records) / plain_seconds
            counts = agreement(plain_records, records)
            figures[name] |= {"wall_x_plain": plain_seconds / seconds,
                              "tokens_per_s_x_plain": completion / seconds / plain_rate,
                              "vs_plain": counts}
            line += (f" {plain_seconds / seconds:6.2f} {completion / seconds / plain_rate:7.2f}"
                     f"  {counts['differ']}/{counts['replies']} differ, "
                     f"{counts['lost'] + counts['gained']} flips (-{counts['lost']} "
                     f"+{counts['gained']}), {counts['errors']} errors, "
                     f"{counts['prompts_differ']} prompt lengths differ")
        print(line, flush=True)
    return figures

if __name__ == "__main__":
    main()
