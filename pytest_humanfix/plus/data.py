"""HumanEval+'s data (by default the copy in the package, datafiles.py), read in EvalPlus's
OriginFmt (the form the Hub's `evalplus/humanevalplus` serves): each task's inputs with the
outputs EvalPlus's reference gives, so nothing is computed before a run; six tasks (Python/14,
15, 83, 100, 130, 139) hold no outputs, and their `ref_func` computes each at run time, as
EvalPlus's own check does (docs/trust.md#humanevalfix-humanfix-tests-plus)."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..datafiles import HUMANEVAL_PLUS, PACKAGED, DataFileError
from ..dataset import DatasetError, Task
from ..sandbox.environment import Job, Side
from ..sandbox.program import PRELUDE, PROGRAM_NAME, TESTS_NAME, candidate_program
from ..settings import HUB_PLUS_DATASET
from .checker import CHECKER, FIND_ZERO_ORACLE
from .limits import MIN_TIME_LIMIT

PLUS_SUFFIXES = (".jsonl", ".jsonl.gz")


class PlusDataError(DatasetError):
    """The HumanEval+ data cannot be used with this run (a usage error)."""


@dataclass(frozen=True)
class PlusTask:
    """One HumanEval+ task, ready to grade a HumanEvalFix candidate with."""

    task_id: str        # HumanEvalFix's: Python/N
    entry_point: str
    atol: float
    helpers: str        # the test's own definitions (ref_func, _poly), at top level
    inputs: str         # a Python literal: the list of argument lists
    results: str | None  # a Python literal: the expected outputs; None: ref_func computes them
    reference: str      # EvalPlus's own solution (prompt + canonical), for calibration

    def program(self, code: str, limits: Sequence[float] | None) -> Job:
        """The execution that grades `code` on every HumanEval+ input, each under its CPU
        seconds in `limits` (an input past them under MIN_TIME_LIMIT); without limits, the
        reference's calibration run, which gives its seconds on each input."""
        reference = "ref_func" if self.results is None else "None"
        oracle = FIND_ZERO_ORACLE if self.entry_point == "find_zero" else "None"
        # The candidate is bound before the test's helpers, which could shadow its name.
        tests = (PRELUDE + "\n_humanfix_plus_candidate = " + self.entry_point + "\n"
                 + CHECKER + "\n" + self.helpers + "\n"
                 + f"_humanfix_plus_inputs = {self.inputs}\n"
                 + f"_humanfix_plus_results = {self.results or 'None'}\n"
                 + f"_humanfix_plus_check(_humanfix_plus_candidate, {self.entry_point!r}, "
                 f"_humanfix_plus_inputs, _humanfix_plus_results, {self.atol!r}, "
                 f"{reference}, {oracle}, {limits if limits is None else list(limits)}, "
                 f"{MIN_TIME_LIMIT!r})\n")
        return Job(Side(candidate_program(code), PROGRAM_NAME), Side(tests, TESTS_NAME),
                   self.entry_point)

    @property
    def reference_program(self) -> Job:
        return self.program(self.reference, None)


def fix_id(plus_id: str) -> str:
    """HumanEvalFix's id of a HumanEval(+) task: HumanEval/N is Python/N."""
    prefix, _, number = plus_id.partition("/")
    return f"Python/{number}" if prefix == "HumanEval" else plus_id


def _atol(entry_point: str, test: str) -> float:
    """The task's atol: OriginFmt's loop passes 0 (EvalPlus then uses 1e-6 for floats, as the
    native form's 1e-6 for HumanEval/2 and /4 does), except find_zero's oracle, whose bound
    (the native form's atol, 1e-4) is written in its assert."""
    if entry_point == "find_zero":
        return float(test.rsplit("<=", 1)[1].strip())
    return 0.0


