"""Receipts of the canonical controls' full runs: what a language's 164-task canonical control
depends on (the package's every file, the grammars that check its code, the toolchain's and
libraries' Debian packages), recorded when all 164 passed, so that a run whose inputs are the
receipt's may check a sample of the tasks, and any other runs all 164
(tests/unit/languages/test_languages.py)."""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
from pathlib import Path

import pytest_humanfix
from pytest_humanfix.languages import language
from pytest_humanfix.languages.base import which
from pytest_humanfix.languages.javascript import NODE_MODULES
from pytest_humanfix.languages.rust import REGISTRY
from pytest_humanfix.sandbox.fresh import SAFE_ENV

# The whole package, not the modules a run is seen to pass through: a verdict of one task can
# turn on code far from the sandbox (the stop words a reply is cut at, how an item marks a known
# failure), and a file too many only costs a full run.
PACKAGE = Path(pytest_humanfix.__file__).parent
# tree-sitter checks each reply's syntax before it is compiled, and has rejected tasks' code.
GRAMMARS = {"js": "tree-sitter-javascript", "java": "tree-sitter-java", "go": "tree-sitter-go",
            "cpp": "tree-sitter-cpp", "rust": "tree-sitter-rust"}
# Debian's packages the programs include or link beyond the toolchain's own (scripts/setup),
# and libc, whose maths the float tasks print; each is recorded with what it depends on.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "js": (), "java": (), "go": ("golang-github-stretchr-testify-dev",),
    "cpp": ("libboost-dev", "libssl-dev"),
    "rust": ("librust-rand-dev", "librust-regex-dev", "librust-md5-dev")}
RECEIPTS = Path(__file__).parent / "recorded" / "canonical-controls"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def source_digests(package: Path) -> dict[str, str]:
    files = sorted(path for path in package.rglob("*")
                   if path.is_file() and "__pycache__" not in path.parts)
    return {str(path.relative_to(package)): digest(path.read_bytes()) for path in files}


def dpkg(*arguments: str) -> str:
    """dpkg-query's answer, '' where it has none (no such package, or no dpkg at all)."""
    try:
        shown = subprocess.run(["dpkg-query", *arguments], capture_output=True, text=True,
                               timeout=60)
    except OSError:
        return ""
    return shown.stdout if shown.returncode == 0 else ""


def owner(binary: str) -> str:
    """The Debian package that installed `binary` as the sandbox finds it, links followed
    (`go` is golang-1.19-go's, not golang-go's)."""
    path = which(binary)
    found = dpkg("-S", os.path.realpath(path)) if path else ""
    return found.split(":", 1)[0] if found else f"{binary} (not from a Debian package)"


def crate_owners() -> list[str]:
    """The Debian packages of the crates Rust's programs build against, each crate a folder of
    Debian's registry (its dependencies' among them, which Debian names only virtually)."""
    crates = sorted(str(path) for path in Path(REGISTRY).iterdir()) \
        if Path(REGISTRY).is_dir() else []
    found = dpkg("-S", *crates) if crates else ""
    return sorted({line.split(":", 1)[0] for line in found.splitlines() if ":" in line})


def installed(name: str) -> tuple[str, str]:
    """A Debian package's version ('not installed' where it is not) and what it depends on."""
    shown = dpkg("-W", "-f", "${db:Status-Status}\t${Version}\t${Depends}", name)
    status, version, depends = (shown.split("\t") + ["", "", ""])[:3]
    return (version if status == "installed" else "not installed"), depends


def with_dependencies(packages: list[str]) -> dict[str, str]:
    """Each package's version, and its direct dependencies' (a compiler's standard library, a
    crate's crates, a metapackage's real one), by name."""
    versions: dict[str, str] = {}
    for name in packages:
        versions[name], depends = installed(name)
        for needed in re.findall(r"(?:^|,)\s*([a-z0-9][a-z0-9+.-]*)", depends):
            if needed not in versions:
                versions[needed] = installed(needed)[0]
    return versions


def tool_version(binary: str) -> str:
    """What `binary --version` prints first, run as the sandbox runs it (a JVM reads its
    options from the environment and says so first); the failure where it fails."""
    path = which(binary)
    if path is None:
        return "not found"
    arguments = ("version",) if binary == "go" else ("-version",) if binary.startswith("java") \
        else ("--version",)
    shown = subprocess.run([path, *arguments], capture_output=True, text=True, timeout=60,
                           env=SAFE_ENV)
    lines = (shown.stdout + shown.stderr).strip().splitlines()
    return (lines[0] if lines else "(prints nothing)") + \
        (f" (exit status {shown.returncode})" if shown.returncode else "")


def grammar_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def npm_version(package: str) -> str:
    manifest = Path(NODE_MODULES) / package / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.is_file() else "not found"


def inputs(name: str, package: Path = PACKAGE) -> dict[str, str]:
    """What language `name`'s canonical control depends on, each with its digest or version."""
    binaries = [binary for binary, _ in language(name).tools]
    debian = [owner(binary) for binary in binaries] + [*LIBRARIES[name], "libc6"] + \
        (crate_owners() if name == "rust" else [])
    return {**{f"source {path}": value for path, value in source_digests(package).items()},
            **{f"tool {binary}": tool_version(binary) for binary in binaries},
            **{f"debian {debian_package}": version
               for debian_package, version in with_dependencies(debian).items()},
            "architecture": dpkg("-W", "-f", "${Architecture}", "dpkg").strip(),
            "grammar": f"tree-sitter {grammar_version('tree-sitter')}, "
                       f"{GRAMMARS[name]} {grammar_version(GRAMMARS[name])}",
            **({"npm js-md5": npm_version("js-md5")} if name == "js" else {})}


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


def record(name: str, current: dict[str, str], tasks: dict[str, int]) -> Path:
    """Write the receipt of a full run that passed, with its summary's counts: one file a
    language, so that xdist's workers never write one file together, and whole or not at all."""
    path = receipt_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_suffix(".tmp")
    draft.write_text(json.dumps({
        "language": name, "tasks": tasks,
        "recorded": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "inputs": current}, indent=1, sort_keys=True) + "\n")
    draft.replace(path)
    return path
