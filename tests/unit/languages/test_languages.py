"""HumanEvalFix in JavaScript, Java, Go, C++ and Rust beside Python: each language assembles
BigCode's program and runs it inside the sandbox, compile step included, with the same layer,
limits and verdicts as Python."""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import control_receipts
import pytest

from pytest_humanfix.agent.suspicion import suspicion_flags
from pytest_humanfix.datafiles import HUMANEVALPACK
from pytest_humanfix.dataset import LANGUAGE_OF_PREFIX, Task, load_tasks
from pytest_humanfix.languages import LANGUAGES, NAMES, language, of_task_id, parse_languages
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import choose_layer
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.fresh import FreshSandbox
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox

COMPILED = ("js", "java", "go", "cpp", "rust")


def data_file(dataset: Path, name: str) -> Path:
    """The language's file beside the Python one (the `dataset` fixture writes each language's
    packaged file there: humanevalpack-<name>.jsonl)."""
    path = dataset.parent / f"humanevalpack-{name}.jsonl"
    if not path.is_file():  # never skip: missing data must turn the run red
        raise pytest.UsageError(f"the {name} dataset is not at {path}")
    return path


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict[str, list[Task]]:
    return {name: load_tasks(str(data_file(dataset, name))) for name in NAMES}


@pytest.fixture(scope="module")
def sandboxes():
    layer, _notes = choose_layer("auto")
    cgroups, _how = open_cgroups()
    made = {name: ToolchainSandbox(layer, language(name), Limits(timeout=language(name).timeout),
                                   cgroups) for name in COMPILED}
    made["python"] = FreshSandbox(layer, Limits(), cgroups)
    yield made
    for sandbox in made.values():
        sandbox.shutdown()


def run(sandbox: ToolchainSandbox, task: Task, body: str, variant: str = "tests"):
    lang = of_task_id(task.task_id)
    assert lang is not None
    return sandbox.run(lang.job(lang.prompt_base(task, variant) + body, task.test, task))


def test_every_language_is_registered_with_bigcodes_timeout():
    assert NAMES == ("python", "js", "java", "go", "cpp", "rust")
    assert {name: LANGUAGES[name].timeout for name in NAMES} == {
        "python": 10, "js": 10, "java": 10, "go": 20, "cpp": 60, "rust": 300}


def test_task_ids_name_their_language(tasks):
    for name in NAMES:
        assert {of_task_id(t.task_id) for t in tasks[name]} == {language(name)}
    assert of_task_id("Cobol/1") is None


@pytest.mark.parametrize(("text", "names"), [
    ("rust", ("rust",)), ("js, go,js", ("js", "go")), ("all", NAMES)])
def test_language_option_values(text, names):
    assert parse_languages(text) == names


def test_unknown_language_names_the_choices():
    with pytest.raises(ValueError, match="python, js, java, go, cpp, rust.*not cobol"):
        parse_languages("python,cobol")


def test_toolchains_are_installed_here():
    # CI installs every toolchain (scripts/setup): a missing one must fail, not skip.
    assert {name: LANGUAGES[name].missing() for name in NAMES} == {name: [] for name in NAMES}


@pytest.mark.parametrize("name", COMPILED)
def test_canonical_passes_and_buggy_fails_in_the_sandbox(name, tasks, sandboxes):
    task = tasks[name][0]
    fixed = run(sandboxes[name], task, task.canonical_solution)
    assert fixed.status == "passed", fixed.stderr
    assert fixed.layer == sandboxes[name].layer.name
    broken = run(sandboxes[name], task, task.buggy_solution)
    assert broken.status == "failed"
    assert broken.first_failure().startswith("TestError: ")


@pytest.mark.parametrize("name", ("java", "go", "cpp", "rust"))
def test_a_compiler_error_is_the_failure_shown(name, tasks, sandboxes):
    task = tasks[name][0]
    verdict = run(sandboxes[name], task, task.canonical_solution + "\nthis is not code\n")
    assert verdict.status == "failed"
    failure = verdict.first_failure()
    # The compiler's own words: its first error, which names the file or says "error".
    assert failure.startswith("CompileError: exit status 1: "), failure
    told = failure.removeprefix("CompileError: exit status 1: ")
    assert language(name).source_name in told or told.startswith("error"), failure


