"""Selecting and naming tasks (dataset.py): --humanfix-task and --humanfix-max, the shard deal,
the fingerprints shards are merged by, and what a task id says; held against the shared data's
known bug-type counts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_humanfix.dataset import (
    DatasetError,
    Task,
    content_hash,
    deal,
    id_language,
    ids_hash,
    item_name,
    load_rows,
    load_tasks,
    select,
    slug,
    task_number,
)

# The shared README's known fact: the same six bug types in every language, with these counts.
BUG_TYPES = {"value misuse": 44, "missing logic": 33, "excess logic": 31, "operator misuse": 25,
             "variable misuse": 23, "function misuse": 8}


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> list[Task]:
    return load_tasks(str(dataset))


@pytest.mark.parametrize("name", ["python", "js", "java", "go", "cpp", "rust"])
def test_every_language_has_bigcodes_bug_types_and_its_own_ids(dataset, name):
    tasks = load_tasks(str(dataset.parent / f"humanevalpack-{name}.jsonl"))
    assert Counter(task.bug_type for task in tasks) == BUG_TYPES
    assert {task.language for task in tasks} == {name}
    assert [task.number for task in tasks] == list(range(164))


@pytest.mark.parametrize("count", [2, 3, 7])
def test_shards_are_disjoint_and_together_the_selection(tasks, count):
    shards = [deal(tasks, index, count) for index in range(1, count + 1)]
    dealt = [task.task_id for shard in shards for task in shard]
    assert sorted(dealt) == sorted(task.task_id for task in tasks)
    assert len(set(dealt)) == len(dealt)
    for shard in shards:  # each in dataset order
        assert shard == sorted(shard, key=tasks.index)


@pytest.mark.parametrize("count", [2, 3, 7])
def test_each_shard_gets_a_share_of_each_bug_type_that_differs_by_one_at_most(tasks, count):
    shares = [Counter(task.bug_type for task in deal(tasks, index, count))
              for index in range(1, count + 1)]
    for bug_type, total in BUG_TYPES.items():
        got = [share[bug_type] for share in shares]
        assert sum(got) == total and max(got) - min(got) <= 1, (bug_type, got)
    sizes = [sum(share.values()) for share in shares]
    assert max(sizes) - min(sizes) <= 1


def test_a_deal_depends_on_the_selection_alone(tasks):
    assert deal(tasks, 2, 3) == deal(list(tasks), 2, 3)
    assert deal(tasks, 1, 1) == tasks


def test_select_takes_ids_in_dataset_order_then_the_first_max(tasks):
    chosen = select(tasks, 2, ["Python/9", "Python/3", "Python/5"])
    assert [task.task_id for task in chosen] == ["Python/3", "Python/5"]
    assert select(tasks, None, None) == tasks and len(select(tasks, 0, None)) == 0


def test_an_unknown_task_id_is_named_with_what_ids_look_like(tasks):
    with pytest.raises(DatasetError, match=r"unknown task id\(s\) Python/999, python/1; ids look "
                                           r"like Python/0, Python/1, Python/2"):
        select(tasks, None, ["Python/999", "python/1"])


def test_the_selection_fingerprint_is_the_ids_in_order():
    assert ids_hash(["Python/0", "Python/1"]) == ids_hash(iter(["Python/0", "Python/1"]))
    assert ids_hash(["Python/0", "Python/1"]) != ids_hash(["Python/1", "Python/0"])
    assert len(ids_hash([])) == 16


def test_the_content_fingerprint_ignores_the_language_the_id_already_gives(tasks):
    relabelled = [Task(**{**vars(task), "language": "js"}) for task in tasks[:3]]
    assert content_hash(relabelled) == content_hash(tasks[:3])


@pytest.mark.parametrize(("task_id", "number", "language"), [
    ("Python/12", 12, "python"), ("JavaScript/0", 0, "js"), ("CPP/163", 163, "cpp"),
    ("Rust/3", 3, "rust"), ("HumanEval/7", 7, None), ("nonumber", -1, None),
])
def test_what_a_task_id_says(task_id, number, language):
    assert task_number(task_id) == number
    assert id_language(task_id) == language


def test_item_names_and_slugs_are_identifiers():
    assert item_name("Python/0", "has_close_elements") == "Python_0_has_close_elements"
    assert slug("value misuse") == "value_misuse" and slug("  C++ / Go! ") == "c_go"


def test_a_json_file_may_hold_its_rows_under_rows(tmp_path, dataset_rows):
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"rows": dataset_rows[:2]}))
    rows, label = load_rows(str(path))
    assert [row["task_id"] for row in rows] == ["Python/0", "Python/1"] and label == str(path)


@pytest.mark.parametrize(("name", "message"), [
    ("absent.jsonl", "does not exist. Pass an existing .jsonl/.json/.parquet file"),
    ("data.csv", "unknown format; use .jsonl, .json or .parquet"),
])
def test_a_file_that_cannot_be_read_names_the_fix(tmp_path, name, message):
    if name.endswith(".csv"):
        (tmp_path / name).write_text("task_id\n")
    with pytest.raises(DatasetError, match=message):
        load_tasks(str(tmp_path / name))


def test_an_empty_file_has_no_tasks(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(DatasetError, match="the dataset has no rows"):
        load_tasks(str(tmp_path / "empty.jsonl"))
