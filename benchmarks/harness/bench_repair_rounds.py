"""Repair rounds as an ablation: runs of one model with rounds, side by side, each against the
first (the design before), on the tasks they share.

    python benchmarks/bench_repair_rounds.py before=runs/before/humanfix.jsonl \
        after=runs/after/humanfix.jsonl [--run LABEL -- PYTEST ARGS...]

Each LABEL=PATH is a results JSONL of an earlier run (`pytest --humanfix-model qwen-coder
--humanfix-serve -n 2 --humanfix-max 40 --humanfix-iters 3 --humanfix-report-dir=DIR`, from the
tree under test). With `--run LABEL -- ARGS...` the script first runs `pytest ARGS
--humanfix-report-dir=<tmp>` itself and adds it last. Printed per run: fixed within each round,
the repair replies that repeated failed code and the rounds that ended on a repeat, prompt and
completion tokens per task, wall time, and against the first run: tasks fixed by one and not the
other and McNemar's exact two-sided p. Every figure is the summary's own (reporting/summary.py),
but for the function-calling agent's (`--humanfix-agent tools`): of the replies offered the tool,
how many called it ("-" for a run of the other agent).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_humanfix.reporting.stats import mcnemar_exact
from pytest_humanfix.reporting.summary import by_round, repairs, scored


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def row(label: str, records: list[dict[str, Any]], first: dict[str, str] | None) -> list[str]:
    counted = [r for r in records if scored(r)]
    rounds = " ".join(f"r{point['round']}={point['fixed']}" for point in by_round(counted))
    repaired = repairs(counted) or {}
    tasks = len(counted) or 1
    prompt = sum(int((r.get("tokens") or {}).get("prompt", 0)) for r in counted)
    completion = sum(int((r.get("tokens") or {}).get("completion", 0)) for r in counted)
    seconds = sum(float(r.get("seconds") or 0) for r in counted)
    offered = [a.get("tool_calls") for r in counted for a in r.get("attempts") or []
               if a.get("tool_calls") is not None]
    calls = f"{sum(n > 0 for n in offered)}/{len(offered)}" if offered else "-"
    versus = ""
    if first is not None:
        outcomes = {r["task_id"]: r["outcome"] for r in counted}
        shared = sorted(set(outcomes) & set(first))
        gained = sum(outcomes[t] == "fixed" and first[t] != "fixed" for t in shared)
        lost = sum(outcomes[t] != "fixed" and first[t] == "fixed" for t in shared)
        versus = f"+{gained} -{lost} p={mcnemar_exact(lost, gained, 'two-sided'):.3f}"
    return [label, str(len(counted)), rounds,
            f"{repaired.get('repeated', 0)}/{repaired.get('replies', 0)}",
            f"{repaired.get('wasted_rounds', 0)}/{repaired.get('rounds', 0)}",
            f"{prompt / tasks:.0f}/{completion / tasks:.0f}", f"{seconds:.0f}", calls, versus]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own: list[str] = []
    if "--run" in argv:
        at = argv.index("--run")
        argv, own = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", metavar="LABEL=PATH")
    arguments = parser.parse_args(argv)
    runs = []
    for spec in arguments.runs:
        label, _, path = spec.partition("=")
        runs.append((label, read(Path(path))))
    if own:
        label, _, *pytest_args = own
        folder = Path(tempfile.mkdtemp(prefix="bench-rounds-"))
        subprocess.run([sys.executable, "-m", "pytest", *pytest_args,
                        f"--humanfix-report-dir={folder}"], check=False)
        runs.append((label, read(folder / "humanfix.jsonl")))
    if not runs:
        parser.error("name at least one LABEL=PATH, or --run LABEL -- PYTEST ARGS")
    first = {r["task_id"]: r["outcome"] for r in runs[0][1] if scored(r)}
    table = [["run", "tasks", "fixed within round k", "repeated replies", "rounds on a repeat",
              "tokens/task prompt/completion", "task seconds", "replies calling the tool",
              "vs first (McNemar)"]]
    table += [row(label, records, None if index == 0 else first)
              for index, (label, records) in enumerate(runs)]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        print("  ".join(cells).rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
