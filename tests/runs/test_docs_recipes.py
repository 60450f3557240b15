"""The recipes of docs/reports.md, docs/beyond.md and docs/own-agent.md run as written: every
block there that holds a pytest or humanfix-report command is marked, and the blocks marked (on
those pages or any other)
`<!-- docs-test: run as MODEL; NAME=V1,V2 ... given=FILE -->` (recipes for a model or hardware
this machine lacks) run here, in order, one folder per page, with the control MODEL in the
model's place. Left out are only the flags that start or reach an engine (`--humanfix-serve`, its
layout and engine arguments, `--humanfix-base-url`); `-n` is at most 2; a command that chooses no
tasks takes the first 10; each shell variable takes each of its values in turn; and a file the
recipe takes from an earlier job (`given=`, an artifact in CI) is a control run's results. The
gates, shards, merges, baselines, report folders, agents and rounds run as the page shows them.
"""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_docs import BLOCKS, REPO, Block, checkout_folder, shell_environment

RECIPE_PAGES = ("reports.md", "beyond.md", "own-agent.md")
RUN_AS = re.compile(r"run as (\S+)\s*(?:;\s*(.*))?")
# Flags that start or reach an engine, with how many values each takes after a space.
ENGINE_FLAGS = {"--humanfix-serve": 0, "--humanfix-serve-layout": 1,
                "--humanfix-engine-args": 1, "--humanfix-base-url": 1}
TASKS = ["--humanfix-max", "10"]


@dataclass
class Recipe:
    block: Block
    model: str
    values: dict[str, list[str]]
    given: list[str]


def recipe_of(block: Block) -> Recipe | None:
    marked = RUN_AS.fullmatch(block.marker or "")
    if marked is None:
        return None
    values: dict[str, list[str]] = {}
    given: list[str] = []
    for pair in (marked.group(2) or "").split():
        name, _, value = pair.partition("=")
        if name == "given":
            given.append(value)
        else:
            values[name] = value.split(",")
    return Recipe(block, marked.group(1), values, given)


RECIPES = [recipe for block in BLOCKS if (recipe := recipe_of(block))]


def substituted(command: str, values: dict[str, str]) -> str:
    """`command` with each variable's value: `${{ name }}` (GitHub), `${name}` and `$name`."""
    for name, value in values.items():
        command = command.replace("${{ " + name + " }}", value).replace("${" + name + "}", value)
        command = re.sub(r"\$" + re.escape(name) + r"\b", value, command)
    return command


def with_control(command: str, model: str) -> str:
    """A pytest command with `model` for its model and no engine flags (see the module's
    docstring); a humanfix-report command as it is."""
    words = shlex.split(command)
    if words[0] != "pytest":
        return command
    kept, index = [], 0
    while index < len(words):
        word = words[index]
        name, equals, _ = word.partition("=")
        if name in ENGINE_FLAGS:
            index += 1 + (0 if equals else ENGINE_FLAGS[name])
        elif name == "--humanfix-model":
            kept.append(f"--humanfix-model={model}")
            index += 1 if equals else 2
        elif word == "-n":  # a number, or `auto` for every core (a GPU's host has many)
            count = words[index + 1]
            kept += ["-n", str(min(int(count), 2)) if count.isdigit() else "2"]
            index += 2
        else:
            kept.append(word)
            index += 1
    if not any(word.split("=")[0] in ("--humanfix-max", "--humanfix-task") for word in kept):
        kept += TASKS
    return shlex.join(kept)


def commands_of(recipe: Recipe) -> list[str]:
    """Each command of the recipe's block as run here, once per combination of the values of
    the variables it uses."""
    commands = []
    for command in recipe.block.commands:
        names = [name for name in recipe.values if re.search(
            r"\$(\{\{ )?\{?" + re.escape(name) + r"\b", command)]
        for combination in itertools.product(*(recipe.values[name] for name in names)):
            commands.append(with_control(substituted(command, dict(zip(names, combination,
                                                                       strict=True))),
                                         recipe.model))
    return commands


def test_every_recipe_command_is_marked():
    """A recipe page's block that holds a command is run here or by the test it names."""
    unmarked = [block.where for block in BLOCKS
                if block.page.name in RECIPE_PAGES and block.commands and not block.marker]
    assert not unmarked, (
        f"these blocks show commands no test runs: {unmarked}; mark each with "
        "<!-- docs-test: run -->, <!-- docs-test: run as canonical; ... --> or "
        "<!-- docs-test: tests/FILE.py::TEST -->")
    assert {recipe.block.page.name for recipe in RECIPES} >= set(RECIPE_PAGES)


def test_a_substituted_command_keeps_everything_but_the_model_and_the_engine():
    command = ("pytest --humanfix-model=Qwen/X --humanfix-serve --humanfix-serve-layout "
               "tensor-parallel --humanfix-engine-args '--max-model-len 8192' -n 16 "
               "--humanfix-shard ${{ matrix.shard }}/4 --humanfix-fail-under 0.25")
    recipe = Recipe(Block(REPO / "docs" / "beyond.md", 1, "sh", "run as canonical",
                          [command]), "canonical", {"matrix.shard": ["1", "2"]}, [])
    assert commands_of(recipe) == [
        f"pytest --humanfix-model=canonical -n 2 --humanfix-shard {k}/4 "
        "--humanfix-fail-under 0.25 --humanfix-max 10" for k in (1, 2)]


def recipe_folder(page: Path, root: Path) -> Path:
    """A checkout folder for a page's recipes, with the examples its agents come from and the
    files its recipes are given."""
    folder = checkout_folder(root)
    shutil.copytree(REPO / "examples", folder / "examples")
    for name in [name for recipe in RECIPES if recipe.block.page == page
                 for name in recipe.given]:
        given = subprocess.run(
            [sys.executable, "-m", "pytest", "--humanfix-model=canonical", *TASKS,
             "--humanfix-report-dir=given"], cwd=folder, env=shell_environment(),
            capture_output=True, text=True, timeout=600)
        assert given.returncode == 0, given.stdout[-3000:] + given.stderr[-3000:]
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / "given" / "humanfix.jsonl", folder / name)
    return folder


@pytest.mark.parametrize("page", sorted({recipe.block.page.name for recipe in RECIPES}))
def test_a_pages_recipes_run_as_written_with_a_control(page: str, tmp_path: Path):
    """Each command exits 0, in the page's order in one folder (a later block may merge what
    an earlier one wrote): with the canonical control every gate a recipe sets holds, so a
    failure here is the recipe's (an option misspelled, a file it does not make, a merge that
    refuses its shards)."""
    path = REPO / "docs" / page
    folder = recipe_folder(path, tmp_path)
    for recipe in [recipe for recipe in RECIPES if recipe.block.page == path]:
        for command in commands_of(recipe):
            done = subprocess.run(command, shell=True, cwd=folder, env=shell_environment(),
                                  capture_output=True, text=True, timeout=600)
            output = done.stdout + done.stderr
            assert done.returncode == 0, f"{recipe.block.where}: {command!r}:\n{output[-3000:]}"
            # Every run and report says pass@1; a comparison says how it tested the difference.
            said = "McNemar" if command.startswith("humanfix-report compare") else "pass@1"
            assert said in output, f"{recipe.block.where}: {command!r}:\n{output[-3000:]}"
