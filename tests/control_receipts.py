"""Receipts of the canonical controls' full runs: what a language's 164-task canonical control
depends on (the package's sources on its path, the pinned data, the toolchain's and libraries'
versions), recorded when all 164 passed, so that a run whose inputs are the receipt's may check
a sample of the tasks, and any other runs all 164 (tests/unit/languages/test_languages.py)."""

from __future__ import annotations

import datetime
import hashlib
import json
import subprocess
from pathlib import Path

import pytest_humanfix
from pytest_humanfix.datafiles import HUMANEVALPACK
from pytest_humanfix.languages import language
from pytest_humanfix.languages.base import which

PACKAGE = Path(pytest_humanfix.__file__).parent
# Whatever turns a task and its reference solution into a verdict: the control's reply, the
# agent's extraction and check, the program each language assembles and its known failures,
# the sandbox that compiles and runs it, and the data's loading and pins.
SOURCES = ("agent", "languages", "sandbox", "models/controls.py", "dataset.py", "datafiles.py")
# What the toolchain's programs include or link beside its own binaries (scripts/setup).
LIBRARIES: dict[str, tuple[str, ...]] = {
    "js": ("npm:js-md5",), "java": (), "go": ("golang-github-stretchr-testify-dev",),
    "cpp": ("libboost-dev", "libssl-dev"),
    "rust": ("librust-rand-dev", "librust-regex-dev", "librust-md5-dev")}
NPM_PREFIX = Path("/usr/local/lib/humanfix/node_modules")
RECEIPTS = Path(__file__).parent / "recorded" / "canonical-controls"
# How each binary says its version (javac and java on stderr).
VERSION_ARGS = {"go": ("version",), "javac": ("-version",), "java": ("-version",)}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def source_digests() -> dict[str, str]:
    files = sorted(path for name in SOURCES for path in
                   ([PACKAGE / name] if name.endswith(".py") else (PACKAGE / name).rglob("*"))
                   if path.is_file() and "__pycache__" not in path.parts)
    return {str(path.relative_to(PACKAGE)): digest(path.read_bytes()) for path in files}


def tool_version(binary: str) -> str:
    path = which(binary)
    if path is None:
        return "not found"
    shown = subprocess.run([path, *VERSION_ARGS.get(binary, ("--version",))],
                           capture_output=True, text=True, timeout=60)
    return (shown.stdout + shown.stderr).strip().splitlines()[0]


def library_version(package: str) -> str:
    if package.startswith("npm:"):
        manifest = NPM_PREFIX / package.removeprefix("npm:") / "package.json"
        return json.loads(manifest.read_text())["version"] if manifest.is_file() else "not found"
    shown = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                           capture_output=True, text=True)
    return shown.stdout.strip() if shown.returncode == 0 else "not found"


def inputs(name: str) -> dict[str, str]:
    """What language `name`'s canonical control depends on, each with its digest or version."""
    return {**source_digests(), "data": HUMANEVALPACK[name].sha256,
            **{f"tool {binary}": tool_version(binary) for binary, _ in language(name).tools},
            **{f"library {package}": library_version(package) for package in LIBRARIES[name]}}


def changed(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """The inputs that differ, are new or are gone since the receipt, by name."""
    return sorted(key for key in recorded.keys() | current.keys()
                  if recorded.get(key) != current.get(key))


def receipt_path(name: str) -> Path:
    return RECEIPTS / f"{name}.json"


def differs_from_receipt(name: str, current: dict[str, str]) -> str:
    """Why language `name`'s canonical control must run whole: '' where its receipt's inputs
    are `current`."""
    path = receipt_path(name)
    if not path.is_file():
        return f"{path} does not exist"
    receipt = json.loads(path.read_text())
    names = changed(receipt["inputs"], current)
    if not names:
        return ""
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{shown} changed since {path.name} was recorded ({receipt['recorded']})"


def record(name: str, current: dict[str, str], tasks: int) -> Path:
    """Write the receipt of a full run that passed: one file a language, so that xdist's
    workers never write one file together."""
    path = receipt_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "language": name, "tasks": tasks,
        "recorded": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "inputs": current}, indent=1, sort_keys=True) + "\n")
    return path
