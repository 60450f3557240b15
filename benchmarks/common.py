"""What the benchmarks under harness/ and engine/ share: their command line (`--dataset`,
`--json`), the JSON file of figures each writes, one full control run through pytest, a model
run in a fresh project, and how far two runs' replies agree. Each benchmark puts this folder on
its path to import it; docs/benchmarks.md, "The benchmark scripts", lists them."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_humanfix.computed_by import host  # noqa: E402
from pytest_humanfix.datafiles import HUMANEVALPACK, PACKAGED  # noqa: E402


def benchmark_parser(doc: str) -> argparse.ArgumentParser:
    """The command line every benchmark starts from: its docstring's first paragraph as the
    description, and `--json PATH`, read by `write_json`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the figures printed, and what computed them, to PATH "
                             "as one JSON object")
    return parser


def write_json(path: Path | None, figures: Mapping[str, Any],
               computed_by: Mapping[str, Any] | None = None) -> None:
    """FIGURES (what the benchmark printed, as numbers) to PATH as one JSON object, beside the
    command that measured them, the checkout's commit, the machine (computed_by.host, with the
    platform, Python and load) and COMPUTED_BY: the engine's description as a record holds it
    (pytest_humanfix/computed_by.py), or one per configuration keyed by its name; None for a
    benchmark that runs no model. Nothing is written when PATH is None (no --json)."""
    if path is None:
        return
    script = Path(sys.argv[0]).resolve()
    document = {
        "benchmark": str(script.relative_to(REPO)) if script.is_relative_to(REPO) else str(script),
        "arguments": sys.argv[1:],
        "commit": checkout_commit(),
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {**host(), "platform": platform.platform(),
                    "python": platform.python_version(),
                    "load": [round(value, 2) for value in os.getloadavg()]},
        "computed_by": dict(computed_by) if computed_by is not None else None,
        "figures": dict(figures),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # default=str: a Path or another stray object among the figures is written as text rather
    # than losing the figures of a run that may have taken hours.
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"figures written to {path}")


def checkout_commit() -> str:
    """The commit of this checkout, `-dirty` when it has uncommitted changes (`unknown` outside
    git): the tree whose code the figures measured."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                              cwd=REPO, capture_output=True, text=True, check=False)
    except OSError:  # no git on this machine
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def dataset_file(text: str) -> Path:
    """A dataset file, absolute (the runs start in scratch folders, where a relative path
    would name nothing); `packaged`: the package's own data written out as .jsonl files, each
    language's beside the Python one, as the benchmarks read files."""
    if text != PACKAGED:
        return Path(text).resolve()
    folder = Path(tempfile.mkdtemp(prefix="humanfix-data-"))
    for name, data in HUMANEVALPACK.items():
        (folder / f"humanevalpack-{name}.jsonl").write_text(data.read_text(), "utf-8")
    return folder / "humanevalpack-python.jsonl"


def add_dataset_argument(parser: argparse.ArgumentParser) -> None:
    # argparse passes a string default through `type` too.
    parser.add_argument("--dataset", type=dataset_file,
                        default=os.environ.get("HUMANFIX_DATASET") or PACKAGED)