# An exit with status 0 put first in task 0's buggy function, as issue 44 measured it: the
# program ends before any check fails. Go's needs its import, which a whole-function reply has.
EXIT_FIRST = {"python": "    import os\n    os._exit(0)\n", "js": "  process.exit(0);\n",
              "java": "        System.exit(0);\n", "go": "    os.Exit(0)\n",
              "cpp": "    exit(0);\n", "rust": "    std::process::exit(0);\n"}


@pytest.mark.parametrize("name", NAMES)
def test_an_early_exit_with_status_zero_is_never_a_pass(name, tasks, sandboxes):
    task = tasks[name][0]
    lang = language(name)
    code = lang.prompt_base(task, "tests") + EXIT_FIRST[name] + task.buggy_solution
    if name == "go":
        code = 'import "os"\n' + code
    job = lang.job(code, task.test, task)
    verdict = sandboxes[name].run(job)
    assert verdict.status == "failed", verdict.stderr


# Proofs forged before an exit, as replies forged them when the tests ran in the candidate's
# program: with a guessed secret, and with one read where its test driver read it. Neither passes: the tests run in a process of their own and no
# secret exists; the flags still name what the second tried (docs/sandbox.md).
FORGED = {
    "guessed": ("  require('fs').writeFileSync('.humanfix-finished', '0'.repeat(32));\n"
                "  process.exit(0);\n"),
    "read": ("  require('fs').writeFileSync('.humanfix-finished', "
             "process.env.HUMANFIX_FINISHED);\n  process.exit(0);\n")}
PYTHON_FORGED = ("    import os, sys\n    frame = sys._getframe()\n"
                 "    while 'nonce' not in frame.f_locals:\n        frame = frame.f_back\n"
                 "    with open(frame.f_locals['done'], 'w') as proof:\n"
                 "        proof.write(frame.f_locals['nonce'])\n    os._exit(0)\n")


def test_a_forged_proof_is_no_proof_and_a_read_one_is_flagged(tasks, sandboxes):
    task, js = tasks["js"][0], language("js")
    guessed, read = (sandboxes["js"].run(js.job(
        js.prompt_base(task, "tests") + FORGED[how] + task.buggy_solution, task.test, task))
        for how in ("guessed", "read"))
    assert guessed.status == read.status == "failed"
    assert js.flags(FORGED["read"], task.test) == [
        "exit: process.exit", "environment: process.env", "around the tests: require('fs",
        "names the harness: humanfix", "names the harness: HUMANFIX_FINISHED"]


def test_a_python_fix_that_walks_the_frames_for_a_proof_finds_none_and_is_flagged(tasks,
                                                                                 sandboxes):
    """The tests run in another process: no frame of the candidate's holds a proof to forge."""
    task, python = tasks["python"][0], language("python")
    code = task.declaration + PYTHON_FORGED + task.buggy_solution
    verdict = sandboxes["python"].run(python.job(code, task.test, task))
    assert verdict.status == "failed" and "f_locals" in verdict.stderr, verdict.stderr
    flags = suspicion_flags(code, task.test)
    assert "frame walking: _getframe" in flags and "exit: _exit" in flags


def test_rust_tasks_that_need_rand_04_cannot_compile_here(tasks, sandboxes):
    by_id = {t.task_id: t for t in tasks["rust"]}
    for task_id, reason in language("rust").known_failures.items():
        verdict = run(sandboxes["rust"], by_id[task_id], by_id[task_id].canonical_solution)
        assert verdict.status == "failed" and "gen_range" in reason
        assert "SampleRange" in verdict.stderr, verdict.stderr[-2000:]


def test_a_candidate_cannot_write_into_the_workers_cache(tasks, sandboxes):
    """The cache is read-only inside the layer; Go's writable build cache is the execution's
    own copy, so what one candidate writes there no other one reads."""
    sandbox = sandboxes["go"]
    assert sandbox.layer.name == "bwrap"  # the process layer protects no file (README)
    cache = sandbox.cache
    task = tasks["go"][0]
    vandal = ('import "os"\n' + task.declaration + task.canonical_solution
              + "\nfunc init() {\n"
              + f'    if _, err := os.Create("{cache}/gocache/owned"); err != nil {{\n'
              + '        println("refused:", err.Error())\n    }\n'
              + '    own, _ := os.Create(os.Getenv("GOCACHE") + "/mine")\n'
              + "    own.Close()\n}\n")
    verdict = sandbox.run(language("go").job(vandal, task.test, task))
    assert "read-only file system" in verdict.stderr, verdict.stderr
    assert verdict.status == "passed"  # its own copy took the write
    assert not (cache / "gocache" / "owned").exists()
    assert not (cache / "gocache" / "mine").exists()


