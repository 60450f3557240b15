"""The default path on a GPU, measured in one script: the tasks through the engine a plain run
starts itself (`cold`), against an engine already up (`warm`), three rounds of each agent
(`rewrite`, `resample`, `repair`), with `--humanfix-deterministic on` (`deterministic`),
in-process copies (`in-process`), and the engine's levers, each a run that starts its own
engine: eager against compiled graphs (`eager`), FlashInfer's sampler back on (`flashinfer`),
engine arguments of your choice (`levers`). Per run: wall time, the engine's start step by
step (its log read as it grows), the GPU's busy share while replies are generated, tokens,
pass@1, what computed them; then how far runs' replies agree. Rows go to --json as measured,
the runs' records to --archive. Rehearsed on a CPU with vLLM's CPU build (--cpu-rehearsal).
Method: docs/benchmarks.md, "The default path on a GPU".

    python benchmarks/engine/bench_gpu_default_path.py --model ~/gpu/hf --out DIR
        [--phases cold,warm,rewrite,resample,repair,deterministic,deterministic,in-process]
        [--max N] [-n auto] [--in-process-workers 16] [--deadline S] [--phase-timeout S]
        [--mps] [--lever-args "..."] [--extra "..."] [--cpu-rehearsal PY] [--empty-caches]
        [--archive PATH.tar.gz] [--json PATH]
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, agreement, benchmark_parser, print_table, read_records, write_json

from pytest_humanfix.models.engines import launch
from pytest_humanfix.models.engines.kinds import ENGINE_KINDS, ServeError, cache_environment
from pytest_humanfix.records import Record
from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.session.placement import auto_num_workers
from pytest_humanfix.settings import Settings

# Phases that ask the engine started once by the script (`warm`); the others start their own.
ON_THE_WARM_ENGINE = {"warm": (), "rewrite": ("--humanfix-iters", "3"),
                      "resample": ("--humanfix-agent", "resample", "--humanfix-iters", "3"),
                      "repair": ("--humanfix-agent", "repair", "--humanfix-iters", "3")}
OWN_ENGINE = {"cold": (), "deterministic": ("--humanfix-deterministic", "on"),
              "eager": ("--humanfix-engine-args", "--enforce-eager"), "flashinfer": (),
              "levers": ()}
# What a phase's engine runs with beyond the plugin's own environment.
PHASE_ENVIRONMENT = {"flashinfer": {"VLLM_USE_FLASHINFER_SAMPLER": "1"}}
PHASES = (*OWN_ENGINE, *ON_THE_WARM_ENGINE, "in-process")
DEFAULT_PHASES = "cold,warm,rewrite,resample,repair,deterministic,deterministic,in-process"
# The runs whose replies are compared, where both ran in one invocation.
COMPARED = (("cold", "warm"), ("deterministic-1", "deterministic-2"),
            ("cold", "deterministic-1"), ("eager", "cold"), ("flashinfer", "cold"),
            ("levers", "cold"))

# vLLM's own timings of the steps of its start, as its log states them (the messages of vLLM
# 0.26's GPU path and 0.32's CPU build): seconds, and the KV cache's size in GiB.
VLLM_TIMINGS = {
    "weights_s": re.compile(r"Loading weights took ([\d.]+) seconds"),
    "load_s": re.compile(r"Model loading took [\d.]+ GiB (?:memory )?and ([\d.]+) seconds"),
    "compile_s": re.compile(r"torch\.compile took ([\d.]+) s in total"),
    "graphs_s": re.compile(r"Graph capturing finished in ([\d.]+) secs"),
    "init_engine_s": re.compile(
        r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"),
    # Profiled from the GPU's free memory, or as --kv-cache-memory-bytes set it (a GPU's, then
    # the CPU build's words).
    "kv_cache_gib": re.compile(
        r"(?:Available KV cache memory: |, reserved |Explicitly set \()([\d.]+)(?: GiB|/)"),
    "kv_cache_tokens": re.compile(r"KV cache size: ([\d,]+) tokens"),
}
# When the start got somewhere, on the script's clock: vLLM's engine process begins (the
# server's imports and configuration done), its KV cache is allocated, its graphs are captured,
# its engine is ready (the kernels' warm-up done), the server answers.
MILESTONES = {
    "core_at_s": re.compile(r"Initializing a V1 LLM engine"),
    "kv_cache_at_s": re.compile(r"KV cache size: [\d,]+ tokens"),
    "graphs_at_s": re.compile(r"Graph capturing finished"),
    "ready_at_s": re.compile(r"init engine \(profile, create kv cache, warmup model\) took"),
    "healthy_s": re.compile(r"Application startup complete"),
}
ARCHIVED = ("humanfix.jsonl", "summary.json", "server-0.log")


def engine_start(lines: list[tuple[float, str]], started: float) -> dict[str, float | None]:
    """The engine's start from its log's lines, each with the second (on the script's clock)
    at which it appeared: vLLM's own timings (`VLLM_TIMINGS`) and the seconds from `started`
    to each milestone (`MILESTONES`); the first line of each counts."""
    start: dict[str, float | None] = dict.fromkeys([*VLLM_TIMINGS, *MILESTONES])
    for at, line in lines:
        for name, pattern in VLLM_TIMINGS.items():
            if start[name] is None and (found := pattern.search(line)):
                start[name] = float(found.group(1).replace(",", ""))
        for name, pattern in MILESTONES.items():
            if start[name] is None and pattern.search(line):
                start[name] = round(at - started, 1)
    # The warm-up after the cache and the graphs: where vLLM 0.26 logged nothing for 100 s.
    before = [start[name] for name in ("kv_cache_at_s", "graphs_at_s") if start[name] is not None]
    ready = start["ready_at_s"]
    start["warmup_s"] = round(ready - max(before), 1) if ready is not None and before else None
    return start


def first_request(records: list[tuple[float, str]]) -> float | None:
    """When the first task began, on the script's clock: each record's arrival less the
    seconds its task took. A task's clock starts after its worker's one-off preparation (the
    model's client, the sandbox), so this is about when the first request went out."""
    begun = []
    for at, line in records:
        try:
            begun.append(at - float(json.loads(line)["seconds"]))
        except (ValueError, KeyError, TypeError):
            continue
    return min(begun) if begun else None


def busy_share(samples: list[tuple[float, float]], begin: float, end: float) -> float | None:
    """The mean of nvidia-smi's utilization.gpu (percent of the sample's time that a kernel
    ran) over the samples taken from `begin` to `end`; None without a sample there."""
    inside = [value for at, value in samples if begin <= at <= end]
    return round(sum(inside) / len(inside), 1) if inside else None


class Clock:
    """Seconds since the script began, one clock for the log lines, the samples and the runs."""

    def __init__(self) -> None:
        self.zero = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.zero


class Watcher(threading.Thread):
    """Lines appended to some files, each stamped with the second it was first seen: polled,
    since the engine's log and the records grow while a run goes on."""

    def __init__(self, clock: Clock, poll: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.clock, self.poll = clock, poll
        self.files: dict[Path, list[tuple[float, str]]] = {}
        self.offsets: dict[Path, int] = {}
        self.partial: dict[Path, str] = {}
        self.lock = threading.Lock()
        self.done = threading.Event()

    def watch(self, path: Path) -> list[tuple[float, str]]:
        """The lines `path` gets from now on (a list this watcher fills)."""
        with self.lock:
            self.offsets[path], self.partial[path] = 0, ""
            self.files[path] = []
            return self.files[path]

    def run(self) -> None:
        while not self.done.wait(self.poll):
            self.read_all()

    def read_all(self) -> None:
        with self.lock:
            for path, lines in self.files.items():
                try:
                    with path.open("rb") as handle:
                        if os.fstat(handle.fileno()).st_size < self.offsets[path]:
                            self.offsets[path], self.partial[path] = 0, ""  # written anew
                        handle.seek(self.offsets[path])
                        data = handle.read()
                except OSError:
                    continue
                self.offsets[path] += len(data)
                text = self.partial[path] + data.decode("utf-8", errors="replace")
                *whole, self.partial[path] = text.split("\n")
                at = self.clock.now()
                lines.extend((at, line) for line in whole)

    def stop(self) -> None:
        self.done.set()
        self.join()
        self.read_all()


class GpuSampler(threading.Thread):
    """nvidia-smi's utilization.gpu of GPU 0 (the engine's) every 250 ms, stamped on the
    script's clock; no samples where there is no nvidia-smi (a CPU rehearsal)."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(daemon=True)
        self.clock = clock
        self.samples: list[tuple[float, float]] = []
        self.process: subprocess.Popen[str] | None = None
        if shutil.which("nvidia-smi") is not None:
            self.process = subprocess.Popen(
                ["nvidia-smi", "-i", "0", "--query-gpu=utilization.gpu",
                 "--format=csv,noheader,nounits", "-lms", "250"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def run(self) -> None:
        if self.process is None or self.process.stdout is None:
            return
        for line in self.process.stdout:
            try:
                self.samples.append((self.clock.now(), float(line.split(",")[0])))
            except ValueError:
                continue

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()


class Bench:
    def __init__(self, args: Any) -> None:
        self.args = args
        self.clock = Clock()
        self.watcher = Watcher(self.clock)
        self.sampler = GpuSampler(self.clock)
        self.rows: list[dict[str, Any]] = []
        self.records: dict[str, list[dict]] = {}
        self.engine: launch.Engine | None = None
        self.engine_error: str | None = None
        self.cpu = args.cpu_rehearsal is not None

    def engine_options(self) -> list[str]:
        """What makes a CPU rehearsal start vLLM's CPU build, as a GPU run starts vLLM by
        default."""
        if not self.cpu:
            return []
        return ["--humanfix-serve", "--humanfix-engine", "vllm",
                f"--humanfix-vllm-python={self.args.cpu_rehearsal}"]

    def arguments(self, phase: str) -> list[str]:
        """The phase's own options: the warm engine's address, or what starts an engine."""
        if phase in ON_THE_WARM_ENGINE:
            assert self.engine is not None
            return [f"--humanfix-base-url={self.engine.base_url}", "--humanfix-engine", "vllm",
                    *ON_THE_WARM_ENGINE[phase]]
        if phase == "in-process":
            return ["--humanfix-in-process"]
        levers = ["--humanfix-engine-args", self.args.lever_args] if phase == "levers" else []
        return [*self.engine_options(), *OWN_ENGINE[phase], *levers]

    def model_for(self, phase: str) -> str:
        if phase in ON_THE_WARM_ENGINE:
            assert self.engine is not None
            return "openai:" + self.engine.model.name
        return str(self.args.model)

    def pytest(self, phase: str, name: str) -> dict[str, Any]:
        """One run of pytest in the checkout: its row (wall time, engine start, GPU busy,
        tokens, pass@1), its records kept under `name` for the agreements."""
        folder = self.args.out / name
        shutil.rmtree(folder, ignore_errors=True)  # a summary of an earlier run is no figure
        log, jsonl = self.watcher.watch(folder / "server-0.log"), \
            self.watcher.watch(folder / "humanfix.jsonl")
        workers = self.args.in_process_workers if phase == "in-process" else self.args.workers
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--humanfix-model", self.model_for(phase), "-n", workers,
                   f"--humanfix-report-dir={folder}", *self.arguments(phase),
                   *(["--humanfix-max", str(self.args.max)] if self.args.max else []),
                   *shlex.split(self.args.extra)]
        print(f"[{self.clock.now():7.1f} s] {name}: {shlex.join(command[2:])}", flush=True)
        began = self.clock.now()
        try:
            done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  env={**os.environ, **PHASE_ENVIRONMENT.get(phase, {})},
                                  timeout=self.args.phase_timeout)
            status, output = str(done.returncode), done.stdout
        except subprocess.TimeoutExpired as expired:  # pytest killed; its engine's watchdog
            status = f"timed out after {self.args.phase_timeout:g} s"  # ends the engine
            output = expired.stdout if isinstance(expired.stdout, str) else ""
        ended = self.clock.now()
        self.watcher.read_all()
        (self.args.out / f"{name}.out").write_text(output, encoding="utf-8")
        print("\n".join(output.splitlines()[-4:]), flush=True)
        records = read_records(folder / "humanfix.jsonl") \
            if (folder / "humanfix.jsonl").is_file() else []
        self.records[name] = records
        row = {"phase": name, "status": status, "wall_s": round(ended - began, 1),
               **self.summary_figures(folder, records)}
        row.update(self.timeline(began, ended, log, jsonl))
        return row

    @staticmethod
    def summary_figures(folder: Path, records: list[dict]) -> dict[str, Any]:
        """The run's own figures, as its summary.json reports them (one definition)."""
        try:
            summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"tasks": len(records)}
        cost = summary.get("cost") or {}
        return {"tasks": summary["tasks"]["total"], "fixed": summary["tasks"]["fixed"],
                "errors": summary["tasks"]["errors"],
                "pass_at_1": (summary.get("pass_at_1") or {}).get("value"),
                "completion_tokens_per_task":
                    (cost.get("per_task") or {}).get("completion_tokens"),
                "replies": (cost.get("total") or {}).get("replies"),
                "completion_tokens": (cost.get("total") or {}).get("completion_tokens"),
                "computed_by": first_computed_by(cast(list[Record], records))}

    def timeline(self, began: float, ended: float, log: list[tuple[float, str]],
                 jsonl: list[tuple[float, str]]) -> dict[str, Any]:
        """When the engine answered and the tasks began and ended, from the run's start; the
        GPU's busy share from the first task's start to the last record (replies being
        generated) and over the whole run."""
        start = engine_start(log, began) if log else None
        records_at = [at for at, line in jsonl if line.strip()]
        first, last = first_request(jsonl), (records_at[-1] if records_at else ended)
        return {"engine_start": start,
                "first_task_s": round(first - began, 1) if first is not None else None,
                "first_record_s": round(records_at[0] - began, 1) if records_at else None,
                "generating_s": round(last - first, 1) if first is not None else None,
                "gpu_busy_generating": busy_share(self.sampler.samples, first, last)
                if first is not None else None,
                "gpu_busy_run": busy_share(self.sampler.samples, began, ended)}

    def workers(self, settings: Settings) -> int:
        """The phases' -n as a number: `auto` as the plugin resolves it (xdist's own choice,
        one a core, where the plugin leaves it)."""
        if self.args.workers != "auto":
            return int(self.args.workers)
        return auto_num_workers(settings) or len(os.sched_getaffinity(0))

    def start_warm_engine(self) -> None:
        """The engine a `--humanfix-serve` run starts under default settings, by the plugin's
        own `launch`, sized for the phases' workers: the same command and environment, left
        running for the phases that ask it. One that does not start is a row, and those phases
        are skipped."""
        settings = Settings(model=self.args.model, engine="vllm" if self.cpu else "auto",
                            vllm_python=self.args.cpu_rehearsal)
        log_path = self.args.out / "warm-engine.log"
        lines = self.watcher.watch(log_path)
        began = self.clock.now()
        row: dict[str, Any] = {"phase": "warm engine start"}
        try:
            self.engine = launch.launch(settings, log_path, device=None if self.cpu else "0",
                                        workers=self.workers(settings))
        except ServeError as exc:
            self.engine_error = row["status"] = str(exc)[-2000:]
        self.watcher.read_all()
        self.record({**row, "wall_s": round(self.clock.now() - began, 1),
                     "engine_start": engine_start(lines, began)})

    def stop_warm_engine(self) -> None:
        if self.engine is not None:
            self.engine.stop()
            self.engine = None

    def record(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "computed_by"}), flush=True)
        self.write()

    def agreements(self) -> list[dict[str, Any]]:
        """Replies and outcomes compared between runs of the same work (`COMPARED`)."""
        return [{"runs": f"{a} / {b}", **agreement(self.records[a], self.records[b])}
                for a, b in COMPARED if self.records.get(a) and self.records.get(b)]

    def write(self) -> None:
        write_json(self.args.json, {
            "model": self.args.model, "workers": self.args.workers, "max": self.args.max,
            "cpu_rehearsal": self.cpu,
            "rows": [{k: v for k, v in row.items() if k != "computed_by"} for row in self.rows],
            "agreements": self.agreements()},
            {row["phase"]: row["computed_by"] for row in self.rows if row.get("computed_by")})
        if self.args.archive is not None:
            self.archive()

    def archive(self) -> None:
        """The runs' records, summaries, engine logs and output in one file, written anew
        (a call returns few files)."""
        partial = self.args.archive.with_name(self.args.archive.name + ".partial")
        with tarfile.open(partial, "w:gz") as tar:
            for path in sorted(self.args.out.rglob("*")):
                if path.is_file() and (path.name in ARCHIVED or path.suffix in (".out", ".log")):
                    tar.add(path, arcname=str(path.relative_to(self.args.out)))
        partial.replace(self.args.archive)


