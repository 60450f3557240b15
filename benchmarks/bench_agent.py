"""What the LangGraph agent adds to one attempt: `repair()` against a bare sandbox run.

Both sides run the same candidate (the canonical solution, as the `canonical` control replies
it) against the same hidden test in the same sandbox, task after task, in one process; the
agent also builds the prompt, extracts and checks the code, and walks the graph. Printed: both
wall times and their ratio, and the agent's own time per task (everything but the sandbox).

    python benchmarks/bench_agent.py [--dataset PATH] [--tasks 40]
"""

from __future__ import annotations

import argparse
import time

from common import add_dataset_argument

from pytest_humanfix.agent.graph import repair, repair_graph
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.sandbox.fresh import ProcessSandbox
from pytest_humanfix.sandbox.program import build_program
from pytest_humanfix.settings import Settings



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    results = [repair(t, model, sandbox, settings) for t in tasks]
    agent_seconds = time.perf_counter() - started
    fixed = sum(r.outcome == "fixed" for r in results)
    executing = sum(a.execute_seconds for r in results for a in r.attempts)

    print(f"tasks: {len(tasks)}  passed bare: {bare}  fixed by the agent: {fixed}")
    print(f"bare sandbox loop: {bare_seconds:.2f} s   agent (repair): {agent_seconds:.2f} s")
    print(f"ratio agent / bare: {agent_seconds / bare_seconds:.3f}")
    print(f"agent time outside the sandbox: "
          f"{1000 * (agent_seconds - executing) / len(tasks):.1f} ms per task")


if __name__ == "__main__":
    main()