# Through pytest: the option, the dataset's language, items, records and reports.

def every_language(dataset: Path) -> str:
    """--humanfix-dataset for the shared files of every language."""
    return "--humanfix-dataset=" + str(dataset.parent / "humanevalpack-{language}.jsonl")


def test_a_local_file_names_its_language(humanfix_pytester, dataset, read_records):
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", f"--humanfix-dataset={data_file(dataset, 'go')}",
        "--humanfix-max", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*humanfix language go: runs here (limits 4 × each reference's "
                                 "time, 1 s to 20 s, tree-sitter check before execution and flags "
                                 "read from the syntax tree)*",
                                 "pass@1 = 100.0% (2/2)*timeout=20.0*language=go chat_stop=code]"])
    records = read_records()
    assert {(r["task_id"], r["language"]) for r in records} == {("Go/0", "go"), ("Go/1", "go")}
    assert {r["protocol"]["language"] for r in records} == {"go"}
    assert {r["time_limit"]["cap"] for r in records} == {20.0}
    assert all(r["time_limit"]["canonical_seconds"] for r in records)  # Go's are timed too


def test_a_file_of_another_language_is_a_usage_error(humanfix_pytester, dataset):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical",
                                         "--humanfix-language", "rust")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: --humanfix-dataset {dataset} holds python tasks (ids like Python/0), but "
        "--humanfix-language is rust: pass --humanfix-language python, or a dataset of rust*"])


def test_an_unknown_language_is_a_usage_error(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical",
                                         "--humanfix-language", "cobol")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --humanfix-language / humanfix_language: 'cobol' must "
                                 "be all or one or more of python, js, java, go, cpp, rust*"])


def test_several_languages_give_an_item_per_task_and_language(humanfix_pytester, dataset,
                                                              read_records):
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "buggy", "--humanfix-language", "python,js,rust",
        every_language(dataset), "--humanfix-max", "2", "-v")
    result.assert_outcomes(failed=6)
    result.stdout.fnmatch_lines(["*Python_0_has_close_elements FAILED*",
                                 "*JavaScript_1_separateParenGroups FAILED*",
                                 "*Rust_1_separate_paren_groups FAILED*"])
    assert {r["language"] for r in read_records()} == {"python", "js", "rust"}
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert [(row["language"], row["tasks"]["scored"], row["tasks"]["fixed"])
            for row in summary["by_language"]] == [("python", 2, 0), ("js", 2, 0), ("rust", 2, 0)]
    result.stdout.fnmatch_lines(
        ["language js: pass@1 = 0.0% (0/2)*timeout=10.0*language=js chat_stop=code]",
         "language rust: pass@1 = 0.0% (0/2)*timeout=300.0*language=rust chat_stop=code]"])
    markdown = (humanfix_pytester.path / "reports" / "summary.md").read_text()
    assert "## rust" in markdown and "## js" in markdown
    suite = ET.parse(humanfix_pytester.path / "reports" / "junit.xml").getroot().find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["humanfix_language"] == "python,js,rust"
    assert properties["humanfix_pass_at_1_rust"] == "0.0000"


def test_k_selects_a_language(humanfix_pytester, dataset, read_records):
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", "--humanfix-language", "js,rust",
        every_language(dataset), "--humanfix-max", "2", "-k", "rust")
    result.assert_outcomes(passed=2, deselected=2)
    assert {r["task_id"] for r in read_records()} == {"Rust/0", "Rust/1"}


def test_a_baseline_of_another_language_is_refused(humanfix_pytester, dataset):
    first = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "1",
                                        "--humanfix-jsonl=python.jsonl")
    first.assert_outcomes(passed=1)
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", f"--humanfix-dataset={data_file(dataset, 'js')}",
        "--humanfix-max", "1", "--humanfix-baseline=python.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --humanfix-baseline: */python.jsonl holds python results "
                                 "(Python/0) and this run evaluates js: a baseline compares only "
                                 "within its language*--humanfix-language js."])