def cpu_seconds(who: int = resource.RUSAGE_CHILDREN) -> float:
    """User and system CPU seconds used so far by `who`. On a machine shared with other work,
    CPU time moves much less with the load than wall time does."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def canonical_run(dataset: Path, workers: int, folder: Path) -> tuple[float, float, list[dict]]:
    """Wall seconds and CPU seconds of the control run, `pytest --humanfix-model canonical
    -n WORKERS` from the checkout root (so the checkout's configuration applies), its reports in
    FOLDER; and the records it wrote."""
    env = tree_env(dataset)
    started, cpu_before = time.perf_counter(), cpu_seconds()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--humanfix-model", "canonical", "-n", str(workers),
                    f"--humanfix-report-dir={folder}"],
                   cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu_before
    return seconds, cpu, read_records(folder / "humanfix.jsonl")


def tree_env(dataset: Path, tree: Path = REPO, **extra: str) -> dict[str, str]:
    """The environment of a pytest run of the plugin in `tree` (this checkout's by default, or
    another commit's exported tree) on `dataset`."""
    return dict(os.environ, HUMANFIX_DATASET=str(dataset), **extra,
                PYTHONPATH=os.pathsep.join(filter(None, [str(tree),
                                                         os.environ.get("PYTHONPATH")])))


def project_run(project: Path, arguments: list[str], dataset: Path,
                environment: dict[str, str] | None = None,
                tree: Path = REPO) -> tuple[float, list[dict]]:
    """`pytest ARGUMENTS` in the fresh project folder PROJECT (made here, with an empty
    pytest.ini, so no other configuration applies), the plugin imported from `tree`, with
    `environment` added to this one's:
    its wall seconds, engine start and model load included as a user waits for them, and the
    records it wrote."""
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=project,
                          env=tree_env(dataset, tree, **(environment or {})),
                          stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{project.name}: pytest exited {done.returncode}:\n"
                         f"{done.stdout[-3000:]}")
    return seconds, read_records(project / "reports" / "humanfix.jsonl")


def reused(project: Path) -> tuple[float, list[dict]]:
    """A finished `project_run`'s wall seconds, as its summary recorded them, and its records."""
    reports = project / "reports"
    summary = json.loads((reports / "summary.json").read_text())
    print(f"{project.name}: reused from {reports}")
    return float(summary["run"]["wall_seconds"]), read_records(reports / "humanfix.jsonl")


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def replies(record: dict[str, Any]) -> list[str]:
    """Every reply of a task's attempts, the first and each repair round's, in order."""
    return [attempt.get("reply", "") for attempt in record.get("attempts") or []]


def agreement(reference: list[dict], other: list[dict]) -> dict[str, int]:
    """How far OTHER's replies are from REFERENCE's on the tasks both ran: replies compared
    attempt by attempt (`replies`, a missing one differs), prompts whose token counts differ
    (another engine's chat template or tokenizer at work), and outcomes that flip (fixed <->
    not fixed) with the side that fixed; a task with an error on either side is not compared."""
    by_task = {r["task_id"]: r for r in other}
    pairs = [(r, by_task[r["task_id"]]) for r in reference if r["task_id"] in by_task]
    errors = sum("error" in (a["outcome"], b["outcome"]) for a, b in pairs)
    pairs = [(a, b) for a, b in pairs if "error" not in (a["outcome"], b["outcome"])]
    compared = differ = prompts_differ = 0
    for a, b in pairs:
        mine, theirs = replies(a), replies(b)
        compared += max(len(mine), len(theirs))
        differ += abs(len(mine) - len(theirs)) + sum(
            x != y for x, y in zip(mine, theirs, strict=False))
        prompts_differ += sum(x.get("prompt_tokens") != y.get("prompt_tokens") for x, y in
                              zip(a.get("attempts") or [], b.get("attempts") or [],
                                  strict=False))
    return {"tasks": len(pairs), "replies": compared, "differ": differ, "errors": errors,
            "prompts_differ": prompts_differ,
            "lost": sum(a["outcome"] == "fixed" and b["outcome"] == "unfixed" for a, b in pairs),
            "gained": sum(a["outcome"] == "unfixed" and b["outcome"] == "fixed"
                          for a, b in pairs)}


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """ROWS as a plain table, a column per key of COLUMNS (its header), numbers right-aligned
    and floats with two decimals."""
    def cell(value: Any) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    table = [[cell(row.get(column)) for column in columns] for row in rows]
    # A list, not unpacked arguments: a table without rows (no runs to compare) is its header.
    widths = [max([len(column), *(len(line[i]) for line in table)])
              for i, column in enumerate(columns)]
    numeric = [bool(rows) and all(isinstance(row.get(c), int | float) for row in rows)
               for c in columns]
    for line in [columns, *table]:
        print("  ".join(text.rjust(width) if right else text.ljust(width)
                        for text, width, right in zip(line, widths, numeric, strict=True)))
