"""What the LangGraph agent adds to one attempt: `repair()` against a bare sandbox run of the same
candidate. Method: docs/benchmarks.md, "How each script measures".

    python benchmarks/harness/bench_agent.py [--dataset PATH] [--tasks 40] [--json PATH]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, write_json

from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.agent.graph import repair, repair_graph
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.sandbox.fresh import ProcessSandbox
from pytest_humanfix.sandbox.program import build_program
from pytest_humanfix.settings import Settings


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--tasks", type=int, default=40)
    args = parser.parse_args()
    tasks = load_tasks(str(args.dataset))[: args.tasks]
    settings = Settings()
    sandbox, model = ProcessSandbox(), load_model("canonical", GenerationConfig.of(settings))
    repair_graph()  # the one-off import and compile is not per task

    started = time.perf_counter()
    bare = sum(sandbox.run(build_program(t.canonical_code, t.test, t.test_setup)).passed
               for t in tasks)
    bare_seconds = time.perf_counter() - started

    started = time.perf_counter()
    config = RepairConfig.of(settings)
    results = [repair(t, model, sandbox, config) for t in tasks]
    agent_seconds = time.perf_counter() - started
    fixed = sum(r.outcome == "fixed" for r in results)
    executing = sum(a.execute_seconds for r in results for a in r.attempts)

    print(f"tasks: {len(tasks)}  passed bare: {bare}  fixed by the agent: {fixed}")
    print(f"bare sandbox loop: {bare_seconds:.2f} s   agent (repair): {agent_seconds:.2f} s")
    print(f"ratio agent / bare: {agent_seconds / bare_seconds:.3f}")
    outside_ms = 1000 * (agent_seconds - executing) / len(tasks)
    print(f"agent time outside the sandbox: {outside_ms:.1f} ms per task")
    write_json(args.json, {"tasks": len(tasks), "passed_bare": bare, "fixed_by_agent": fixed,
                           "bare_seconds": bare_seconds, "agent_seconds": agent_seconds,
                           "ratio_agent_bare": agent_seconds / bare_seconds,
                           "agent_ms_per_task_outside_sandbox": outside_ms},
               model.computed_by)


if __name__ == "__main__":
    main()