def test_resume_keeps_languages_apart(humanfix_pytester, dataset):
    humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "1"
                                ).assert_outcomes(passed=1)
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", f"--humanfix-dataset={data_file(dataset, 'cpp')}",
        "--humanfix-max", "1", "--humanfix-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*record 1 (Python/0) is of language python, and this run "
                                 "evaluates cpp*"])


def test_a_missing_toolchain_errors_its_items_naming_the_package(humanfix_pytester, dataset,
                                                                 monkeypatch, read_records):
    monkeypatch.setattr(type(language("go")), "tools", (("no-such-go", "golang-go"),))
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", "--humanfix-language", "js,go",
        every_language(dataset), "--humanfix-max", "1")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*humanfix language go: cannot run: no-such-go not found (Debian: apt-get install "
        "golang-go)*",
        "*harness error on Go/0: the go toolchain is missing: no-such-go not found (Debian: "
        "apt-get install golang-go)*"])


def replay_rows(tasks: dict[str, list[Task]]) -> list[dict[str, str]]:
    """Per language: task 0 answered with prose and the whole fixed function, task 1 with only
    the fixed body, task 2 with code that does not compile (JS: does not parse)."""
    rows = []
    for name in COMPILED:
        lang = language(name)
        first, second, third = tasks[name][:3]
        rows += [
            {"task_id": first.task_id, "completion": "The bug is fixed here:\n\n```"
             f"{lang.fence}\n{first.canonical_code}```\n\nIt now passes the tests."},
            {"task_id": second.task_id,
             "completion": f"```{lang.fence}\n{second.canonical_solution}```"},
            {"task_id": third.task_id, "completion": f"```{lang.fence}\n{third.declaration}"
             f"    this line is no code at all\n{third.canonical_solution}```"}]
    return rows


def test_replayed_replies_are_scored_in_every_language(humanfix_pytester, dataset, tasks,
                                                        records_by_task):
    replies = humanfix_pytester.path / "replies.jsonl"
    rows = replay_rows(tasks)
    replies.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = humanfix_pytester.runpytest(
        "--humanfix-model", f"replay:{replies}", "--humanfix-language", ",".join(COMPILED),
        every_language(dataset), "--humanfix-task", ",".join(row["task_id"] for row in rows))
    result.assert_outcomes(passed=10, failed=5)
    got = records_by_task()
    for name in COMPILED:
        first, second, third = (got[t.task_id] for t in tasks[name][:3])
        assert (first["outcome"], second["outcome"], third["outcome"]) == \
            ("fixed", "fixed", "unfixed"), name
        # The check before execution (tree-sitter) or the compiler says why.
        attempt = third["attempts"][0]
        assert attempt["status"] in ("rejected", "failed"), name
        if attempt["status"] == "rejected":  # it names the line that does not parse
            assert "this line is no code at all" in attempt["check"], attempt["check"]
        else:
            assert third["failure"].startswith("CompileError"), third["failure"]


@pytest.mark.parametrize("prompt", ["completion", "primed"])
@pytest.mark.parametrize("name", COMPILED)
def test_completion_prompt_follows_bigcodes_post_processing(name, prompt, humanfix_pytester,
                                                            dataset, read_records):
    """A base model continues the prompt base, as a primed chat answer does; the continuation
    is cut at BigCode's stop words and where the braces close, and completed from the prompt
    base."""
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", "--humanfix-prompt", prompt,
        f"--humanfix-dataset={data_file(dataset, name)}", "--humanfix-max", "3")
    result.assert_outcomes(passed=3)
    assert {a["prompt"] for r in read_records() for a in r["attempts"]} == {prompt}


# The controls on the real data, through xdist: every task of each language.
@dataclass(frozen=True)
class Shown:
    """How a known failure's stated reason shows in the controls' records: each control's
    outcome (None: either, run to run) and what its failure says when it fails."""

    canonical: str | None
    buggy: str | None
    failure: str = ""  # a pattern the failure message matches


RAND_04 = Shown("unfixed", "unfixed", r"^CompileError: .*`\{integer\}: SampleRange<_>`")
# Measured: each control's record of each listed task (docs/languages.md, "Known failures").
SHOWN: dict[str, dict[str, Shown]] = {
    "js": {}, "java": {},
    "go": {"Go/27": Shown("unfixed", "unfixed",
                          r'^CompileError: .*imported and not used: "strings"'),
           # Map iteration order: either outcome, and a failing test, never a compile error.
           "Go/95": Shown(None, None, r"^TestError: .*--- FAIL: TestCheckDictCase")},
    # Any solution passes, the buggy one included.
    "cpp": {"CPP/23": Shown("fixed", "fixed")},
    "rust": {"Rust/32": RAND_04, "Rust/50": RAND_04},
}
KNOWN_FAILURES = {name: set(shown) for name, shown in SHOWN.items()}


