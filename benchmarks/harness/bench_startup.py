"""pytest start-up on a one-test project: the plugin installed (inactive) against `-p no:humanfix`,
and the plugin's own import time. Method: docs/benchmarks.md, "How each script measures".

    python benchmarks/harness/bench_startup.py [--runs 21] [--json PATH]
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import benchmark_parser, write_json

COMMON = ["-q", "-p", "no:cacheprovider", "-p", "no:langsmith_plugin"]


def one_run(project: Path, extra: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", *COMMON, *extra],
                   cwd=project, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def plugin_import_ms() -> float:
    """Cumulative import time of the plugin module once pytest itself is imported."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import pytest; import pytest_humanfix.plugin"],
                         capture_output=True, text=True, check=True).stderr
    for line in err.splitlines():
        if line.rstrip().endswith("| pytest_humanfix.plugin"):
            return int(line.split("|")[1]) / 1000
    raise RuntimeError("pytest_humanfix.plugin not in the import-time report")


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
        sides = {"plugin installed": [], "-p no:humanfix": []}
        one_run(project, [])  # warm the file cache once
        for _ in range(args.runs):
            sides["plugin installed"].append(one_run(project, []))
            sides["-p no:humanfix"].append(one_run(project, ["-p", "no:humanfix"]))
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")
    medians = {name: statistics.median(times) for name, times in sides.items()}
    for name, median in medians.items():
        print(f"{name:>18}: median {1000 * median:7.1f} ms over {args.runs} runs")
    ratio = medians["plugin installed"] / medians["-p no:humanfix"]
    print(f"ratio plugin/no-plugin: {ratio:.3f} "
          f"({1000 * (medians['plugin installed'] - medians['-p no:humanfix']):+.1f} ms)")
    imports = sorted(plugin_import_ms() for _ in range(5))
    print(f"import pytest_humanfix.plugin after pytest: median {imports[2]:.1f} ms")
    write_json(args.json, {"runs": args.runs,
                           "median_ms": {name: 1000 * median for name, median in medians.items()},
                           "ratio_plugin_no_plugin": ratio,
                           "plugin_import_ms": imports[2]})


if __name__ == "__main__":
    main()
