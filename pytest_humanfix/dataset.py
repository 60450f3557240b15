"""HumanEvalFix tasks: loading, validating and selecting them, from the copy shipped in the
package (datafiles.py), a local JSONL file or the Hub (docs/getting-started.md#the-dataset;
several languages: docs/languages.md)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .datafiles import PACKAGED, DataFileError, humanevalpack
from .jsonl import JsonlError, read_jsonl

HUB_DATASET = "bigcode/humanevalpack"
# The Hub dataset's commit that --humanfix-dataset-revision pins by default: the one other
# public harnesses download from. Its rows were not compared here with the packaged copy's.
HUB_REVISION = "9a41762f73a8cb23bb5811b73d5aab164efcf378"

# The fields every row must have, from the shared file and the Hub's `python` config alike.
REQUIRED_FIELDS = (
    'task_id', 'prompt', 'declaration', 'buggy_solution', 'canonical_solution', 'test',
    'entry_point', 'bug_type',
)
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")
# What a task id's prefix says of its language (HumanEvalPack's ids, e.g. `Rust/3`), by the
# names BigCode gives the languages, which are also the Hub's configs.
LANGUAGE_OF_PREFIX = {"Python": "python", "JavaScript": "js", "Java": "java", "Go": "go",
                      "CPP": "cpp", "Rust": "rust"}
# In a --humanfix-dataset path, stands for each language of the run.
LANGUAGE_FIELD = "{language}"


class DatasetError(Exception):
    """The dataset cannot be used; the message names the source and what to fix."""


@dataclass(frozen=True)
class Task:
    task_id: str
    entry_point: str
    bug_type: str
    prompt: str
    declaration: str
    buggy_solution: str
    canonical_solution: str
    test: str
    example_test: str = ""
    failure_symptoms: str = ""
    signature: str = ""
    docstring: str = ""
    instruction: str = ""
    imports: str = ""
    test_setup: str = ""
    # From the task id; not part of `content_hash`, which the task id already covers.
    language: str = "python"

    @property
    def number(self) -> int:
        return task_number(self.task_id)

    @property
    def buggy_code(self) -> str:
        return self.declaration + self.buggy_solution

    @property
    def canonical_code(self) -> str:
        return self.declaration + self.canonical_solution

    @property
    def bug_slug(self) -> str:
        return slug(self.bug_type)

    @property
    def item_name(self) -> str:
        return item_name(self.task_id, self.entry_point)


def task_number(task_id: str) -> int:
    """The number a task id ends with (Python/12: 12), -1 if none."""
    match = re.search(r"(\d+)$", task_id)
    return int(match.group(1)) if match else -1


def item_name(task_id: str, entry_point: str) -> str:
    """The pytest item's name of a task (also the JUnit test name a merge rebuilds)."""
    return f"{task_id.replace('/', '_')}_{entry_point}"


def id_language(task_id: str) -> str | None:
    """The language a task id names (`Rust/3`: rust), None for another prefix."""
    return LANGUAGE_OF_PREFIX.get(task_id.split("/", 1)[0])


def slug(text: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()


_TASK_FIELDS = {f.name for f in fields(Task)}


def task_from_row(row: dict[str, Any], source: str, index: int) -> Task:
    """Build a Task from one dataset row, naming source, row and field when one is missing."""
    for name in REQUIRED_FIELDS:
        if not isinstance(row.get(name), str):
            problem = ("is missing" if name not in row
                       else f"is {type(row[name]).__name__}, not text")
            ident = row.get("task_id", "?")
            raise DatasetError(
                f"{source}: row {index + 1} (task_id {ident!r}): field {name!r} {problem}. "
                f"Every row needs {', '.join(REQUIRED_FIELDS)}."
            )
    values = {k: v for k, v in row.items() if k in _TASK_FIELDS and isinstance(v, str)}
    # The Hub calls the per-task imports `import`, a Python keyword.
    if isinstance(row.get("import"), str):
        values["imports"] = row["import"]
    values["language"] = id_language(values["task_id"]) or "python"
    return Task(**values)


def _read_local(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        try:
            return read_jsonl(path, bad_lines="raise")
        except JsonlError as exc:
            raise DatasetError(f"{exc}; every line of a dataset file must be one row.") from None
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}).") from None
        if isinstance(data, dict):
            data = data.get("rows") or data.get("data") or data.get("test")
        if not isinstance(data, list):
            raise DatasetError(f"{path}: expected a JSON list of rows (or an object with 'test').")
        return data
    import pyarrow.parquet as pq  # only when a parquet file is named

    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