def known_failures_not_shown(records: list[dict], model: str) -> list[str]:
    """Where a control's records do not show a listed known failure as its reason says: an
    entry that now passes (or fails otherwise) is stale, and is named with its fix."""
    problems = []
    for record in records:
        task_id, outcome = record["task_id"], record["outcome"]
        shown = SHOWN[record["language"]].get(task_id)
        if shown is None:
            if record.get("known_failure"):
                problems.append(f"{task_id} is marked a known failure and has no row here")
            continue
        where = f"languages/{record['language']}.py's known_failures and docs/languages.md"
        wanted = getattr(shown, model)
        if not record.get("known_failure"):
            problems.append(f"{task_id} is listed in {where} and its record is not marked")
        elif wanted is not None and outcome != wanted:
            problems.append(
                f"{task_id}: the {model} control was {outcome}, where its known failure "
                f"({record['known_failure']}) makes it {wanted}: the entry is stale; take it "
                f"out of {where}")
        elif outcome == "unfixed" and not re.search(shown.failure, record.get("failure", "")):
            problems.append(f"{task_id}: the {model} control fails otherwise than its known "
                            f"failure says ({record['known_failure']}): "
                            f"{record.get('failure', '')[:200]!r}")
    return problems


def test_known_failures_are_the_listed_ones():
    assert {name: set(language(name).known_failures) for name in COMPILED} == KNOWN_FAILURES


def control(task_id: str, outcome: str, failure: str = "", listed: bool = True) -> dict:
    name = of_task_id(task_id).name
    return {"task_id": task_id, "language": name, "outcome": outcome, "failure": failure,
            **({"known_failure": language(name).known_failures.get(task_id, "x")}
               if listed else {})}


def test_a_stale_or_otherwise_failing_known_failure_is_named():
    go27 = 'CompileError: exit status 2: ./main_test.go:9:5: imported and not used: "strings"'
    assert known_failures_not_shown([
        control("Go/27", "unfixed", go27), control("Go/95", "fixed"),
        control("Go/95", "unfixed", "TestError: exit status 1: --- FAIL: TestCheckDictCase"),
        control("CPP/23", "fixed"), control("Go/1", "fixed", listed=False)], "canonical") == []
    stale, otherwise, unmarked, unlisted = known_failures_not_shown([
        control("Go/27", "fixed"), control("Rust/32", "unfixed", "TestError: assert failed"),
        control("CPP/23", "fixed", listed=False), control("Go/1", "unfixed")], "buggy")
    assert stale.startswith("Go/27: the buggy control was fixed, where its known failure "
                            "(the prompt imports") and "the entry is stale" in stale
    assert stale.endswith("take it out of languages/go.py's known_failures and "
                          "docs/languages.md")
    assert otherwise.startswith("Rust/32: the buggy control fails otherwise")
    assert unmarked.startswith("CPP/23 is listed in languages/cpp.py's")
    assert unlisted == "Go/1 is marked a known failure and has no row here"


# The controls' sample in CI: every 8th task and the known failures (each must still show its
# reason). The buggy control always runs the sample: what the other 140-odd add is per task,
# whether its tests tell its bug apart, and depends only on the pinned data and the toolchains.
# The canonical control is the proof that every task's program is assembled and run right: it
# runs the sample only where its receipt (tests/control_receipts.py) says that all 164 passed
# with the same sources, data and toolchain as now, and all 164 otherwise. Both run all 164 on
# demand (docs/languages.md, "Known failures and the controls").
FULL_CONTROLS = "HUMANFIX_FULL_CONTROLS"
# Runs the canonical controls whole and, where all 164 pass, writes their receipts.
RECORD_CONTROLS = "HUMANFIX_RECORD_CONTROLS"
PREFIX = {name: prefix for prefix, name in LANGUAGE_OF_PREFIX.items()}


def control_sample(name: str) -> list[str]:
    every_8th = [f"{PREFIX[name]}/{index}" for index in range(0, 164, 8)]
    return every_8th + sorted(set(language(name).known_failures) - set(every_8th))


