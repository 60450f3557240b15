"""The figures docs/benchmarks.md quotes in "Workers ready at once" and "The engine kept fed"
are those of the JSON files the benchmarks wrote, committed in benchmarks/records/start-and-feed/:
every row of their tables, the requests waiting over time, and what measured them (the commit,
the machine's load, when it finished)."""

from __future__ import annotations

import datetime
import gzip
import json
import statistics
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "benchmarks" / "records" / "start-and-feed"
PAGE = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    return PAGE.split(f"### {title}\n", 1)[1].split("\n#", 1)[0]


def record(name: str) -> dict:
    return json.loads((FOLDER / name).read_text(encoding="utf-8"))


def row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def provenance(text: str, name: str) -> None:
    """The commit, the load and the end the section quotes are the record's."""
    written = record(name)
    flat = " ".join(text.split())
    assert f"`{written['commit']}` in the record" in flat
    assert f"against {written['figures']['before']}'s tree" in flat
    loads = [f"{load:.1f}" for load in written["machine"]["load"]]
    assert f"load averages {loads[0]}, {loads[1]} and {loads[2]} at its end" in flat
    day, time = written["finished"].split("T")
    assert f"finished {day} {time[:8]} UTC" in flat
    assert written["machine"]["cores"] == 2 and written["machine"]["cpu"] in flat
    assert f"`benchmarks/records/start-and-feed/{name}`" in flat


def test_the_ask_ahead_rows_are_the_benchmarks():
    written = record("ask_ahead.json")
    figures = written["figures"]
    text = section("The engine kept fed")
    provenance(text, "ask_ahead.json")
    assert " ".join(written["arguments"][:-2]) in " ".join(text.split())
    for workers in ("n2", "n8"):
        for entry in figures["runs"][workers]["rows"]:
            today = entry["side"] == "today"
            side = f"today ({figures['before']})" if today else entry["side"]
            differ = "-" if today else \
                f"{entry['runs_whose_replies_differ']} of {figures['rounds']} runs"
            cells = [side, f"{entry['wall_s']:.1f}", f"{entry['wall/today']:.2f}",
                     f"{entry['first_request_s']:.1f}", f"{entry['last_reply_s']:.1f}",
                     f"{entry['batches']:g}", f"{entry['mean_batch']:.1f}",
                     str(entry["most_in_flight"]), differ]
            assert row(*cells) in text, cells
            assert entry["fixed"] == figures["tasks"], "every reply was the canonical solution"
    waiting = figures["runs"]["n2"]["in_flight"]
    flat = " ".join(text.split())
    assert f"asking 4 ahead `{', '.join(map(str, waiting['ask ahead 4']))}`" in flat
    today = waiting["today"]
    assert today[0] == today[-1] == 1 and set(today[1:-1]) == {2}
    assert f"({len(today) - 1} samples of 2" in flat


# Each row of the steps' table and the record's steps it adds up (medians of the runs).
STEPS = {
    "controller: python, pytest and its plugins": ["python, pytest and plugins"],
    "controller: the plugin's modules": ["import the plugin's modules"],
    "controller: checks and the servers' probe": ["validate", "probe servers"],
    "controller: calibration (164 programs)": ["calibrate"],
    "controller: the last worker sent its state, at": ["workers configured"],
    "worker: python, pytest and its plugins": ["python, pytest and plugins"],
    "worker: the plugin's modules": ["import the plugin's modules"],
    "worker: tasks, sandbox, collection": ["load tasks", "choose sandbox", "collect"],
    "worker: the model's client (openai, pydantic, httpx)": ["load model"],
    "worker: of which `/v1/models`, `/props`, `/version`": ["probe /v1/models",
                                                            "probe /props, /version"],
    "worker: the agent's graph (langgraph, langchain_core, langsmith)": ["build graph"],
    "worker: from collected to its first task": ["ready to first task"],
}


