"""The terminal's end-of-run lines, rendered from the one summary (`summary.build`); summary.md
and pytest-html reuse them. What each line says: docs/reports.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..protocol import RecordedProtocol
from ..records import Record
from .cheating import mutation_text
from .gates import noise_note
from .sections import (
    BaselineFigures,
    BugTypeRow,
    Cost,
    Rate,
    Repairs,
    RepeatFigures,
    RoundRate,
    Share,
    Spent,
    Summary,
    TaskCounts,
    model_text,
)
from .stats import pct
from .summary import computed_by_text

# A passing reply's diff as the terminal shows it; summary.json and summary.md keep it whole.
DIFF_LINES = 30


def interval(rate: Rate) -> str:
    low, high = rate["ci95"]
    return f"{pct(rate['value'])} [{pct(low)}, {pct(high)}]"


def pass_line(summary: Summary) -> str:
    """The headline: pass@1 as a percentage, a fraction and a ratio, and the protocol."""
    return rate_line(summary["pass_at_1"], summary["tasks"], summary["samples"],
                     summary["run"]["protocol"])


def rate_line(rate: Rate, tasks: TaskCounts, samples: int,
              protocol: RecordedProtocol | None) -> str:
    if samples > 1:
        line = (f"pass@1 = {pct(rate['value'])} (unbiased over {samples} samples of "
                f"{tasks['scored']} tasks; first sample fixed {tasks['fixed']}/{tasks['scored']})")
    else:
        line = f"pass@1 = {pct(rate['value'])} ({tasks['fixed']}/{tasks['scored']})"
    line += f" = {rate['value']:.4f}"
    if protocol:
        line += "  [" + " ".join(f"{k}={v}" for k, v in protocol.items()) + "]"
    return line


def summary_lines(summary: Summary) -> list[str]:
    """Model, pass@1, counts, the per-bug-type table (one per language when there are
    several) and the wall time."""
    tasks, rows = summary["tasks"], summary["by_bug_type"]
    lines = [f"model: {model_text(summary['run']['model'])}",
             f"computed by: {computed_by_text(summary)}", pass_line(summary),
             *round_lines(summary),
             f"fixed {tasks['fixed']}, not fixed {tasks['unfixed']}, "
             + (f"agent errors {tasks['agent_errors']} (the agent raised; scored not fixed), "
                if tasks["agent_errors"] else "")
             + f"errors {tasks['errors']} (harness faults, scored not fixed)"
             + (f", item timeouts {tasks['item_timeouts']} (scored not fixed)"
                if tasks["item_timeouts"] else "")]
    lines.extend(coverage_lines(summary))
    lines.extend(error_lines(summary))
    lines.extend(item_timeout_lines(summary))
    lines.extend(agent_error_lines(summary))
    lines.extend(flagged_lines(summary))
    lines.extend(known_failure_lines(summary))
    lines.extend(plus_lines(summary))
    lines.extend(cheating_lines(summary))
    languages = summary["by_language"]
    if len(languages) > 1:
        for language in languages:
            lines.append(f"language {language['language']}: " + rate_line(
                language["pass_at_1"], language["tasks"], summary["samples"],
                language["protocol"]))
            lines.extend(bug_type_table(language["by_bug_type"]))
    else:
        lines.extend(bug_type_table(rows))
    wall = summary["run"]["wall_seconds"]
    lines.append(f"wall time: {wall or 0.0:.1f} s")
    return lines + detail_lines(summary)


def round_lines(summary: Summary) -> list[str]:
    """pass@1 within each repair round, for a run with rounds: its last figure is pass@1."""
    rows = summary["by_round"]
    if len(rows) < 2:
        return []
    lines = ["pass@1 by round: " + by_round_text(rows)]
    repaired = summary["repairs"]
    if repaired:
        lines.append(repairs_text(repaired))
    return lines


def repairs_text(repaired: Repairs) -> str:
    return (f"repair replies: {repaired['replies']}, {repaired['repeated']} repeated failed code "
            f"({pct(repaired['repeat_rate'])}); rounds: {repaired['rounds']}, "
            f"{repaired['wasted_rounds']} ended on a repeat ({pct(repaired['wasted_rate'])})")


def by_round_text(rows: list[RoundRate]) -> str:
    return " \u00b7 ".join(f"r{row['round']} {pct(row['value'])}" for row in rows)


def error_lines(summary: Summary) -> list[str]:
    """The tasks a harness fault ended, after their retry: scored not fixed, so a fault can
    only lower pass@1; and how many retries recovered a task."""
    tasks, rows = summary["tasks"], summary["errors"]
    recovered = tasks["retried"] - sum(row["retried"] for row in rows)
    lines = [f"WARNING: {len(rows)} task(s) ended in a harness error, scored not fixed: "
             + ", ".join(row["task_id"] + (" (retried)" if row["retried"] else "")
                         for row in rows)] if rows else []
    if recovered:
        lines.append(f"retried after a harness error: {tasks['retried']} task(s), "
                     f"{recovered} finished on the retry")
    return lines


def item_timeout_lines(summary: Summary) -> list[str]:
    """Tasks the item timeout stopped, apart from harness errors: scored not fixed."""
    stopped = summary["item_timeouts"]
    if not stopped:
        return []
    return [f"WARNING: {len(stopped)} task(s) stopped by the item timeout (generation "
            "excluded), scored not fixed: " + ", ".join(row["task_id"] for row in stopped)
            + "; raise --humanfix-item-timeout"]


def agent_error_lines(summary: Summary) -> list[str]:
    """The tasks a brought agent raised on, each with what it raised: no candidate there."""
    rows = summary["agent_errors"]
    if not rows:
        return []
    return [f"WARNING: the agent raised on {len(rows)} of {summary['tasks']['scored']} scored "
            "task(s), scored not fixed (no candidate):",
            *(f"  {row['task_id']}: {row['type']}: {row['message']}" for row in rows)]


def bug_type_table(rows: list[BugTypeRow]) -> list[str]:
    if not rows:
        return []
    width = max(len("bug type"), *(len(r["bug_type"]) for r in rows))
    lines = [f"{'bug type':<{width}}  fixed  scored  errors  pass@1"]
    for row in rows:
        lines.append(f"{row['bug_type']:<{width}}  {row['fixed']:>5}  {row['scored']:>6}  "
                     f"{row['errors']:>6}  {100 * row['pass_at_1']['value']:5.1f}%")
    return lines


def known_failure_lines(summary: Summary) -> list[str]:
    """Tasks whose reference solution cannot pass here: counted apart, with the reason."""
    known = summary["known_failures"]
    if not known:
        return []
    return [f"known failures: {len(known)} task(s) whose reference solution cannot pass on "
            "this machine's toolchain, not in pass@1 (docs/languages.md):",
            *(f"  {row['task_id']} ({row['outcome']}): {row['reason']}" for row in known)]


def plus_lines(summary: Summary) -> list[str]:
    """HumanEvalFix+: pass@1 on the hidden tests beside pass@1+ on HumanEval+, the weak-test
    fixes and the tasks whose reference solution fails HumanEval+."""
    figures = summary["plus"]
    if not figures:
        return []
    plus_rate, weak = figures["pass_at_1_plus"], figures["weak_test_fixes"]
    lines = [f"HumanEval+: pass@1 {interval(figures['pass_at_1'])} on the hidden tests, "
             f"pass@1+ {interval(plus_rate)} ({figures['fixed_plus']}/{plus_rate['tasks']} "
             "fixed on HumanEval+ too)",
             f"weak-test fixes (pass the hidden tests, fail HumanEval+): {len(weak)}",
             *(f"  {row['task_id']}: {row['failure'].splitlines()[0] if row['failure'] else ''}"
               for row in weak)]
    known = figures["known_failures"]
    if known:
        lines.append(f"HumanEval+ known failures: {len(known)} task(s) whose HumanEvalFix "
                     "reference solution fails HumanEval+, not in pass@1+:")
        lines += [f"  {row['task_id']} ({row['outcome']}, on HumanEval+ {row['plus_outcome']}): "
                  f"{row['reason']}" for row in known]
    return lines


def cheating_lines(summary: Summary) -> list[str]:
    """--humanfix-variant impossible: the cheating rate, each mutation's, each passing reply
    with its flags and diff, and the tasks left out of the variant (reporting/cheating.py)."""
    found = summary["cheating"]
    if found is None:
        return []
    lines = ["cheating rate (passes of tests no correct function passes): "
             + share(found["rate"])
             + "".join(f"; {kind} {share(row)}" for kind, row in found["by_mutation"].items())]
    if len(found["by_language"]) > 1:
        lines.append("  by language: " + "; ".join(
            f"{name} {share(row)}" for name, row in found["by_language"].items()))
    for row in found["passes"]:
        lines.append(f"  passed {row['task_id']} ({mutation_text(row)}; {row['outcome']}"
                     + (f", sample {row['sample'] + 1}" if row["sample"] else "")
                     + "): flags: " + ("; ".join(row["flags"]) or "none"))
        shown = (row["diff"] or row["code"]).splitlines()
        lines += [f"    {line}" for line in shown[:DIFF_LINES]]
        if len(shown) > DIFF_LINES:
            lines.append(f"    [{len(shown) - DIFF_LINES} more lines in summary.json]")
    left_out = found["left_out"]
    if left_out is None:
        lines.append("left out of the impossible variant: not known from the records alone")
    elif left_out:
        lines.append(f"left out of the impossible variant: {len(left_out)} task(s) with no "
                     "expected value to change:")
        lines += [f"  {row['task_id']}: {row['reason']}" for row in left_out]
    return lines


def flagged_lines(summary: Summary) -> list[str]:
    """The fixes that passed in a way that may defeat the tests, and how each is scored."""
    flagged = summary["flagged"]
    strict = bool((summary["run"]["protocol"] or {}).get("strict"))
    scored = ("scored not fixed (--humanfix-strict)" if strict else
              "still counted in pass@1; --humanfix-strict scores them not fixed")
    lines = [f"fixed, flagged: {summary['tasks']['flagged']} ({scored})"]
    for row in flagged:
        lines.append(f"  flagged {row['task_id']}: " + "; ".join(row["flags"]))
    return lines


def coverage_lines(summary: Summary) -> list[str]:
    """Whether the figure covers the selection, and how many tasks were run again."""
    covered = summary["coverage"]
    lines = []
    if covered["subset"]:
        lines.append(f"WARNING: pass@1 is over a subset: {covered['run']} of "
                     f"{covered['selected']} selected task(s) ran; not run: "
                     + "; ".join(covered["why"]))
    if covered["reruns"]:
        lines.append(f"{covered['reruns']} task(s) were run again (reruns); each counts once, "
                     "by its last run")
    return lines


def detail_lines(summary: Summary) -> list[str]:
    """What the terminal summary adds to the pass@1 line: interval, pass@k, tokens, slowest,
    the baseline comparison."""
    rate = summary["pass_at_1"]
    lines = [f"pass@1 {interval(rate)} (95% Wilson interval over {rate['tasks']} tasks"
             + (f", unbiased over {summary['samples']} samples" if summary["samples"] > 1 else "")
             + ")"]
    if summary["samples"] > 1:
        lines.append("  ".join(f"pass@{k} = {pct(v)}" for k, v in summary["pass_at_k"].items()))
    tokens, seconds = summary["tokens"], summary["seconds"]
    timeouts = summary["timeouts"]
    if timeouts["timed_out"] or timeouts["rerun"]:
        lines.append(f"timeouts: {timeouts['timed_out']} graded run(s) timed out; "
                     f"{timeouts['rerun']} re-run under a larger limit after a first timeout, "
                     f"{timeouts['rerun_finished']} of them then finished in time "
                     f"(largest limit {timeouts['largest_limit']} s)")
    if timeouts["lost"]:
        lines.append(f"sandbox: {timeouts['lost']} graded execution(s) lost before the program "
                     "started (the process killed from outside) and run once more")
    lines.append(f"tokens: {tokens['total']} ({tokens['prompt']} prompt, {tokens['completion']} "
                 f"completion), {tokens['per_task']['mean']:.0f} per task; seconds: "
                 f"{seconds['total']:.1f} in tasks, {seconds['per_task']['mean']:.2f} per task")
    lines.append(cost_text(summary["cost"]))
    if summary["slowest"]:
        lines.append("slowest: " + ", ".join(f"{s['task_id']} {float(s['seconds'] or 0):.2f}s"
                                             for s in summary["slowest"]))
    lines.extend(server_lines(summary))
    lines.extend(repeat_lines(summary["repeat_check"]))
    if summary["baseline"]:
        lines.append(baseline_change_line(summary["baseline"]))
    lines.extend(baseline_lines(summary["baseline"]))
    return lines


def spent_text(spent: Spent) -> str:
    return (f"{spent['tokens']:,.0f} tokens ({spent['prompt_tokens']:,.0f} prompt, "
            f"{spent['completion_tokens']:,.0f} completion), {spent['replies']:.1f} replies, "
            f"{spent['sandbox_runs']:.1f} sandbox runs, {spent['seconds']:.1f} s")


def cost_text(cost: Cost) -> str:
    """The run's cost per task and per fixed task, as the terminal and summary.md say it."""
    per_task, per_fix = cost["per_task"], cost["per_fix"]
    return ("cost per task: " + (spent_text(per_task) if per_task else "no task")
            + "; per fixed task: " + (spent_text(per_fix) if per_fix else "no task fixed"))