def why_whole(name: str, model: str, current: dict[str, str]) -> str:
    """Why the control runs all 164 tasks; '' where it runs `control_sample`. `current` is the
    canonical control's inputs (`control_receipts.inputs`); the buggy control reads none."""
    if os.environ.get(FULL_CONTROLS) == "1":
        return f"{FULL_CONTROLS}=1"
    if model == "buggy":
        return ""
    if os.environ.get(RECORD_CONTROLS) == "1":
        return f"{RECORD_CONTROLS}=1"
    return control_receipts.differs_from_receipt(name, current)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["canonical", "buggy"])
@pytest.mark.parametrize("name", COMPILED)
def test_controls_fix_every_task_or_none(name, model, humanfix_pytester, read_records,
                                         monkeypatch):
    """The package's own data (no dataset named): `control_sample` of the 164 tasks, or all of
    them where `why_whole` says so; a reference solution that cannot pass here is counted apart
    (an expected failure of pytest, a known failure of the summary), never scored. The buggy
    control runs under a 10 s limit: a buggy loop would otherwise run Rust's 300 s twice."""
    monkeypatch.delenv("HUMANFIX_DATASET")
    known = KNOWN_FAILURES[name]
    current = control_receipts.inputs(name) if model == "canonical" else {}
    whole = why_whole(name, model, current)
    asked = "1" in (os.environ.get(FULL_CONTROLS), os.environ.get(RECORD_CONTROLS))
    if whole and not asked:
        # A receipt that does not stand: CI's log says why it ran the whole, and what spares it.
        warnings.warn(f"the {name} canonical control runs all 164 tasks, since {whole}: record "
                      f"the receipts again (tests/README.md)", stacklevel=1)
    chosen = [] if whole else ["--humanfix-task", ",".join(control_sample(name))]
    total = 164 if whole else len(control_sample(name))
    limit = ["--humanfix-timeout", "10"] if model == "buggy" else []
    result = humanfix_pytester.runpytest(
        "--humanfix-model", model, "--humanfix-language", name, "-n", "2", *limit, *chosen)
    if model == "canonical":
        result.assert_outcomes(passed=total - len(known), xfailed=len(known))
    else:
        result.assert_outcomes(failed=total - len(known), xfailed=len(known))
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert summary["tasks"] == {
        "total": total, "scored": total - len(known), "errors": 0, "item_timeouts": 0,
        "retried": 0, "fixed": total - len(known) if model == "canonical" else 0,
        "unfixed": 0 if model == "canonical" else total - len(known), "agent_errors": 0,
        "flagged": 0, "known_failures": len(known)}
    assert {row["task_id"] for row in summary["known_failures"]} == known
    records = read_records()
    assert len({r["task_id"] for r in records}) == len(records) == total
    if not whole:
        assert {r["task_id"] for r in records} == set(control_sample(name))
    assert {r["language"] for r in records} == {name}
    assert {r["dataset"] for r in records} == {HUMANEVALPACK[name].label}
    # Each listed failure still fails for its stated reason, in this control's own records.
    assert known_failures_not_shown(records, model) == []
    if model == "canonical" and os.environ.get(RECORD_CONTROLS) == "1":
        # The inputs as they were before the run: a change made during it is not vouched for.
        assert control_receipts.inputs(name) == current, \
            "the sources or the toolchain changed during the run: run it again"
        print(f"recorded {control_receipts.record(name, current, summary['tasks'])}")


