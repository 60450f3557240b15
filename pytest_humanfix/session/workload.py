"""The run's tasks: each language's dataset loaded, checked against the language asked for,
selected and, under --humanfix-shard, dealt.

A local file names its language through its task ids (`Rust/3`); a path holding `{language}`
names a file per language; the packaged copy and a Hub dataset id are read once per language.
Without --humanfix-language the run's language is the file's, else python (docs/languages.md).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ..datafiles import HUMANEVAL_PLUS, PACKAGED, humanevalpack
from ..dataset import (
    LANGUAGE_FIELD,
    DatasetError,
    Task,
    content_hash,
    deal,
    describe,
    id_language,
    ids_hash,
    is_local,
    load_tasks,
    select,
)
from ..languages import NAMES
from ..plus.data import PlusData, load_plus
from ..records import Shard
from ..settings import Settings
from ..variants.impossible import VARIANT as IMPOSSIBLE, Impossible, impossible_tasks


def _file_languages(tasks: list[Task], source: str, asked: tuple[str, ...] | None
                    ) -> tuple[str, ...]:
    """The languages a local file's task ids name, checked against the ones asked for."""
    named = {id_language(task.task_id) for task in tasks} - {None}
    found = tuple(name for name in NAMES if name in named)
    if asked is not None and found and set(found) != set(asked):
        example = next(t.task_id for t in tasks if id_language(t.task_id) in found)
        raise DatasetError(
            f"--humanfix-dataset {source} holds {', '.join(found)} tasks (ids like {example}), "
            f"but --humanfix-language is {','.join(asked)}: pass --humanfix-language "
            f"{','.join(found)}, or a dataset of {','.join(asked)} (for several languages, a "
            f"path holding {LANGUAGE_FIELD}).")
    return found or asked or ("python",)


def language_tasks(settings: Settings) -> tuple[dict[str, list[Task]], dict[str, str]]:
    """Each language's tasks in dataset order, and the source each came from."""
    source = settings.dataset
    if LANGUAGE_FIELD in source or not is_local(source):
        names = settings.language or ("python",)
        sources = {name: source.replace(LANGUAGE_FIELD, name) for name in names}
        by_language = {}
        for name in names:
            tasks = load_tasks(sources[name], name, settings.dataset_revision)
            _file_languages(tasks, sources[name], (name,))
            by_language[name] = [dataclasses.replace(task, language=name) for task in tasks]
        return by_language, sources
    tasks = load_tasks(source)
    names = _file_languages(tasks, source, settings.language)
    # Ids of no known prefix (a hand-made file) are tasks of the one language asked for.
    tasks = [task if id_language(task.task_id) else dataclasses.replace(task, language=names[0])
             for task in tasks]
    return {name: [t for t in tasks if t.language == name] for name in names}, \
        dict.fromkeys(names, source)


def _check_not_left_out(ids: tuple[str, ...] | None, impossible: Impossible) -> None:
    named = [task_id for task_id in ids or () if task_id in impossible.left_out]
    if named:
        raise DatasetError(
            "--humanfix-task: " + "; ".join(f"{task_id} is left out of --humanfix-variant "
                                            f"impossible: {impossible.left_out[task_id]}"
                                            for task_id in named)
            + ". Leave it out of --humanfix-task (docs/trust.md#the-cheating-rate).")


@dataclass(frozen=True)
class Workload:
    """The dataset's tasks (every language of the run), the ones this process runs (the
    selection, or under --humanfix-shard its shard), each language's dataset hash, source
    (as given) and label (which copy: datafiles.py's label, a path, Hub id@revision), and the
    shard as every record carries it (None without one)."""

    all_tasks: list[Task]
    tasks: list[Task]
    dataset_hashes: dict[str, str]
    sources: dict[str, str]
    labels: dict[str, str]
    shard: Shard | None = None
    # --humanfix-tests plus: HumanEval+ for the run's tasks, checked against them.
    plus: PlusData | None = None
    # --humanfix-variant impossible: each task's mutation, and the tasks left out of it.
    impossible: Impossible | None = None

    @functools.cached_property
    def _by_id(self) -> dict[str, Task]:
        return {task.task_id: task for task in self.all_tasks}

    def task(self, task_id: str) -> Task:
        return self._by_id[task_id]

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.sources)

    @property
    def files(self) -> tuple[str, ...]:
        """The dataset files the run read, local or packaged, which a candidate must not read."""
        files = [str(humanevalpack(name).path) if source == PACKAGED else source
                 for name, source in self.sources.items()]
        if self.plus:
            files.append(str(HUMANEVAL_PLUS.path) if self.plus.source == PACKAGED
                         else self.plus.source)
        return tuple(dict.fromkeys(f for f in files if is_local(f)))

    @classmethod
    def load(cls, settings: Settings) -> Workload:
        by_language, sources = language_tasks(settings)
        labels = {name: describe(source, name, settings.dataset_revision)
                  for name, source in sources.items()}
        plus = None
        if settings.tests == "plus":
            other = [name for name in by_language if name != "python"]
            if other:
                raise DatasetError(f"--humanfix-tests plus grades Python only (HumanEval+ is "
                                   f"Python), but the run's languages include "
                                   f"{', '.join(other)}: use --humanfix-language python.")
            plus = load_plus(settings.plus_dataset, by_language["python"])
        chosen = select([task for tasks in by_language.values() for task in tasks], None,
                        settings.task)
        # --humanfix-max takes the first tasks of each language.
        selected = [task for name in by_language
                    for task in select([t for t in chosen if t.language == name],
                                       settings.max, None)]
        impossible = None
        if settings.variant == IMPOSSIBLE:
            # The selection less the tasks left out of the variant, their tests mutated.
            by_language, impossible = impossible_tasks(by_language, settings.mutation,
                                                       {task.task_id for task in selected})
            _check_not_left_out(settings.task, impossible)
            mutated = {task.task_id: task for tasks in by_language.values() for task in tasks}
            selected = [mutated[task.task_id] for task in selected if task.task_id in mutated]
            if not selected:
                raise DatasetError("--humanfix-variant impossible: every selected task is left "
                                   "out of the variant (no expected value to change).")
        all_tasks = [task for tasks in by_language.values() for task in tasks]
        hashes = {name: content_hash(tasks) for name, tasks in by_language.items()}
        if settings.shard is None:
            return cls(all_tasks, selected, hashes, sources, labels, plus=plus,
                       impossible=impossible)
        index, count = settings.shard
        if count > len(selected):
            raise DatasetError(f"--humanfix-shard {index}/{count}: the selection has only "
                               f"{len(selected)} task(s); use at most {len(selected)} shards.")
        tasks = deal(selected, index, count)
        # The shard's own task ids let a merge name a task a shard did not finish.
        shard = Shard(index=index, count=count, tasks=[t.task_id for t in tasks],
                      selected=len(selected),
                      selection=ids_hash(t.task_id for t in selected))
        return cls(all_tasks, tasks, hashes, sources, labels, shard, plus, impossible)
