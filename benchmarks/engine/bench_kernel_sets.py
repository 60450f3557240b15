"""How much the kernels change the replies: the same tasks through llama.cpp builds for other kernel
sets, and through other layouts of the portable build, each compared with the portable build's
replies at `-n 2`; or, with `--speed`, each set's decode speed alone. Method: docs/benchmarks.md,
"How each script measures"; figures: docs/trust.md, "Same command, same number".

    python benchmarks/engine/bench_kernel_sets.py [--tasks 40] [--kernels installed,native,avx,sse]
        [--layouts 1,4] [--model qwen-coder] [--keep DIR] [--json PATH]
    python benchmarks/engine/bench_kernel_sets.py --speed 5 [--kernels native,avx,sse] [--json PATH]
"""

from __future__ import annotations

import importlib.metadata
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import (
    REPO,
    add_dataset_argument,
    agreement,
    benchmark_parser,
    print_table,
    project_run,
    write_json,
)

from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.settings import user_cache_dir


def build_kernels(kernels: str) -> Path:
    """The folder of llama.cpp's shared libraries built for `kernels`, from the sdist of the
    installed llama-cpp-python; built once per version and set."""
    version = importlib.metadata.version("llama_cpp_python")
    root = user_cache_dir("ggml-kernels") / version
    lib = root / kernels / "bin"
    if (lib / "libllama.so").is_file():
        return lib
    source = root / "src"
    if not (source / "vendor" / "llama.cpp").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:",
                        "--no-deps", f"llama-cpp-python=={version}", "-d", str(root)], check=True)
        source.mkdir(exist_ok=True)
        subprocess.run(["tar", "-xzf", str(root / f"llama_cpp_python-{version}.tar.gz"), "-C",
                        str(source), "--strip-components=1"], check=True)
    flags = subprocess.run([str(REPO / "scripts" / "ggml-cmake-args"), kernels], check=True,
                           capture_output=True, text=True).stdout.split()
    build = root / kernels
    subprocess.run(["cmake", "-S", str(source / "vendor" / "llama.cpp"), "-B", str(build),
                    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DLLAMA_CURL=OFF",
                    "-DLLAMA_BUILD_COMMON=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                    "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                    "-DLLAMA_BUILD_SERVER=OFF", *flags], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "--target", "llama", "-j",
                    str(len(os.sched_getaffinity(0)))], check=True, stdout=subprocess.DEVNULL)
    return lib


# One greedy completion on one thread, timed in a process of its own (the library is chosen
# by LLAMA_CPP_LIB_PATH when llama_cpp is imported).
DECODE = """
import sys, time, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_threads=1, n_threads_batch=1, n_ctx=1024,
                      verbose=False)
prompt = "def fibonacci(n):\\n    "
llm.create_completion(prompt, max_tokens=1, temperature=0)
started = time.perf_counter()
out = llm.create_completion(prompt, max_tokens=int(sys.argv[2]), temperature=0)
print(out["usage"]["completion_tokens"] / (time.perf_counter() - started))
"""


def decode_speed(lib: Path | None, model: str, tokens: int) -> float:
    from pytest_humanfix.models.specs import resolve_spec

    path = resolve_spec(model).gguf_path
    env = dict(os.environ, **({"LLAMA_CPP_LIB_PATH": str(lib)} if lib else {}))
    done = subprocess.run([sys.executable, "-c", DECODE, str(path), str(tokens)], env=env,
                          check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def speeds(kernels: list[str], model: str, rounds: int, tokens: int) -> list[dict[str, Any]]:
    """Each kernel set's decode speed, printed as a table and returned as its rows."""
    libs = {"installed": None, **{k: build_kernels(k) for k in kernels if k != "installed"}}
    found: dict[str, list[float]] = {name: [] for name in libs}
    for _ in range(rounds):
        for name, lib in libs.items():
            found[name].append(decode_speed(lib, model, tokens))
    base = statistics.median(found["installed"])
    rows = [{"kernels": name, "tokens_per_s": statistics.median(values), "min": min(values),
             "max": max(values), "x_installed": statistics.median(values) / base}
            for name, values in found.items()]
    print_table(rows, ["kernels", "tokens_per_s", "min", "max", "x_installed"])
    return rows


def generation_rate(records: list[dict[str, Any]]) -> float:
    """Completion tokens per second of generation, over every attempt."""
    attempts = [a for r in records for a in r.get("attempts") or []]
    seconds = sum(float(a.get("generate_seconds") or 0) for a in attempts)
    tokens = sum(int(a.get("completion_tokens") or 0) for a in attempts)
    return tokens / seconds if seconds else 0.0


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--kernels", default="installed,native,avx,sse",
                        help="kernel sets besides the reference (the installed build at -n 2)")
    parser.add_argument("--layouts", default="1,4",
                        help="-n values of the installed build besides -n 2")
    parser.add_argument("--model", default="qwen-coder")
    parser.add_argument("--keep", type=Path, help="keep every run's reports under DIR")
    parser.add_argument("--speed", type=int, metavar="R",
                        help="measure each kernel set's decode speed instead, R rounds")
    parser.add_argument("--speed-tokens", type=int, default=128)
    add_dataset_argument(parser)
    args = parser.parse_args()
    if args.speed:
        rows = speeds(args.kernels.split(","), args.model, args.speed, args.speed_tokens)
        write_json(args.json, {"model": args.model, "rounds": args.speed,
                               "tokens": args.speed_tokens, "speeds": rows})
        return

    configs: list[tuple[str, str | None, int]] = [("installed -n 2", None, 2)]
    configs += [(f"installed -n {n}", None, int(n)) for n in args.layouts.split(",") if n]
    configs += [(f"{k} -n 2", k, 2) for k in args.kernels.split(",") if k and k != "installed"]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-kernels-"))
    rows = []
    computed: dict[str, Any] = {}
    reference: list[dict[str, Any]] = []
    for name, kernels, workers in configs:
        env = {"LLAMA_CPP_LIB_PATH": str(build_kernels(kernels))} if kernels else {}
        arguments = ["--humanfix-model", args.model, "--humanfix-serve", "-n", str(workers),
                     "--humanfix-max", str(args.tasks)]
        print(f"{name}: {shlex.join(arguments)} {env}", file=sys.stderr, flush=True)
        seconds, records = project_run(folder / name.replace(" ", "_"), arguments, args.dataset,
                                       env)
        reference = reference or records
        same = agreement(reference, records)
        computed[name] = first_computed_by(records)
        rows.append({"config": name, "kernels": (computed[name] or {}).get("kernels"),
                     "replies": same["replies"], "replies_differ": same["differ"],
                     "outcomes_differ": same["lost"] + same["gained"],
                     "fixed": sum(r["outcome"] == "fixed" for r in records),
                     "tokens_per_s": generation_rate(records), "wall_s": seconds})
    base = rows[0]["tokens_per_s"] or 1.0
    for row in rows:
        row["x_ref"] = row["tokens_per_s"] / base
    print_table(rows, ["config", "kernels", "replies", "replies_differ", "outcomes_differ",
                       "fixed", "tokens_per_s", "x_ref", "wall_s"])
    write_json(args.json, {"model": args.model, "tasks": args.tasks, "configs": rows}, computed)


if __name__ == "__main__":
    main()
