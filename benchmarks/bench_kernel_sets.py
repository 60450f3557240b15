"""How much the kernels change the replies: the same tasks through llama.cpp builds for other
kernel sets, and through other layouts of the portable build, each compared with the portable
build's replies at `-n 2`.

Kernel sets are `scripts/ggml-cmake-args`'s (portable, native, avx, sse). `installed` is the
build in this environment (scripts/setup's); any other set is built once from the sdist of the
installed llama-cpp-python (its shared libraries alone, about 4 minutes on 2 cores) under the
user's cache and loaded by the engine through llama-cpp-python's LLAMA_CPP_LIB_PATH. Layouts are
`-n` values of the installed build: `-n 1` is one engine of two threads, `-n 2` two of one
thread, `-n 4` two of one thread with two slots each (serve.cpu_layout on 2 cores).

Each configuration runs `pytest --humanfix-model MODEL --humanfix-serve` on the first tasks in a
fresh project, greedy, no repair round. Printed per configuration: the kernels the engine
reports (`computed_by`), replies and outcomes that differ from the reference's, fixed tasks,
and completion tokens per second of generation (the records' own generate seconds, summed over
workers), with its ratio to the reference's, measured in this one run.

    python benchmarks/bench_kernel_sets.py [--tasks 40] [--kernels installed,native,avx,sse]
        [--layouts 1,4] [--model qwen-coder] [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import REPO, add_dataset_argument, agreement, print_table, project_run

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


def generation_rate(records: list[dict[str, Any]]) -> float:
    """Completion tokens per second of generation, over every attempt."""
    attempts = [a for r in records for a in r.get("attempts") or []]
    seconds = sum(float(a.get("generate_seconds") or 0) for a in attempts)
    tokens = sum(int(a.get("completion_tokens") or 0) for a in attempts)
    return tokens / seconds if seconds else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--kernels", default="installed,native,avx,sse",
                        help="kernel sets besides the reference (the installed build at -n 2)")
    parser.add_argument("--layouts", default="1,4",
                        help="-n values of the installed build besides -n 2")
    parser.add_argument("--model", default="qwen-coder")
    parser.add_argument("--keep", type=Path, help="keep every run's reports under DIR")
    parser.add_argument("--json", type=Path, help="write the table as JSON to FILE too")
    add_dataset_argument(parser)
    args = parser.parse_args()

    configs: list[tuple[str, str | None, int]] = [("installed -n 2", None, 2)]
    configs += [(f"installed -n {n}", None, int(n)) for n in args.layouts.split(",") if n]
    configs += [(f"{k} -n 2", k, 2) for k in args.kernels.split(",") if k and k != "installed"]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-kernels-"))
    rows = []
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
        computed = (records[0].get("computed_by") or {}) if records else {}
        rows.append({"config": name, "kernels": computed.get("kernels"),
                     "replies": same["replies"], "replies_differ": same["differ"],
                     "outcomes_differ": same["lost"] + same["gained"],
                     "fixed": sum(r["outcome"] == "fixed" for r in records),
                     "tokens_per_s": generation_rate(records), "wall_s": seconds})
    base = rows[0]["tokens_per_s"] or 1.0
    for row in rows:
        row["x_ref"] = row["tokens_per_s"] / base
    print_table(rows, ["config", "kernels", "replies", "replies_differ", "outcomes_differ",
                       "fixed", "tokens_per_s", "x_ref", "wall_s"])
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
