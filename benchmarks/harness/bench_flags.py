"""What reading the flags costs: per language, the flags of the 164 canonical and 164 buggy
solutions read from the syntax tree and the text (tree-sitter's grammar) against the text
alone, and Python's reading of its syntax tree; and the import of tree-sitter and each grammar
in a fresh interpreter, paid once per process on the first reading. Method: docs/benchmarks.md,
"How each script measures".

    python benchmarks/harness/bench_flags.py [--dataset packaged] [--runs 5] [--json PATH]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, write_json  # noqa: E402

from pytest_humanfix.agent.suspicion import suspicion_flags  # noqa: E402
from pytest_humanfix.dataset import Task, load_tasks  # noqa: E402
from pytest_humanfix.languages import LANGUAGES, reading  # noqa: E402
from pytest_humanfix.languages.grammars import GRAMMARS  # noqa: E402


def read_all(tasks: list[Task], runs: int) -> float:
    """The best of `runs` times to read the flags of every canonical and buggy solution, ms."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        for task in tasks:
            for code in (task.canonical_code, task.buggy_code):
                if task.language == "python":
                    suspicion_flags(code, task.test)
                else:
                    LANGUAGES[task.language].flags(code, task.test)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def import_ms(module: str) -> float:
    """The import of `module` in a fresh interpreter, tree-sitter's own included, ms."""
    code = ("import time; started = time.perf_counter(); import tree_sitter, " + module
            + "; print((time.perf_counter() - started) * 1000)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return float(done.stdout)


def main() -> None:
    parser = benchmark_parser(__doc__ or "")
    add_dataset_argument(parser)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {"tree_ms": {}, "text_ms": {}, "ratio": {},
                                            "import_ms": {}}
    print(f"reading the flags, best of {args.runs} runs:")
    for name in LANGUAGES:
        tasks = load_tasks(str(args.dataset.parent / f"humanevalpack-{name}.jsonl"), name)
        figures["tree_ms"][name] = round(read_all(tasks, args.runs), 1)
        line = f"{name:7} {len(tasks) * 2} solutions: {figures['tree_ms'][name]:7.1f} ms"
        if name in GRAMMARS:
            with mock.patch.object(reading, "parser", lambda language: None):
                figures["text_ms"][name] = round(read_all(tasks, args.runs), 1)
            figures["ratio"][name] = round(figures["tree_ms"][name] / figures["text_ms"][name], 2)
            figures["import_ms"][name] = round(import_ms(GRAMMARS[name]), 1)
            line += (f" from the tree and the text, {figures['text_ms'][name]:6.1f} ms from the "
                     f"text alone (x{figures['ratio'][name]}); tree-sitter and the grammar "
                     f"import in {figures['import_ms'][name]:.1f} ms")
        print(line if name in GRAMMARS else line + " from the syntax tree (ast)")
    write_json(args.json, {"runs": args.runs, **figures})


if __name__ == "__main__":
    main()