def test_a_receipt_stands_for_its_own_inputs_only(tmp_path, monkeypatch):
    """A receipt lets the canonical control run the sample only while every input is as it
    recorded; any file of the package, a tool's or a Debian package's version, the grammar,
    that differs, is new or is gone names itself and makes the control run whole."""
    monkeypatch.delenv(FULL_CONTROLS, raising=False)
    monkeypatch.delenv(RECORD_CONTROLS, raising=False)
    monkeypatch.setattr(control_receipts, "RECEIPTS", tmp_path / "receipts")
    current = control_receipts.inputs("go")
    assert {"source languages/go.py", "source session/items.py", "source models/base.py",
            "source data/humanevalpack-go.jsonl.gz", "tool go", "debian golang-1.19-go",
            "debian golang-1.19-src", "debian golang-github-stretchr-testify-dev",
            "debian libc6", "architecture", "grammar"} <= set(current)
    assert current["tool go"].startswith("go version go1.")
    assert why_whole("go", "canonical", current).endswith("go.json does not exist")
    control_receipts.record("go", current, {"total": 164})
    assert why_whole("go", "canonical", current) == ""
    assert why_whole("go", "buggy", {}) == ""
    # An edit to one file of a copy of the package is seen, and only it.
    copy = tmp_path / "package"
    shutil.copytree(control_receipts.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "languages" / "go.py").write_text((copy / "languages" / "go.py").read_text() + "#\n")
    edited = control_receipts.inputs("go", copy)
    assert control_receipts.changed(current, edited) == ["source languages/go.py"]
    assert why_whole("go", "canonical", edited).startswith(
        "source languages/go.py changed since go.json was recorded (")
    gone = {k: v for k, v in current.items() if k != "debian libc6"}
    assert why_whole("go", "canonical", {**gone, "source sandbox/new.py": "1" * 16}).startswith(
        "debian libc6, source sandbox/new.py changed since")
    monkeypatch.setenv(RECORD_CONTROLS, "1")
    assert why_whole("go", "canonical", current) == f"{RECORD_CONTROLS}=1"
    assert why_whole("go", "buggy", {}) == ""
    monkeypatch.setenv(FULL_CONTROLS, "1")
    assert why_whole("go", "buggy", {}) == f"{FULL_CONTROLS}=1"


def test_each_compiled_language_has_a_receipt_of_all_164():
    """The receipts are in the checkout, each of a full run that passed; whether they still
    stand is the control's own question (`why_whole`). A missing one fails here, so that CI does
    not run all 164 for want of a file."""
    for name in COMPILED:
        receipt = json.loads(control_receipts.receipt_path(name).read_text())
        assert receipt["language"] == name and receipt["tasks"]["total"] == 164
        assert receipt["tasks"]["fixed"] + receipt["tasks"]["known_failures"] == 164
        assert f"source data/humanevalpack-{name}.jsonl.gz" in receipt["inputs"]


def test_go_program_imports_what_the_code_uses_once(tasks):
    task = next(t for t in tasks["go"] if t.task_id == "Go/10")  # uses strings, has a helper
    go = language("go")
    bare = go.program(task.declaration + task.canonical_solution, task.test, task)
    assert bare.startswith("package main\n") and bare.count('"strings"') == 1
    # Code that imports it itself gets no second import (Go refuses duplicates).
    own = go.program(task.prompt + task.canonical_solution, task.test, task)
    assert own.count('"strings"') == 1 and own.count("package main") == 1


def test_rust_program_completes_main_and_use_lines(tasks):
    task = tasks["rust"][0]
    rust = language("rust")
    program = rust.program("fn has_close_elements(numbers:Vec<f32>, threshold: f32) -> bool{\n"
                           + task.canonical_solution, task.test, task)
    assert program.startswith("fn main(){}\n") and program.count("fn main()") == 1
    assert "use rand::Rng;" in program and program.count("fn has_close_elements(") == 1


def test_cpp_program_has_the_include_helper_and_no_model_main(tasks):
    task = tasks["cpp"][0]
    program = language("cpp").program(task.declaration + task.canonical_solution
                                      + "int main(){ return 1; }\n", task.test, task)
    assert program.startswith("using namespace std;\n#include<stdlib.h>")
    assert "#include<boost/any.hpp>" in program and program.count("int main") == 1


@pytest.mark.parametrize("name", COMPILED)
def test_docs_variant_continues_the_prompt(name, humanfix_pytester, dataset, read_records):
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", "--humanfix-variant", "docs",
        f"--humanfix-dataset={data_file(dataset, name)}", "--humanfix-max", "2")
    result.assert_outcomes(passed=2)
    assert {r["protocol"]["variant"] for r in read_records()} == {"docs"}


def test_the_language_is_an_ini_key_too(humanfix_pytester, dataset, read_records):
    files = dataset.parent / "humanevalpack-{language}.jsonl"
    humanfix_pytester.makeini("[pytest]\naddopts = -p no:randomly\n"
                              f"humanfix_language = cpp\nhumanfix_dataset = {files}\n")
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "1")
    result.assert_outcomes(passed=1)
    assert [r["task_id"] for r in read_records()] == ["CPP/0"]
