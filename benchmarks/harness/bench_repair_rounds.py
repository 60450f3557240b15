"""Repair rounds as an ablation: runs of one model with rounds, side by side, each against the first
(the design before), on the tasks they share. Method: docs/benchmarks.md, "How each script
measures"; figures: docs/benchmarks.md, "Repair rounds".

    python benchmarks/harness/bench_repair_rounds.py before=runs/before/humanfix.jsonl \
        after=runs/after/humanfix.jsonl [--json PATH] [--run LABEL -- PYTEST ARGS...]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import benchmark_parser, read_records, write_json

from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.reporting.stats import mcnemar_exact
from pytest_humanfix.reporting.summary import by_round, repairs, scored

COLUMNS = ["run", "tasks", "fixed within round k", "repeated replies", "rounds on a repeat",
           "tokens/task prompt/completion", "task seconds", "replies calling the tool",
           "vs first (McNemar)"]


def figures(records: list[dict[str, Any]], first: dict[str, str] | None) -> dict[str, Any]:
    """One run's figures, and against FIRST's outcomes (None for the first run itself)."""
    counted = [r for r in records if scored(r)]
    repaired = repairs(counted) or {}
    tasks = len(counted) or 1
    offered = [a.get("tool_calls") for r in counted for a in r.get("attempts") or []
               if a.get("tool_calls") is not None]
    found: dict[str, Any] = {
        "tasks": len(counted),
        "fixed_by_round": {point["round"]: point["fixed"] for point in by_round(counted)},
        "repeated_replies": repaired.get("repeated", 0),
        "repair_replies": repaired.get("replies", 0),
        "rounds_on_a_repeat": repaired.get("wasted_rounds", 0),
        "repair_rounds": repaired.get("rounds", 0),
        "prompt_tokens_per_task": sum(int((r.get("tokens") or {}).get("prompt", 0))
                                      for r in counted) / tasks,
        "completion_tokens_per_task": sum(int((r.get("tokens") or {}).get("completion", 0))
                                          for r in counted) / tasks,
        "task_seconds": sum(float(r.get("seconds") or 0) for r in counted),
        "replies_calling_the_tool": sum(n > 0 for n in offered) if offered else None,
        "replies_offered_the_tool": len(offered) if offered else None,
    }
    if first is not None:
        outcomes = {r["task_id"]: r["outcome"] for r in counted}
        shared = sorted(set(outcomes) & set(first))
        found["gained"] = sum(outcomes[t] == "fixed" and first[t] != "fixed" for t in shared)
        found["lost"] = sum(outcomes[t] != "fixed" and first[t] == "fixed" for t in shared)
        found["mcnemar_p"] = mcnemar_exact(found["lost"], found["gained"], "two-sided")
    return found


def row(label: str, found: dict[str, Any]) -> list[str]:
    """FOUND as a line of the table, under COLUMNS."""
    calls = found["replies_offered_the_tool"]
    return [label, str(found["tasks"]),
            " ".join(f"r{k}={fixed}" for k, fixed in found["fixed_by_round"].items()),
            f"{found['repeated_replies']}/{found['repair_replies']}",
            f"{found['rounds_on_a_repeat']}/{found['repair_rounds']}",
            f"{found['prompt_tokens_per_task']:.0f}/{found['completion_tokens_per_task']:.0f}",
            f"{found['task_seconds']:.0f}",
            f"{found['replies_calling_the_tool']}/{calls}" if calls else "-",
            f"+{found['gained']} -{found['lost']} p={found['mcnemar_p']:.3f}"
            if "mcnemar_p" in found else ""]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own: list[str] = []
    if "--run" in argv:
        at = argv.index("--run")
        argv, own = argv[:at], argv[at + 1:]
    parser = benchmark_parser(__doc__)
    parser.add_argument("runs", nargs="*", metavar="LABEL=PATH")
    arguments = parser.parse_args(argv)
    runs = []
    for spec in arguments.runs:
        label, _, path = spec.partition("=")
        runs.append((label, read_records(Path(path))))
    if own:
        label, _, *pytest_args = own
        folder = Path(tempfile.mkdtemp(prefix="bench-rounds-"))
        subprocess.run([sys.executable, "-m", "pytest", *pytest_args,
                        f"--humanfix-report-dir={folder}"], check=False)
        runs.append((label, read_records(folder / "humanfix.jsonl")))
    if not runs:
        parser.error("name at least one LABEL=PATH, or --run LABEL -- PYTEST ARGS")
    first = {r["task_id"]: r["outcome"] for r in runs[0][1] if scored(r)}
    found = {label: figures(records, None if index == 0 else first)
             for index, (label, records) in enumerate(runs)}
    table = [COLUMNS, *(row(label, each) for label, each in found.items())]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    for line in table:
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        print("  ".join(cells).rstrip())
    write_json(arguments.json, {"runs": found},
               {label: first_computed_by(records) for label, records in runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