@contextmanager
def running(*threads: Watcher | GpuSampler) -> Iterator[None]:
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        for thread in threads:
            thread.stop()


@contextmanager
def mps(wanted: bool) -> Iterator[None]:
    """The GPU's MPS daemon, started for the in-process phase and stopped after it, so that no
    engine of a later call runs under it."""
    control = shutil.which("nvidia-cuda-mps-control") if wanted else None
    if wanted and control is None:
        print("--mps: no nvidia-cuda-mps-control here; the phase runs without MPS", flush=True)
    if control is not None:
        subprocess.run([control, "-d"], check=False)
    try:
        yield
    finally:
        if control is not None:
            subprocess.run([control], input="quit\n", text=True, check=False)


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--model", required=True, help="a bf16 folder (or any transformers "
                        "model a run takes)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--phases", default=DEFAULT_PHASES,
                        help=f"in order, comma-separated, each of {', '.join(PHASES)}")
    parser.add_argument("--max", type=int, help="only the first N tasks")
    parser.add_argument("-n", "--workers", default="auto")
    parser.add_argument("--in-process-workers", default="16",
                        help="-n of the in-process phase (-n auto gives one copy a GPU; the "
                             "earlier in-process figures are of 16)")
    parser.add_argument("--deadline", type=float, default=float("inf"),
                        help="start no phase after this many seconds of the script")
    parser.add_argument("--phase-timeout", type=float, default=900.0,
                        help="seconds a phase's pytest may take before it is killed")
    parser.add_argument("--mps", action="store_true",
                        help="run the in-process phase under the GPU's MPS daemon")
    parser.add_argument("--lever-args", default="",
                        help="the engine arguments of the `levers` phase, one shell string")
    parser.add_argument("--extra", default="",
                        help="options of every run, one shell string (--humanfix-variant "
                             "docs); the warm engine itself starts under default settings")
    parser.add_argument("--cpu-rehearsal", metavar="PY", help="the Python of vLLM's CPU build: "
                        "the engine phases start it, as a GPU run starts vLLM by default")
    parser.add_argument("--archive", type=Path, metavar="PATH.tar.gz",
                        help="also keep the runs' records, summaries and logs in this file")
    parser.add_argument("--empty-caches", action="store_true",
                        help="first empty the engine's compile and autotune caches (the "
                             "folders the plugin names), so the first engine starts cold")
    args = parser.parse_args()
    phases = args.phases.split(",")
    if unknown := sorted(set(phases) - set(PHASES)):
        parser.error(f"unknown phases {unknown}; each is one of {', '.join(PHASES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.empty_caches:
        for _, folder in cache_environment(ENGINE_KINDS["vllm"]):
            shutil.rmtree(folder, ignore_errors=True)
    bench = Bench(args)
    seen: dict[str, int] = {}
    with running(bench.watcher, bench.sampler):
        try:
            for phase in phases:
                if bench.clock.now() > args.deadline:
                    print(f"{phase} not started: past --deadline", flush=True)
                    break
                seen[phase] = seen.get(phase, 0) + 1
                name = phase if phases.count(phase) == 1 else f"{phase}-{seen[phase]}"
                if phase in ON_THE_WARM_ENGINE:
                    if bench.engine is None and bench.engine_error is None:
                        bench.start_warm_engine()
                    if bench.engine is None:
                        print(f"{name} not run: the warm engine did not start", flush=True)
                        continue
                else:
                    bench.stop_warm_engine()  # a GPU holds one vLLM engine's memory at a time
                with mps(args.mps and phase == "in-process"):
                    bench.record(bench.pytest(phase, name))
        finally:
            bench.stop_warm_engine()
    print_table(bench.rows, ["phase", "wall_s", "tasks", "fixed", "pass_at_1",
                             "completion_tokens_per_task", "first_task_s", "generating_s",
                             "gpu_busy_generating"])
    print_table(bench.agreements(), ["runs", "tasks", "replies", "differ", "lost", "gained"])
    bench.write()


if __name__ == "__main__":
    main()