def server_lines(summary: Summary) -> list[str]:
    """A fleet's share of the requests, and each server taken out of rotation."""
    lines = []
    if len(summary["servers"]) > 1 or summary["servers_out"]:
        lines.append("servers: " + ", ".join(
            f"{url} {row['requests']} request(s), {row['seconds']['mean']:.2f}s mean"
            for url, row in summary["servers"].items()))
    lines += [f"server out of rotation: {row['base_url']}: {row['reason']}"
              for row in summary["servers_out"]]
    lines += [f"server limit: {line}" for line in summary["server_limits"]]
    return lines


def share(row: Share) -> str:
    low, high = row["ci95"]
    return f"{row['count']}/{row['of']} ({pct(row['rate'])} [{pct(low)}, {pct(high)}])"


def repeat_lines(repeat: RepeatFigures | None) -> list[str]:
    """--humanfix-repeat-check: replies that differed, outcomes that flipped, and why not."""
    if repeat is None:
        return []
    lines = [f"repeat check ({', '.join(repeat['engines']) or 'none'}): replies differ "
             f"{share(repeat['replies_differ'])}, outcomes flip "
             f"{share(repeat['outcomes_flipped'])}"
             + (f": {', '.join(repeat['flipped_tasks'])}" if repeat["flipped_tasks"] else ""),
             noise_note(repeat)]
    lines += [f"repeat check failed on {row['task_id']}: {row['error']}"
              for row in repeat["errors"]]
    return lines


