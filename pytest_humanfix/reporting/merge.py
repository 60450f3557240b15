"""`humanfix-report merge`: the JSONL files of --humanfix-shard runs joined into one run,
checked from the files alone (each record carries its shard) to be of one run, with no task
given twice and no shard or task missing; an error names the shard and the task
(docs/beyond.md, "merge").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .. import computed_by
from ..dataset import task_number
from ..jsonl import JsonlError
from ..protocol import fingerprint_differences, options_of, record_fingerprint
from ..records import Record, Shard, latest_per_task, read_records
from .sections import MergedShard


class MergeError(Exception):
    """The files cannot be merged into one run; the message names the shard and the task."""


@dataclass
class ShardFile:
    path: Path
    records: list[Record]
    shard: Shard

    @property
    def name(self) -> str:
        return f"shard {self.shard['index']}/{self.shard['count']} ({self.path})"

    def label(self) -> MergedShard:
        """What summary.json says of a merged shard."""
        return {"file": str(self.path), "index": self.shard["index"],
                "count": self.shard["count"], "tasks": len(self.records),
                "run_ids": sorted({r["run_id"] for r in self.records if r.get("run_id")})}


def read_shard(path: Path) -> ShardFile:
    if not path.is_file():
        raise MergeError(f"{path} is not a file; pass the results JSONL of each shard.")
    try:
        records = latest_per_task(read_records(path, bad_lines="torn-tail"))
    except JsonlError as exc:
        raise MergeError(f"{exc}; only a torn last line is skipped.") from None
    if not records:
        raise MergeError(f"{path} holds no result records.")
    for record in records:
        if not record.get("shard"):
            raise MergeError(f"{path}: the record of {record['task_id']} has no shard; merge "
                             "takes the results of runs with --humanfix-shard K/N.")
    shard = records[0].get("shard")
    assert shard is not None  # every record was checked to have one
    for record in records:
        other = record.get("shard") or Shard()
        if other != shard:
            raise MergeError(
                f"{path}: {record['task_id']} is of shard {other.get('index')}/"
                f"{other.get('count')}, the file's first record of shard {shard['index']}/"
                f"{shard['count']}; give each shard's results in a file of its own.")
    return ShardFile(path, records, shard)


def check_same_run(first: ShardFile, other: ShardFile, accept_computed_by: bool) -> None:
    wanted = record_fingerprint(first.records[0])
    computed = computed_by.differences(other.records[0].get("computed_by"),
                                       first.records[0].get("computed_by"))
    if computed and not accept_computed_by:
        raise MergeError(
            f"{other.name}: its replies were computed otherwise than {first.name}'s "
            f"({'; '.join(computed)}); a merged figure would mix two computations. Run every "
            "shard on the same build and device kind, or pass --accept-computed-by-differences "
            "to merge them anyway (the summary lists each).")
    for record in other.records:
        differences = fingerprint_differences(record_fingerprint(record), wanted)
        if differences:
            raise MergeError(
                f"{other.name}, task {record['task_id']}: made under another model, protocol "
                f"or dataset than {first.name} ({'; '.join(differences)}); merge only the "
                f"shards of one run, made with the same {options_of(differences)}.")
    compared: tuple[tuple[Literal["count", "selection"], str], ...] = (
        ("count", "shard count"), ("selection", "selection of tasks"))
    for key, what in compared:
        if other.shard[key] != first.shard[key]:
            raise MergeError(
                f"{other.name} was dealt with another {what} than {first.name}; run every "
                "shard with the same --humanfix-shard N, --humanfix-max and --humanfix-task.")


def merge(paths: list[Path], accept_computed_by: bool = False
          ) -> tuple[list[Record], list[ShardFile]]:
    """The records of every shard, one per task in task order, and the shards; MergeError
    when they do not make one whole run, or (unless `accept_computed_by`) when their replies
    were computed otherwise."""
    shards = [read_shard(path) for path in paths]
    for other in shards:  # the first too: each of its records against its first
        check_same_run(shards[0], other, accept_computed_by)
    holder: dict[str, ShardFile] = {}
    for shard in shards:
        for record in shard.records:
            task_id = record["task_id"]
            if task_id in holder:
                raise MergeError(f"task {task_id} is given twice: in {holder[task_id].name} and "
                                 f"in {shard.name}; pass each shard's results once.")
            if task_id not in shard.shard["tasks"]:
                raise MergeError(f"{shard.name}: task {task_id} is not one of the shard's tasks.")
            holder[task_id] = shard
    by_index: dict[int, ShardFile] = {}
    for shard in shards:
        index = shard.shard["index"]
        if index in by_index:
            raise MergeError(f"shard {index}/{shard.shard['count']} is given twice: "
                             f"{by_index[index].path} and {shard.path}.")
        by_index[index] = shard
    count = shards[0].shard["count"]
    for index in range(1, count + 1):
        if index not in by_index:
            raise MergeError(f"shard {index}/{count} is missing: no file given holds it; run "
                             f"it with --humanfix-shard {index}/{count}.")
    for shard in shards:
        missing = [t for t in shard.shard["tasks"] if t not in holder]
        if missing:
            raise MergeError(
                f"{shard.name}: task {missing[0]} has no record"
                f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; the shard "
                f"did not finish: rerun it with --humanfix-shard {shard.shard['index']}/"
                f"{count} --humanfix-resume.")
    records = [record for shard in shards for record in shard.records]
    records.sort(key=lambda r: (task_number(r["task_id"]), r["task_id"]))
    return records, shards
