from __future__ import annotations

import json

import pytest

from pytest_humanfix.dataset import DatasetError, content_hash, load_tasks, select, task_from_row


def test_shared_file_loads_all_tasks_in_order(dataset):
    tasks = load_tasks(str(dataset))
    assert len(tasks) == 164
    assert [t.number for t in tasks] == list(range(164))
    assert tasks[0].item_name == "Python_0_has_close_elements"
    assert tasks[0].buggy_code.startswith(tasks[0].declaration)


def test_hub_fields_are_accepted(dataset_rows):
    row = dataset_rows[0] | {"import": "import os\n", "test_setup": "X = 1\n"}
    task = task_from_row(row, "hub", 0)
    assert (task.imports, task.test_setup) == ("import os\n", "X = 1\n")


@pytest.mark.parametrize("suffix", [".json", ".parquet"])
def test_json_and_parquet_files_give_the_same_tasks(tmp_path, suffix, dataset_rows):
    rows = dataset_rows[:5]
    path = tmp_path / f"tasks{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(rows))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_tasks(str(path)) == load_tasks(str(jsonl))


def test_field_of_the_wrong_type_is_named(tmp_path, dataset_rows):
    row = dataset_rows[0] | {"entry_point": 7}
    with pytest.raises(DatasetError, match=r"row 1 \(task_id 'Python/0'\): field 'entry_point' is int"):
        task_from_row(row, "f.jsonl", 0)


def test_invalid_json_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"task_id": "Python/0"}\n{oops\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl: line 2 is not a JSON object"):
        load_tasks(str(path))


def test_duplicate_ids_are_refused(tmp_path, dataset_rows):
    row = dataset_rows[0]
    path = tmp_path / "dup.jsonl"
    path.write_text((json.dumps(row) + "\n") * 2)
    with pytest.raises(DatasetError, match="appears more than once"):
        load_tasks(str(path))


def test_select_keeps_dataset_order_and_applies_max_after_ids(dataset):
    tasks = load_tasks(str(dataset))
    chosen = select(tasks, 2, ["Python/9", "Python/4", "Python/7"])
    assert [t.task_id for t in chosen] == ["Python/4", "Python/7"]


def test_content_hash_changes_with_any_field(dataset):
    tasks = load_tasks(str(dataset))[:3]
    altered = [tasks[0], tasks[1].__class__(**{**tasks[1].__dict__, "test": tasks[1].test + "\n"}), tasks[2]]
    assert content_hash(tasks) == content_hash(list(tasks))
    assert content_hash(tasks) != content_hash(altered)
