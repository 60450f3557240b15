"""The programs that run inside the sandbox are real files of the package: each is read back
as text, compiles alone and as the program the sandbox hands to an interpreter, and ships in
the wheel."""

from __future__ import annotations

import ast
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
from setuptools import find_packages

from pytest_humanfix.sandbox import fresh, warm
from pytest_humanfix.sandbox.inside import source
from pytest_humanfix.sandbox.program import PRELUDE

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = ["child.py", "bootstrap.py", "warm_server.py", "network_probe.py", "prelude.py",
            "toolchain.py", "explain.py", "wire.py", "answer.py", "tests.py", "descriptors.py"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_each_program_is_read_back_and_compiles(name: str) -> None:
    text = source(name)
    on_disk = files("pytest_humanfix.sandbox.inside").joinpath(name).read_text(encoding="utf-8")
    assert text == on_disk and text.strip()
    compile(text, name, "exec")


def test_every_file_in_the_folder_is_a_known_program() -> None:
    folder = files("pytest_humanfix.sandbox.inside")
    found = {entry.name for entry in folder.iterdir() if entry.name.endswith(".py")}
    assert found == {*PROGRAMS, "__init__.py"}


@pytest.mark.parametrize("text", [fresh.BOOTSTRAP, warm.SERVER], ids=["bootstrap", "server"])
def test_the_programs_handed_to_an_interpreter_compile(text: str) -> None:
    tree = ast.parse(text)
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    # child.py comes first, then every role's program
    assert {"isolate_network", "limit", "run", "answer_calls", "run_tests", "run_steps"} <= defined


def test_the_prelude_is_only_imports_one_a_line() -> None:
    # Its line count shifts every line number of the candidate's tracebacks: no comments.
    body = ast.parse(PRELUDE).body
    assert all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in body)
    assert len(body) == len(PRELUDE.splitlines()) == 16


def test_the_wheel_holds_the_inside_programs_and_py_typed() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = find_packages(str(ROOT), include=setuptools["packages"]["find"]["include"])
    assert "pytest_humanfix.sandbox.inside" in packages
    assert "py.typed" in setuptools["package-data"]["pytest_humanfix"]
    assert (ROOT / "pytest_humanfix" / "py.typed").is_file()