def _read_packaged(config: str) -> list[dict[str, Any]]:
    try:
        text = humanevalpack(config).read_text()
    except DataFileError as exc:
        raise DatasetError(str(exc)) from None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _read_hub(name: str, config: str, revision: str) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise DatasetError(
            f"loading {name!r} from the Hugging Face Hub needs the `datasets` package: "
            "pip install 'pytest-humanfix[hub]'; or leave --humanfix-dataset at `packaged`, "
            "the copy this package ships."
        ) from None
    try:
        return list(datasets.load_dataset(name, config, split="test", revision=revision))
    except Exception as exc:  # network, auth, missing config: all end the same way
        raise DatasetError(
            f"could not load {name!r} (config {config}, split test, revision "
            f"{revision}) from the Hub: {type(exc).__name__}: {exc}. Without network "
            f"access, leave --humanfix-dataset at {PACKAGED} (the copy in the package) or pass "
            "a local file with --humanfix-dataset PATH or HUMANFIX_DATASET."
        ) from None


def is_local(source: str) -> bool:
    path = Path(source)
    return source != PACKAGED and (path.suffix in LOCAL_SUFFIXES or path.exists())


def describe(source: str, config: str = "python", revision: str | None = None) -> str:
    """How records and summaries name the copy a source gives for a language (`config`): the
    packaged file with its sha256, a file's path, or a Hub id at its revision."""
    if source == PACKAGED:
        try:
            return humanevalpack(config).label
        except DataFileError as exc:
            raise DatasetError(str(exc)) from None
    if is_local(source):
        return source
    return f"{source}@{hub_revision(source, revision)}"


def hub_revision(source: str, revision: str | None) -> str:
    """The Hub revision a source is loaded at: the one given, else for HUB_DATASET its pinned
    commit, else main."""
    return revision or (HUB_REVISION if source == HUB_DATASET else "main")


def load_rows(source: str, config: str = "python", revision: str | None = None
              ) -> tuple[list[dict[str, Any]], str]:
    """Rows of the dataset and a label naming where they came from (`config`: the language,
    which picks the packaged file or the Hub dataset's config; `revision`: the Hub's)."""
    path = Path(source)
    label = describe(source, config, revision)
    if source == PACKAGED:
        return _read_packaged(config), label
    if is_local(source):
        if not path.is_file():
            raise DatasetError(
                f"dataset file {source} does not exist. Pass an existing .jsonl/.json/.parquet "
                "file with --humanfix-dataset (or HUMANFIX_DATASET), or leave it unset to read "
                f"the copy in the package ({PACKAGED})."
            )
        if path.suffix not in LOCAL_SUFFIXES:
            raise DatasetError(f"dataset file {source}: unknown format; "
                               "use .jsonl, .json or .parquet.")
        return _read_local(path), label
    return _read_hub(source, config, hub_revision(source, revision)), label


def load_tasks(source: str, config: str = "python", revision: str | None = None) -> list[Task]:
    rows, label = load_rows(source, config, revision)
    tasks = [task_from_row(row, label, index) for index, row in enumerate(rows)]
    if not tasks:
        raise DatasetError(f"{label}: the dataset has no rows.")
    seen: set[str] = set()
    for task in tasks:
        if task.task_id in seen:
            raise DatasetError(f"{label}: task_id {task.task_id!r} appears more than once.")
        seen.add(task.task_id)
    return tasks


def select(tasks: Sequence[Task], max_tasks: int | None, ids: Iterable[str] | None) -> list[Task]:
    """Apply --humanfix-task (exact ids, dataset order kept) and then --humanfix-max."""
    chosen = list(tasks)
    if ids:
        wanted = list(ids)
        known = {t.task_id for t in tasks}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            sample = ", ".join(t.task_id for t in tasks[:3])
            raise DatasetError(
                f"--humanfix-task: unknown task id(s) {', '.join(unknown)}; ids look like {sample}."
            )
        chosen = [t for t in chosen if t.task_id in set(wanted)]
    if max_tasks is not None:
        chosen = chosen[:max_tasks]
    return chosen


def deal(tasks: Sequence[Task], index: int, count: int) -> list[Task]:
    """Shard `index` of `count` (1-based) of the selection, in dataset order. The tasks are
    ordered by bug type (dataset order within a type) and dealt round-robin, card by card: each
    shard gets every count-th task of that order, so each bug type, and the whole, is split
    into shares that differ by one task at most. The deal depends on the selection alone, never
    on workers or timing, so shards are disjoint and their union is the selection."""
    by_type = sorted(tasks, key=lambda task: task.bug_type)  # stable: dataset order kept
    dealt = {task.task_id for position, task in enumerate(by_type)
             if position % count == index - 1}
    return [task for task in tasks if task.task_id in dealt]


def ids_hash(task_ids: Iterable[str]) -> str:
    """A fingerprint of a selection: shards merge only when dealt from the same one."""
    return hashlib.sha256("\n".join(task_ids).encode()).hexdigest()[:16]


def content_hash(tasks: Sequence[Task]) -> str:
    """A fingerprint of everything in the tasks that affects a score."""
    digest = hashlib.sha256()
    for task in tasks:
        digest.update(json.dumps([getattr(task, f.name) for f in fields(Task)
                                  if f.name != "language"]).encode())
    return digest.hexdigest()[:16]
