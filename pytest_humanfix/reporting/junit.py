"""JUnit XML: the summary's figures as suite properties, on pytest's own file during a run and
on the file `humanfix-report merge` rebuilds from records; the same names and values in both
(docs/reports.md lists them).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import write_atomically
from ..dataset import item_name
from ..records import Record
from .rates import item_timed_out, task_cost
from .sections import Spent, Summary, model_text
from .summary import computed_by_text
from .xmltext import xml_text

if TYPE_CHECKING:
    import pytest
    from _pytest.junitxml import LogXML


def junit_writer(config: pytest.Config) -> LogXML | None:
    """pytest's JUnit writer of this run, if it writes one. It is reached through a private
    name, behind a guarded import: a pytest that moved it costs only the suite properties."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - a pytest that moved it
        return None
    return config.stash.get(xml_key, None)


def junit_properties(summary: Summary) -> list[tuple[str, str]]:
    """The JUnit suite properties: the same figures as every other view of the summary."""
    tasks, covered = summary["tasks"], summary["coverage"]
    return [("humanfix_pass_at_1", f"{summary['pass_at_1']['value']:.4f}"),
            ("humanfix_fixed", str(tasks["fixed"])),
            ("humanfix_scored", str(tasks["scored"])),
            ("humanfix_errors", str(tasks["errors"])),
            ("humanfix_agent_errors", str(tasks["agent_errors"])),
            ("humanfix_item_timeouts", str(tasks["item_timeouts"])),
            ("humanfix_flagged", str(tasks["flagged"])),
            ("humanfix_selected", str(covered["selected"])),
            ("humanfix_run", str(covered["run"])),
            ("humanfix_not_run", str(covered["not_run"])),
            ("humanfix_not_run_why", "; ".join(covered["why"])),
            ("humanfix_model", model_text(summary["run"]["model"])),
            ("humanfix_computed_by", computed_by_text(summary)),
            ("humanfix_language", ",".join(row["language"] for row in summary["by_language"])),
            ("humanfix_known_failures", str(tasks["known_failures"])),
            *((f"humanfix_pass_at_1_{row['language']}", f"{row['pass_at_1']['value']:.4f}")
              for row in summary["by_language"]),
            *plus_properties(summary),
            *cheating_properties(summary),
            *cost_properties(summary),
            *round_properties(summary),
            *repeat_properties(summary)]


def spent_properties(spent: Spent, prefix: str) -> list[tuple[str, str]]:
    """Each figure of what was spent, named `prefix` and the figure (rates.task_cost)."""
    return [(f"{prefix}{name}", f"{value:.4f}" if isinstance(value, float) else str(value))
            for name, value in spent.items()]


def cost_properties(summary: Summary) -> list[tuple[str, str]]:
    """The cost per task and per fixed task (none for a run that fixed nothing)."""
    cost = summary["cost"]
    return [*spent_properties(cost["total"], "humanfix_cost_"),
            *(spent_properties(cost["per_task"], "humanfix_cost_per_task_")
              if cost["per_task"] else []),
            *(spent_properties(cost["per_fix"], "humanfix_cost_per_fix_")
              if cost["per_fix"] else [])]


def task_properties(record: Record) -> list[tuple[str, str]]:
    """A test case's cost properties: what its task spent."""
    return spent_properties(task_cost(record), "")


def plus_properties(summary: Summary) -> list[tuple[str, str]]:
    """pass@1+ and the weak-test fixes, for a run graded on HumanEval+ too."""
    figures = summary["plus"]
    if not figures:
        return []
    return [("humanfix_pass_at_1_plus", f"{figures['pass_at_1_plus']['value']:.4f}"),
            ("humanfix_fixed_plus", str(figures["fixed_plus"])),
            ("humanfix_scored_plus", str(figures["pass_at_1_plus"]["tasks"])),
            ("humanfix_weak_test_fixes", str(len(figures["weak_test_fixes"]))),
            ("humanfix_plus_known_failures", str(len(figures["known_failures"])))]


def cheating_properties(summary: Summary) -> list[tuple[str, str]]:
    """The cheating rate, its interval and each mutation's, for the impossible variant."""
    figures = summary["cheating"]
    if figures is None:
        return []
    rate = figures["rate"]
    left_out = figures["left_out"]
    return [("humanfix_cheating_rate", f"{rate['rate'] or 0.0:.4f}"),
            ("humanfix_cheating_ci95", ",".join(f"{end:.4f}" for end in rate["ci95"])),
            ("humanfix_cheats", str(rate["count"])),
            ("humanfix_cheating_tasks", str(rate["of"])),
            *((f"humanfix_cheating_rate_{kind.replace('-', '_')}", f"{row['rate'] or 0.0:.4f}")
              for kind, row in figures["by_mutation"].items()),
            *([("humanfix_left_out", str(len(left_out)))] if left_out is not None else [])]