def test_the_worker_start_rows_are_the_benchmarks():
    written = record("worker_start.json")
    runs = written["figures"]["runs"]
    text = section("Workers ready at once")
    provenance(text, "worker_start.json")
    assert " ".join(written["arguments"][:-2]) in text
    assert all(len(runs[n][side]) == written["figures"]["rounds"]
               for n in runs for side in ("before", "after"))

    def median(workers: str, side: str, *path: str) -> float:
        def figure(run: dict) -> float:
            for key in path:
                run = run[key]
            return run  # type: ignore[return-value]
        return statistics.median(figure(run) for run in runs[workers][side])

    for key, name in (("first_task_s", "first task begins"),
                      ("first_request_s", "first request reaches the server"),
                      ("wall_s", "wall time of the run")):
        cells = [name]
        for workers in ("n2", "n8"):
            for side in ("before", "after"):
                values = sorted(run[key] for run in runs[workers][side])
                cells.append(f"{statistics.median(values):.1f} "
                             f"({values[0]:.1f}–{values[-1]:.1f})")
            cells.append(f"{median(workers, 'after', key) / median(workers, 'before', key):.2f}")
        assert row(*cells) in text, cells
    gets = {(workers, side): int(median(workers, side, "probes"))
            for workers in ("n2", "n8") for side in ("before", "after")}
    assert (f"| GET requests at the server | {gets['n2', 'before']} | {gets['n2', 'after']} | "
            f"| {gets['n8', 'before']} | {gets['n8', 'after']} | |") in text

    for name, parts in STEPS.items():
        process = name.split(":")[0]
        digits = 2 if "/v1/models" in name else 1
        cells = [name]
        for workers in ("n2", "n8"):
            for side in ("before", "after"):
                seconds = sum(median(workers, side, process, part) for part in parts)
                cells.append(f"{seconds:.{digits}f}" if seconds >= 0.005 else "0")
        assert row(*cells) in text, cells


def test_the_changelog_quotes_the_same_before_figures():
    entry = " ".join((REPO / "docs" / "changelog.md").read_text(encoding="utf-8").split(
        "## A worker's start and its one request at a time", 1)[1].split("\n## ", 1)[0].split())
    runs = record("worker_start.json")["figures"]["runs"]
    before = {key: statistics.median(run[key] for run in runs["n2"]["before"])
              for key in ("first_task_s", "first_request_s", "probes")}
    assert (f"the first task began at {before['first_task_s']:.1f} s, the first request came at "
            f"{before['first_request_s']:.1f} s, {before['probes']:g} GET requests") in entry
    assert f"({statistics.median(run['probes'] for run in runs['n8']['before']):g} under `-n 8`)" \
        in entry
    today = record("ask_ahead.json")["figures"]["runs"]["n2"]["rows"][0]
    assert today["side"] == "today"
    assert f"took {today['wall_s']:.1f} s in {today['batches']:g} batches of one reply" in entry


def test_the_h200s_start_is_its_committed_records():
    """Where the H200's 39.7 s to the first task went, from the GPU run's records: its rows, the
    warm run's summary (when the controller made the run id) and records (the calibration)."""
    folder = REPO / "benchmarks" / "records" / "gpu-h200-2026-12-04"
    rows = json.loads((folder / "a.json").read_text(encoding="utf-8"))
    warm = rows["figures"]["rows"][-1]
    assert warm["phase"] == "warm", "the warm run was the benchmark's last: it ended with it"
    started = datetime.datetime.fromisoformat(rows["finished"]).timestamp() - warm["wall_s"]
    summary = json.loads((folder / "warm-summary.json").read_text(encoding="utf-8"))["run"]
    run_id_at = datetime.datetime.fromisoformat(summary["started_at"]).timestamp() - started
    with gzip.open(folder / "warm.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    calibrated = sum(record["time_limit"]["canonical_seconds"] for record in records)
    assert {record["sandbox"] for record in records} == {"process"}, "no warm executor"
    text = " ".join(section("Workers ready at once").split())
    assert (f"`-n 16`, {rows['machine']['cores']} cores, vLLM "
            f"{rows['computed_by']['warm']['version']}, commit {rows['commit']}") in text
    assert f"the first task began {warm['first_task_s']:.1f} s after pytest started" in text
    assert f"is {run_id_at:.0f} s after pytest's start" in text
    assert f"add up to {calibrated:.1f} s" in text
    assert f"took {warm['first_task_s'] - run_id_at:.1f} s to their first task" in text
