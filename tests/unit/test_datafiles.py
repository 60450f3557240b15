"""The data shipped in the package: each file is the pinned one, a changed byte is refused with
a message naming the file and the fix, and its rows give the dataset hashes of the upstream files
behind every earlier figure."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_humanfix import datafiles
from pytest_humanfix.datafiles import HUMANEVAL_PLUS, HUMANEVALPACK, MANIFEST, PACKAGED
from pytest_humanfix.dataset import DatasetError, content_hash, describe, load_rows, load_tasks
from pytest_humanfix.languages import NAMES
from pytest_humanfix.plus.data import PlusDataError, load_plus

# content_hash of each language's tasks, computed on 2026-11-28 from ../shared/data's
# humanevalpack-<language>.jsonl, the files behind every figure before the data shipped in the
# package (HumanEval+: PlusData.hash of humanevalplus-v0.1.10-originfmt.jsonl.gz). Literals, so
# that this test needs nothing beside the checkout.
SHARED_HASHES = {"python": "2156a80b346b77ea", "js": "b22dfbe4cd16aafb",
                 "java": "405357633a679ca0", "go": "da250b4ac1423549",
                 "cpp": "fafd60194decc2c9", "rust": "c3b063b6b26e55e6"}
SHARED_PLUS_HASH = "2df124b7efe8975d"
REPO = Path(datafiles.__file__).resolve().parents[1]


def test_the_package_holds_every_language_and_humaneval_plus():
    assert tuple(HUMANEVALPACK) == NAMES
    assert {file.license for file in MANIFEST} == {"MIT", "Apache-2.0"}
    assert HUMANEVAL_PLUS.license == "Apache-2.0"
    for file in MANIFEST:
        assert file.path.is_file() and file.path.parent == datafiles.FOLDER, file
        assert len(file.revision) == 40 and len(file.sha256) == 64, file
    notice = (datafiles.FOLDER / "NOTICE").read_text()
    assert all(file.revision in notice for file in MANIFEST)
    assert "MIT License" in (datafiles.FOLDER / "LICENSE-humanevalpack").read_text()
    assert "Apache License" in (datafiles.FOLDER / "LICENSE-humanevalplus").read_text()


@pytest.mark.parametrize("file", MANIFEST, ids=lambda file: file.name)
def test_each_file_is_the_pinned_one(file):
    raw = gzip.decompress(file.path.read_bytes())
    assert hashlib.sha256(raw).hexdigest() == file.sha256
    assert file.read_text() == raw.decode("utf-8")


@pytest.mark.parametrize("language", NAMES)
def test_the_packaged_rows_give_the_shared_files_dataset_hash(language):
    tasks = load_tasks(PACKAGED, language)
    assert len(tasks) == 164
    assert content_hash(tasks) == SHARED_HASHES[language]


def test_packaged_humaneval_plus_gives_the_shared_files_hash():
    plus = load_plus(PACKAGED, load_tasks(PACKAGED))
    assert plus.hash == SHARED_PLUS_HASH and len(plus.tasks) == 164


def test_records_name_the_packaged_copy_by_its_sha256_a_file_by_path_the_hub_by_revision():
    assert describe(PACKAGED, "go") == \
        f"packaged humanevalpack-go (sha256 {HUMANEVALPACK['go'].sha256})"
    assert describe("/data/tasks.jsonl") == "/data/tasks.jsonl"
    assert describe("bigcode/humanevalpack", "js") == \
        "bigcode/humanevalpack@9a41762f73a8cb23bb5811b73d5aab164efcf378"
    assert describe("bigcode/humanevalpack", "js", "main") == "bigcode/humanevalpack@main"
    assert describe("me/fork") == "me/fork@main"


@pytest.mark.parametrize("content", ["edited", "not gzip", "missing"])
def test_a_changed_file_is_refused_naming_it_and_the_fix(tmp_path, monkeypatch, content):
    python = HUMANEVALPACK["python"]
    target = tmp_path / python.path.name
    if content == "edited":
        raw = gzip.decompress(python.path.read_bytes()).replace(b"return", b"retrun", 1)
        target.write_bytes(gzip.compress(raw))
    elif content == "not gzip":
        target.write_bytes(b"{}\n")
    monkeypatch.setattr(datafiles, "FOLDER", tmp_path)
    with pytest.raises(DatasetError) as raised:
        load_rows(PACKAGED, "python")
    message = str(raised.value)
    assert str(target) in message
    assert "pip install --force-reinstall --no-deps pytest-humanfix" in message
    assert "--humanfix-dataset" in message
    if content == "edited":
        assert f"not the pinned {python.sha256}" in message


def test_a_changed_humaneval_plus_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / HUMANEVAL_PLUS.path.name).write_bytes(gzip.compress(b"{}\n"))
    monkeypatch.setattr(datafiles, "FOLDER", tmp_path)
    with pytest.raises(PlusDataError, match=r"humanevalplus-v0\.1\.10-originfmt\.jsonl\.gz has "
                                            r"sha256 \w+, not the pinned"):
        load_plus(PACKAGED, [])


def test_a_language_without_packaged_data_is_named():
    with pytest.raises(DatasetError, match="no packaged HumanEvalPack data for language 'cobol'"):
        load_rows(PACKAGED, "cobol")


# Builds the wheel as pip does (setuptools' PEP 517 hooks, the set-up's setuptools), and says
# every warning the build gave, caught or printed.
BUILD = """
import json, sys, warnings
from setuptools import build_meta
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    name = build_meta.build_wheel(sys.argv[1])
    # The editable wheel too, as scripts/setup installs it (pip shows a backend's warnings).
    build_meta.build_editable(sys.argv[2])
print(json.dumps({"wheel": name, "warnings": [f"{w.category.__name__}: {w.message}"
                                               for w in caught]}))
"""


def test_the_wheel_carries_the_data_and_its_licenses_and_builds_without_a_warning(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "pytest_humanfix", source / "pytest_humanfix",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "editable").mkdir()
    done = subprocess.run([sys.executable, "-c", BUILD, str(tmp_path), str(tmp_path / "editable")],
                          cwd=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    built = json.loads(done.stdout.splitlines()[-1])
    assert built["warnings"] == []
    assert "Deprecat" not in done.stdout + done.stderr, done.stdout + done.stderr
    wheel = zipfile.ZipFile(tmp_path / built["wheel"])
    names = wheel.namelist()
    for file in MANIFEST:
        assert f"pytest_humanfix/data/{file.path.name}" in names
    licenses = {Path(name).name for name in names if ".dist-info/licenses/" in name}
    assert licenses == {"NOTICE", "LICENSE-humanevalpack", "LICENSE-humanevalplus"}
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT AND Apache-2.0" in metadata
