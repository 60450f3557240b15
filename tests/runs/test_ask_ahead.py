"""Asking ahead end to end, through a server that answers a batch in fixed time (batch_stub.py)
under xdist: the records are the same with and without it, and a run interrupted while its
requests wait loses no record already written and leaves no request open."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from batch_stub import BatchServer, request_hash

# Two samples at a temperature and a repair round each: every request of a task carries its own
# seed, and a reply that holds the request's hash (batch_stub.hashed_reply) shows any change.
ARGS = ("--humanfix-model", "openai:stub", "-n", "2", "--humanfix-max", "10",
        "--humanfix-iters", "1", "--humanfix-samples", "2", "--humanfix-temperature", "0.8",
        "-p", "no:cacheprovider")


def asked_and_answered(record: dict) -> dict:
    """What a record says was asked and answered, without its times and its run's names."""
    return {"outcome": record["outcome"], "n_fixed": record["n_fixed"],
            "tokens": record["tokens"],
            "samples": [{k: v for k, v in sample.items() if k != "seconds"}
                        for sample in record["samples"]],
            "attempts": [{key: attempt[key] for key in (
                "reply", "prompt", "temperature", "round", "status", "prompt_tokens",
                "completion_tokens", "finish_reason")} for attempt in record["attempts"]]}


def most_waiting_in_one_worker(stub: BatchServer, records: list[dict]) -> int:
    """The most requests of one worker waiting at the server at once: each first sample's
    request found by its hash in the reply its record holds (batch_stub.hashed_reply)."""
    worker_of = {attempt["reply"].split("# request ")[1][:16]: record["worker"]
                 for record in records for attempt in record["attempts"]}
    most = 0
    for worker in set(worker_of.values()):
        mine = [s for s in stub.requests if worker_of.get(request_hash(s.body)) == worker]
        for served in mine:
            most = max(most, sum(other.arrived <= served.arrived < (other.ended or 1e9)
                                 for other in mine))
    return most


def run(pytester: pytest.Pytester, ask_ahead: int) -> tuple[dict[str, dict], int]:
    folder = pytester.path / f"ask-ahead-{ask_ahead}"
    with BatchServer(batch_seconds=0.05) as stub:
        result = pytester.runpytest(*ARGS, f"--humanfix-base-url={stub.base_url}",
                                    f"--humanfix-ask-ahead={ask_ahead}",
                                    f"--humanfix-report-dir={folder}")
        assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
        records = [json.loads(line)
                   for line in (folder / "humanfix.jsonl").read_text().splitlines()]
        most = most_waiting_in_one_worker(stub, records)
    return {r["task_id"]: asked_and_answered(r) for r in records}, most


def test_the_records_are_the_same_with_and_without_asking_ahead(humanfix_pytester):
    today, most_today = run(humanfix_pytester, 0)
    ahead, most_ahead = run(humanfix_pytester, 4)
    assert len(today) == 10 and ahead == today
    assert all(len(r["attempts"]) == 2 for r in today.values())
    # A worker asks one request at a time; asking ahead, its next task's waits beside it.
    assert most_today == 1 and most_ahead >= 2


def test_an_interrupted_run_keeps_its_records_and_leaves_no_request_open(spawn_pytest):
    """In one process, which ends only once every thread that is not a daemon has (an xdist
    worker ends at once whatever its threads do)."""
    with BatchServer(batch_seconds=0.05) as stub:
        run = spawn_pytest("--humanfix-model", "openai:stub", "--humanfix-max", "40", "-q",
                           "-p", "no:cacheprovider", f"--humanfix-base-url={stub.base_url}")
        jsonl = run.wait_for_records(4)
        stub.batch_seconds = 600.0  # every request from now on waits
        run.wait_for(lambda: stub.open_requests() > 2, "requests asked ahead waiting")
        written = jsonl.read_text().splitlines()
        run.send(signal.SIGINT, whole_group=True)
        # A process that waited for its requests would outlive this by minutes.
        assert run.finish(timeout=60) == pytest.ExitCode.INTERRUPTED, run.tail()
        deadline = time.monotonic() + 10
        while stub.open_requests() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stub.open_requests() == 0, "a request was left waiting at the server"
    lines = Path(jsonl).read_text().splitlines()
    assert lines[:len(written)] == written
    assert all(json.loads(line)["outcome"] for line in lines)


def test_an_agent_a_conftest_brings_is_never_asked_ahead(humanfix_pytester):
    """Its requests are its own: a reply asked ahead for the built-in agent's first prompt
    would be wasted, and for a sampled reply would take the seed of the agent's own."""
    humanfix_pytester.makeconftest('''
import pytest

@pytest.fixture(scope="session")
def humanfix_agent():
    def fix(ctx):
        return ctx.model.chat([{"role": "user", "content": ctx.task.prompt}])
    return fix
''')
    with BatchServer(batch_seconds=0.05) as stub:
        humanfix_pytester.runpytest("--humanfix-model", "openai:stub", "--humanfix-max", "3",
                                    f"--humanfix-base-url={stub.base_url}")
        assert len(stub.requests) == 3 and stub.most_in_flight() == 1