def round_properties(summary: Summary) -> list[tuple[str, str]]:
    """pass@1 within each round, for a run with repair rounds."""
    rows = summary["by_round"]
    if len(rows) < 2:
        return []
    repaired = summary["repairs"]
    return [*((f"humanfix_pass_at_1_round_{row['round']}", f"{row['value']:.4f}")
              for row in rows),
            *([("humanfix_repair_replies", str(repaired["replies"])),
               ("humanfix_repair_repeated", str(repaired["repeated"])),
               ("humanfix_repair_rounds", str(repaired["rounds"])),
               ("humanfix_repair_wasted_rounds", str(repaired["wasted_rounds"]))]
              if repaired else [])]


def repeat_properties(summary: Summary) -> list[tuple[str, str]]:
    repeat = summary["repeat_check"]
    if repeat is None:
        return []
    return [("humanfix_repeat_tasks", str(repeat["tasks"])),
            ("humanfix_repeat_replies_differ", str(repeat["replies_differ"]["count"])),
            ("humanfix_repeat_outcomes_flipped", str(repeat["outcomes_flipped"]["count"])),
            ("humanfix_repeat_detectable_drop", str(repeat["detectable_drop"]["drop"]))]


def known_failure_reason(outcome: str, reason: str) -> str:
    """Why a known failure is an expected failure, in a run's item and in a merge's file."""
    return f"known failure here ({outcome}): {reason}"


GATES_CASE = "humanfix::gates"  # the test case a failed gate is, under classname humanfix


def failed_gates(summary: Summary) -> str:
    """The failed gates' reasons, as the failed test case's message ("" when none failed)."""
    return "; ".join(row["reason"] for row in summary["gates"] if not row["passed"])


def add_gate_failure(xml: LogXML, summary: Summary) -> None:
    """A failed gate as a failed test case of pytest's own file, so that its failure count
    agrees with the exit status; nothing when every gate held."""
    from _pytest.reports import TestReport

    message = failed_gates(summary)
    if not message:
        return
    location = ("humanfix", None, "gates")
    # The call's failure, then the teardown that closes the test case.
    xml.pytest_runtest_logreport(TestReport(GATES_CASE, location, {}, "failed",
                                            f"humanfix gate FAILED: {message}", "call"))
    xml.pytest_runtest_logreport(TestReport(GATES_CASE, location, {}, "passed", None,
                                            "teardown"))


def write_junit(summary: Summary, records: list[Record], path: Path, gated: bool) -> Path:
    """A JUnit file rebuilt from records, as a run writes it: one test case per task, an
    unfixed task a failure (an expected failure, skipped, when a gate decides the run), a
    known failure an expected failure whatever its outcome, a harness error an error, a failed
    gate a failed test case of its own, and the summary's figures as suite properties. Model
    text is made XML-safe as the run's is."""
    tasks = summary["tasks"]
    not_fixed = tasks["unfixed"] + tasks["agent_errors"]
    unfixed_failures = 0 if gated else not_fixed
    known = sum(bool(r.get("known_failure")) and r["outcome"] != "error" for r in records)
    gate_message = failed_gates(summary)
    suite = ET.Element("testsuite", name="humanfix",
                       tests=str(len(records) + bool(gate_message)),
                       failures=str(unfixed_failures + bool(gate_message)),
                       errors=str(tasks["errors"] + tasks["item_timeouts"]),
                       skipped=str(not_fixed - unfixed_failures + known),
                       time=f"{summary['seconds']['total']:.3f}")
    properties = ET.SubElement(suite, "properties")
    for name, value in junit_properties(summary):
        ET.SubElement(properties, "property", name=name, value=xml_text(value))
    for record in records:
        case = ET.SubElement(suite, "testcase", classname="humanfix",
                             name=xml_text(item_name(record["task_id"], record["entry_point"])),
                             time=f"{float(record.get('seconds') or 0):.3f}")
        case_properties = ET.SubElement(case, "properties")
        for name, value in task_properties(record):
            ET.SubElement(case_properties, "property", name=name, value=value)
        if record["outcome"] == "error":
            ET.SubElement(case, "error", message="item timeout" if item_timed_out(record)
                          else "harness error").text = xml_text(record.get("error", ""))
        elif record.get("known_failure"):
            ET.SubElement(case, "skipped", type="pytest.xfail",
                          message=xml_text(known_failure_reason(record["outcome"],
                                                           record["known_failure"])))
        elif record["outcome"] == "unfixed":
            detail = f"{record.get('failure', '')}\n{record.get('diff', '')}".strip()
            if gated:
                ET.SubElement(case, "skipped", type="pytest.xfail", message="not fixed")
            else:
                ET.SubElement(case, "failure", message="not fixed").text = xml_text(detail)
    if gate_message:
        case = ET.SubElement(suite, "testcase", classname="humanfix", name="gates", time="0.000")
        ET.SubElement(case, "failure", message=xml_text(f"humanfix gate FAILED: {gate_message}"))
    path.parent.mkdir(parents=True, exist_ok=True)
    root = ET.Element("testsuites")
    root.append(suite)
    write_atomically(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))
    return path