def task_from_row(row: dict[str, Any], source: str) -> PlusTask:
    missing = [key for key in ("task_id", "entry_point", "test", "prompt",
                               "canonical_solution") if not isinstance(row.get(key), str)]
    if "plus_input" in row:
        raise PlusDataError(
            f"--humanfix-plus-dataset {source}: this is EvalPlus's native form (inputs "
            "without outputs); pass the OriginFmt file (humanevalplus-*-originfmt.jsonl.gz) "
            f"or the Hub id {HUB_PLUS_DATASET}.")
    if missing:
        raise PlusDataError(f"--humanfix-plus-dataset {source}: row {row.get('task_id', '?')} "
                            f"lacks {', '.join(missing)}.")
    lines = row["test"].splitlines()
    inputs = next((line.split("=", 1)[1].strip() for line in lines
                   if line.startswith("    inputs = ")), None)
    results = next((line.split("=", 1)[1].strip() for line in lines
                    if line.startswith("    results = ")), None)
    # find_zero's test has no `assertion`: its definitions start at the top.
    start = next((i for i, line in enumerate(lines) if line.startswith("def assertion(")), -1)
    end = next((i for i, line in enumerate(lines) if line.startswith("def check(")), -1)
    # The test's own definitions follow `assertion`: the first line back at column 0.
    body = next((i for i in range(start + 1, end) if lines[i][:1] not in ("", " ", "\t")), end)
    helpers = "\n".join(lines[body:end])
    if inputs is None or end < 0 or (results is None and "def ref_func" not in helpers):
        raise PlusDataError(f"--humanfix-plus-dataset {source}: the test of {row['task_id']} "
                            "is not EvalPlus's OriginFmt check (inputs, results, assertion).")
    return PlusTask(task_id=fix_id(row["task_id"]), entry_point=row["entry_point"],
                    atol=_atol(row["entry_point"], row["test"]), helpers=helpers,
                    inputs=inputs, results=results,
                    reference=row["prompt"] + row["canonical_solution"])


def _read_rows(source: str) -> list[dict[str, Any]]:
    if source == PACKAGED:
        try:
            text = HUMANEVAL_PLUS.read_text()
        except DataFileError as exc:
            raise PlusDataError(str(exc)) from None
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    path = Path(source)
    if source.endswith(PLUS_SUFFIXES) or path.exists():
        if not path.is_file():
            raise PlusDataError(f"--humanfix-plus-dataset {source}: no such file.")
        if not source.endswith(PLUS_SUFFIXES):
            raise PlusDataError(f"--humanfix-plus-dataset {source}: use a .jsonl or .jsonl.gz "
                                "file.")
        opener = gzip.open if source.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as exc:
            raise PlusDataError(f"--humanfix-plus-dataset {source}: unreadable "
                                f"({type(exc).__name__}: {exc}).") from None
    try:
        import datasets
    except ImportError:
        raise PlusDataError(f"--humanfix-plus-dataset {source}: loading from the Hub needs the "
                            "`datasets` package; or pass a local .jsonl.gz file.") from None
    try:
        return list(datasets.load_dataset(source, split="test"))
    except Exception as exc:
        raise PlusDataError(f"--humanfix-plus-dataset {source}: could not load it from the Hub "
                            f"({type(exc).__name__}: {exc}); pass a local .jsonl.gz file."
                            ) from None


@dataclass(frozen=True)
class PlusData:
    source: str
    tasks: dict[str, PlusTask]  # by HumanEvalFix id
    hash: str


def load_plus(source: str, fix_tasks: Sequence[Task]) -> PlusData:
    """HumanEval+ for the run's HumanEvalFix tasks; PlusDataError (one line) when its task ids
    or entry points do not match theirs."""
    rows = _read_rows(source)
    tasks = {}
    for row in rows:
        task = task_from_row(row, source)
        tasks[task.task_id] = task
    for fix in fix_tasks:
        plus = tasks.get(fix.task_id)
        if plus is None:
            raise PlusDataError(f"--humanfix-plus-dataset {source} has no task for "
                                f"{fix.task_id} (HumanEval/{fix.number}): it is not HumanEval+.")
        if plus.entry_point != fix.entry_point:
            raise PlusDataError(f"--humanfix-plus-dataset {source}: {fix.task_id}'s entry point "
                                f"is {plus.entry_point!r}, HumanEvalFix's {fix.entry_point!r}.")
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([row["task_id"], row["entry_point"], row["test"],
                                  row["canonical_solution"]]).encode())
    return PlusData(source, tasks, digest.hexdigest()[:16])