def baseline_change_line(baseline: BaselineFigures) -> str:
    """The baseline's pass@1 over the paired tasks, this run's change against it over them
    with the paired test's p-value, and what the baseline was."""
    runs = ", ".join(baseline["run_ids"]) or "not recorded"
    return (f"against the baseline: pass@1 {interval(baseline['pass_at_1'])} there over the "
            f"{baseline['pass_at_1']['tasks']} paired task(s), change "
            f"{100 * baseline['change']:+.1f} points on them (exact McNemar one-sided "
            f"p={baseline['p_value']:.4g}); baseline model {model_text(baseline['model'])}, "
            f"agent {baseline['agent']}, run {runs}, computed by {baseline['computed_by']}")


def baseline_lines(baseline: BaselineFigures | None) -> list[str]:
    if baseline is None:
        return []
    return [
        f"baseline: {baseline['paired']} paired tasks, {len(baseline['regressions'])} "
        f"regression(s), {len(baseline['improvements'])} improvement(s), "
        f"{len(baseline['unpaired'])} unpaired; "
        f"exact McNemar one-sided p={baseline['p_value']:.4g}",
        "regressions: " + (", ".join(baseline["regressions"]) or "none"),
        "improvements: " + (", ".join(baseline["improvements"]) or "none"),
    ]




def model_error_lines(records: Iterable[Record]) -> list[str]:
    """One line per distinct load failure, however many tasks and workers it stopped; a
    brought agent that never asks the model is not stopped by it, and is told so."""
    records = list(records)
    failures = Counter(r["model_error"] for r in records
                       if r.get("model_error") and r["outcome"] == "error")
    lines = [f"MODEL LOAD FAILED ({count} task(s) errored without retrying): {error}"
             for error, count in failures.items()]
    unasked = {str(r["model_error"]) for r in records
               if r.get("model_error") and r["model_error"] not in failures}
    return lines + [f"WARNING: {error}; no task asked the model (the agent answered without "
                    "ctx.model), so none errored" for error in sorted(unasked)]
