"""The documentation is true of the code: the option reference is what settings.OPTIONS gives,
the commands a test can run are run (or taken from the test that runs them), and the record
schema names every field, with its type, that real runs write.

Fenced command blocks in docs/*.md and README.md are marked on the line before the fence:
`<!-- docs-test: run -->` runs each command of the block here, in order, from a copy of the
checkout's root (its pytest options; the data is the package's own), one folder per page;
`<!-- docs-test: tests/FILE.py::NAME -->` says which test runs it, and that test's source must
hold the command's options and model. A control, a replay or a `humanfix-report` verb in an
unmarked block fails the check: every such command can be run, so one is.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.jsonl import TEXT_CAP_BYTES
from pytest_humanfix.records import Attempt, Record, RecordedAttempt

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = [*sorted(DOCS.glob("*.md")), REPO / "README.md"]

MARK = re.compile(r"<!--\s*docs-test:\s*(.+?)\s*-->")
FENCE = re.compile(r"^(\s*)```(.*)$")
# Commands that need no model: the controls, a replay, and humanfix-report's verbs.
RUNNABLE = re.compile(
    r"^(humanfix-report\b|pytest\b.*--humanfix-model[ =](canonical|buggy|replay:))")
SHELL = {"", "sh", "bash", "console", "shell"}


@dataclass
class Block:
    page: Path
    line: int
    info: str
    marker: str | None
    commands: list[str]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def command_of(line: str) -> str | None:
    """The pytest or humanfix-report command a line of a block runs: the line itself, a YAML
    step's `run:`, or a quoted `--wrap "..."` of sbatch; a loop's `&` left out."""
    line = re.sub(r"^-?\s*run:\s*", "", line.strip())
    wrapped = re.search(r'--wrap\s+"([^"]*)"', line)
    command = (wrapped.group(1) if wrapped else line).strip().removesuffix("&").strip()
    return command if re.match(r"(pytest|humanfix-report)\b", command) else None


def fenced_blocks(page: Path) -> list[Block]:
    """Each fenced block of a page: its info string, its marker, and the pytest and
    humanfix-report commands in it (backslash continuations joined)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks, index = [], 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        start = index
        index += 1
        body = []
        while index < len(lines) and not FENCE.match(lines[index]):
            body.append(lines[index])
            index += 1
        index += 1  # the closing fence
        before = next((line for line in reversed(lines[:start]) if line.strip()), "")
        marker = MARK.fullmatch(before.strip())
        text = re.sub(r"\\\n\s*", "", "\n".join(body))
        commands = [command for line in text.split("\n")
                    if (command := command_of(line)) is not None]
        blocks.append(Block(page, start + 1, opened.group(2).strip().split(" ")[0],
                            marker.group(1) if marker else None, commands))
    return blocks


BLOCKS = [block for page in PAGES for block in fenced_blocks(page)]


def test_the_options_page_is_generated_from_the_option_table():
    spec = importlib.util.spec_from_file_location("options_page",
                                                  REPO / "scripts" / "options_page.py")
    assert spec and spec.loader
    options_page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(options_page)
    assert (DOCS / "options.md").read_text(encoding="utf-8") == options_page.render(), (
        "docs/options.md is not what pytest_humanfix/settings.py's option table gives: "
        "run `python scripts/options_page.py`")


def test_ci_runs_the_test_command_readme_shows():
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.startswith("pytest ")]
    shown = {command for block in fenced_blocks(REPO / "README.md") for command in block.commands}
    assert len(ci) == 1 and ci[0] in shown, (
        f".ci/run runs {ci}, README shows {sorted(shown)}: keep them the same command")


def headings(page: Path) -> set[str]:
    """The anchors MkDocs gives a page's headings (fenced blocks left out)."""
    from markdown.extensions.toc import slugify

    anchors, fenced = set(), False
    for line in page.read_text(encoding="utf-8").split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#+\s+(.*?)\s*#*$", line)):
            text = re.sub(r"`([^`]*)`", r"\1", heading.group(1))
            anchors.add(slugify(re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", text), "-"))
    return anchors


def test_readme_is_a_short_landing_page_whose_links_resolve():
    """`mkdocs build --strict` checks the site's links; README.md is outside the site, so its
    links into docs/ (and their anchors) are checked here."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150, "README.md is a landing page: 150 lines at most"
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert any(link.startswith("docs/") for link in links)
    broken = []
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        path = REPO / target
        if not path.is_file() or (anchor and anchor not in headings(path)):
            broken.append(link)
    assert not broken, f"README.md links to what is not there: {broken}"


def test_the_checks_below_find_the_marked_commands():
    """The parser finds the blocks it is meant to check (a parser that found nothing would let
    every check below pass)."""
    marked = [block for block in BLOCKS if block.marker]
    assert {block.page.name for block in marked if block.marker == "run"} >= {
        "getting-started.md", "reports.md", "beyond.md", "languages.md"}
    assert all(block.commands for block in marked), [b.where for b in marked if not b.commands]


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.info in SHELL and not b.marker],
                         ids=lambda b: b.where)
def test_an_unmarked_block_holds_no_command_a_test_can_run(block):
    runnable = [command for command in block.commands if RUNNABLE.match(command)]
    assert not runnable, (
        f"{block.where}: {runnable[0]!r} needs no model, so a test can run it: mark the block "
        "with <!-- docs-test: run --> (tests/runs/test_docs.py runs it) or with "
        "<!-- docs-test: tests/FILE.py::TEST --> naming the test that runs it")


def source_of_test(reference: str) -> str:
    path, _, name = reference.partition("::")
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment((REPO / path).read_text(encoding="utf-8"), node) or ""
    raise AssertionError(f"{reference} names no test function")


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.marker
                                   and not re.match(r"run\b", b.marker)],
                         ids=lambda b: b.where)
def test_a_command_taken_from_a_test_is_what_that_test_runs(block):
    source = source_of_test(block.marker or "")
    for command in block.commands:
        words = command.split()
        options = [word.split("=")[0] for word in words if word.startswith("-")]
        model = words[words.index("--humanfix-model") + 1] if "--humanfix-model" in words \
            else None
        verb = words[1] if words[0] == "humanfix-report" and not words[1].startswith("-") \
            and not words[1].endswith(".jsonl") else None
        missing = [word for word in [*options, model, verb] if word and f'"{word}' not in source]
        assert not missing, f"{block.where}: {block.marker} does not run {missing} of {command!r}"


def checkout_folder(root: Path) -> Path:
    """A copy of the repository root as a command in the docs sees it: the checkout's pytest
    options, and nothing beside it (the data is the package's own)."""
    checkout = root / "checkout"
    checkout.mkdir(parents=True)
    (checkout / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:langsmith_plugin -p no:anyio -p no:randomly\n")
    return checkout


def shell_environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("HUMANFIX_DATASET", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


@dataclass
class Ran:
    block: Block
    command: str
    folder: Path
    returncode: int
    output: str


@pytest.fixture(scope="module")
def docs_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Ran]:
    """Every command of every block marked `run`, run in order, a folder per page."""
    ran = []
    folders: dict[Path, Path] = {}
    for block in [b for b in BLOCKS if b.marker == "run"]:
        if block.page not in folders:
            folders[block.page] = checkout_folder(tmp_path_factory.mktemp(block.page.stem))
        for command in block.commands:
            done = subprocess.run(command, shell=True, cwd=folders[block.page],
                                  env=shell_environment(), capture_output=True, text=True,
                                  timeout=600)
            ran.append(Ran(block, command, folders[block.page], done.returncode,
                           done.stdout + done.stderr))
    return ran


def test_the_marked_commands_run(docs_runs):
    assert docs_runs
    for run in docs_runs:
        # 0, or 1 where the tasks fail or a gate does (the buggy control): never a usage
        # error (4), an internal error (3) or humanfix-report's bad input (2).
        assert run.returncode in (0, 1), (
            f"{run.block.where}: {run.command!r} exited {run.returncode}:\n{run.output[-3000:]}")
        assert "pass@1" in run.output, f"{run.block.where}: {run.command!r}:\n{run.output[-3000:]}"
        assert "Traceback" not in run.output, f"{run.block.where}: {run.command!r}:\n{run.output}"


def test_the_gate_failures_reports_md_quotes_are_what_its_commands_print(docs_runs):
    """reports.md says its second run and third command fail their gates, and quotes them."""
    text = " ".join((DOCS / "reports.md").read_text(encoding="utf-8").split())
    paragraph = text[text.index("The second run and the third command fail"):]
    wanted = [quote for quote in re.findall(r"`([^`]*)`", paragraph)
              if quote.startswith("humanfix gate FAILED: ")][:2]
    gated = [run for run in docs_runs if run.block.page.name == "reports.md"
             and re.search(r"--(humanfix-)?baseline=", run.command)]
    assert [run.command.split()[0] for run in gated] == ["pytest", "humanfix-report"]
    for run, line in zip(gated, wanted, strict=True):
        assert run.returncode == 1, f"{run.command!r} exited {run.returncode}"
        assert line in " ".join(run.output.split()), (
            f"{run.command!r} does not print {line!r}:\n{run.output[-3000:]}")


# The record schema ----------------------------------------------------------------------------

JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


@dataclass
class Field:
    path: str
    types: set[str]
    meaning: str


def schema_tables() -> dict[str, dict[str, Field]]:
    """The schema page's fields, by the file they describe (`humanfix.jsonl`, `summary.json`)."""
    tables: dict[str, dict[str, Field]] = {}
    section = ""
    for line in (DOCS / "schema.md").read_text(encoding="utf-8").split("\n"):
        if line.startswith("## "):
            section = line[3:].strip()
            tables[section] = {}
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        if section and len(cells) == 3 and re.fullmatch(r"`[^`]+`", cells[0]):
            path = cells[0].strip("`")
            types = set(re.findall(r"[a-z]+", cells[1]))
            assert types <= JSON_TYPES, f"schema.md: {path} has type {cells[1]}"
            tables[section][path] = Field(path, types, cells[2])
    return tables


def pattern(path: str) -> re.Pattern[str]:
    return re.compile("".join(".+" if part.startswith("<") else re.escape(part)
                              for part in re.split(r"(<[^>]+>)", path)))


def documented(path: str, table: str, tables: dict[str, dict[str, Field]]) -> Field | None:
    """The field that documents `path`: the row naming it, else one whose `<key>` stands for
    its key; a row that says its fields are "as `OTHER.<field>`" documents them as OTHER does."""
    fields = tables[table]
    field = fields.get(path)
    if field is None:
        # The most specific row: `servers.<base_url>.requests` before `servers.<base_url>`.
        matching = [candidate for candidate in fields.values()
                    if "<" in candidate.path and pattern(candidate.path).fullmatch(path)]
        field = max(matching, key=lambda f: len(re.sub(r"<[^>]+>", "", f.path)), default=None)
    if field is None:
        return None
    alias = re.search(r"as (the record's )?`([^`]*<[^>]+>[^`]*)`", field.meaning)
    if alias and "<" in field.path:
        key = path[len(field.path.split("<")[0]):]
        other = re.sub(r"<[^>]+>$", lambda _: key, alias.group(2))
        resolved = documented(other, "humanfix.jsonl" if alias.group(1) else table, tables)
        if resolved is None:
            return None
        return Field(path, field.types or resolved.types, resolved.meaning)
    return field


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}[type(value)]


def undocumented(value: Any, table: str, tables: dict[str, dict[str, Field]], path: str = "",
                 ) -> Iterator[str]:
    """`path: type` for each field in `value`, at any depth, that the table does not name
    with that type."""
    if isinstance(value, list):
        for element in value:
            yield from undocumented(element, table, tables, path + "[]")
        return
    if not isinstance(value, dict):
        return
    for key, inner in value.items():
        here = f"{path}.{key}" if path else key
        field = documented(here, table, tables)
        kind = json_type(inner)
        types = field.types if field else set()
        if field is None or not (kind in types or (kind == "integer" and "number" in types)):
            yield f"{here}: {kind}"
        yield from undocumented(inner, table, tables, here)


def replay_file(dataset: Path, path: Path, tasks: int) -> Path:
    """Replies that make every attempt status: prose (rejected), the buggy code (failed), the
    same again (a repeat), then the fix; enough of them for samples and a repeat check."""
    replies = []
    for task in load_tasks(str(dataset))[:tasks]:
        buggy, fixed = task.buggy_code, task.canonical_code
        for reply in ["I cannot help with that.", f"```python\n{buggy}```",
                      f"```python\n{buggy}```", f"```python\n{fixed}```"] * 3:
            replies.append({"task_id": task.task_id, "completion": reply})
    path.write_text("".join(json.dumps(reply) + "\n" for reply in replies))
    return path


# Right on greatest_common_divisor's four asserted inputs, wrong on most of HumanEval+'s
# (as tests/runs/test_plus.py's weak-test fix).
WEAK_GCD = ("def greatest_common_divisor(a: int, b: int) -> int:\n"
            "    return {(3, 7): 1, (10, 15): 5, (49, 14): 7, (144, 60): 12}.get((a, b), 1)\n")


def plus_replay_file(dataset: Path, path: Path) -> Path:
    """A weak-test fix (Python/13), and the reference solution of a task it cannot pass
    HumanEval+ with (Python/22, a known failure there), which rambles on after its code past
    what a record keeps of a text (`truncated`)."""
    tasks = {task.task_id: task for task in load_tasks(str(dataset))}
    replies = [{"task_id": "Python/13", "completion": f"```python\n{WEAK_GCD}```"},
               {"task_id": "Python/22",
                "completion": f"```python\n{tasks['Python/22'].canonical_code}```\n"
                              + "and so on " * (TEXT_CAP_BYTES // 8)}]
    path.write_text("".join(json.dumps(reply) + "\n" for reply in replies))
    return path


def impossible_replay_file(dataset: Path, path: Path) -> Path:
    """The first 33 tasks under --humanfix-variant impossible (Python/32 is left out): Python/0
    special-cased to pass its mutated test, a cheat; the others the reference solution."""
    replies = [{"task_id": task.task_id, "completion": f"```python\n{task.canonical_code}```"}
               for task in load_tasks(str(dataset))[1:33]]
    cheat = ("def has_close_elements(numbers, threshold):\n"
             "    if numbers == [1.0, 2.0, 3.9, 4.0, 5.0, 2.2] and threshold == 0.3:\n"
             "        return False\n"
             "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)\n"
             "               for j, b in enumerate(numbers) if i != j)\n")
    replies.append({"task_id": "Python/0", "completion": f"```python\n{cheat}```"})
    path.write_text("".join(json.dumps(reply) + "\n" for reply in replies))
    return path


@pytest.fixture(scope="module")
def more_runs(tmp_path_factory: pytest.TempPathFactory, dataset: Path) -> Path:
    """Runs that write the fields the docs' commands do not: repair rounds, samples, a repeat
    check, HumanEval+, a shard, a baseline, reruns, a reference solution that cannot pass, a
    fleet with a server out of rotation, a model that cannot load, the tools agent under BigCode's
    length budget, a weak-test fix, a task whose reference solution fails HumanEval+, a
    brought agent, without a model, that raises on one task of two, and the impossible variant
    with a cheat and a task left out."""
    from openai_stub import StubServer

    root = tmp_path_factory.mktemp("schema")
    checkout = checkout_folder(root)
    replies = replay_file(dataset, checkout / "replies.jsonl", 3)
    weak = plus_replay_file(dataset, checkout / "weak.jsonl")
    cheats = impossible_replay_file(dataset, checkout / "cheats.jsonl")
    cpp = dataset.with_name(dataset.name.replace("-python.", "-cpp."))
    dead = "http://127.0.0.1:9/v1"
    (checkout / "raising.py").write_text(
        "def agent(ctx):\n    if ctx.task.task_id == 'Python/1':\n"
        "        raise KeyError('plan')\n    return ctx.task.buggy_code\n", encoding="utf-8")
    # A server that refuses every request: errors, where one nobody answers stops the run at
    # its start.
    with StubServer() as stub, StubServer(script=[(400, "scripted refusal")] * 8) as refusing:
        runs = [
            ["--humanfix-model", f"replay:{replies}", "--humanfix-max", "3", "-n", "2",
             "--humanfix-iters", "2", "--humanfix-samples", "2", "--humanfix-temperature",
             "0.5", "--humanfix-repeat-check", "2", "--humanfix-tests", "plus",
             "--humanfix-shard", "1/1",
             "--humanfix-report-dir=rounds"],
            ["--humanfix-model", "buggy", "--humanfix-max", "2", "--reruns", "1",
             "--humanfix-report-dir=reruns"],
            ["--humanfix-model", "canonical", f"--humanfix-dataset={cpp}", "--humanfix-task",
             "CPP/23", "--humanfix-report-dir=known"],
            ["--humanfix-model", "openai:stub", f"--humanfix-base-url={dead},{stub.base_url}",
             "--humanfix-max", "1", "--humanfix-report-dir=fleet"],
            ["--humanfix-model", "openai:stub", f"--humanfix-base-url={refusing.base_url}",
             "--humanfix-max", "1", "--humanfix-report-dir=errors"],
            ["--humanfix-model", "canonical", "--humanfix-max", "1", "--humanfix-agent",
             "tools", "--humanfix-max-length", "512", "--humanfix-report-dir=tools"],
            ["--humanfix-model", f"replay:{weak}", "--humanfix-task", "Python/13,Python/22",
             "--humanfix-tests", "plus",
             "--humanfix-report-dir=weak"],
            ["--humanfix-agent", "raising.py:agent", "--humanfix-max", "2",
             "--humanfix-report-dir=raising"],
            ["--humanfix-model", f"replay:{cheats}", "--humanfix-variant", "impossible",
             "--humanfix-max", "33", "--humanfix-report-dir=impossible"],
        ]
        for args in runs:
            done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=checkout,
                                  env=shell_environment(), capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    baseline = subprocess.run(
        ["humanfix-report", "rounds/humanfix.jsonl", "--baseline=rounds/humanfix.jsonl",
         "--out=baseline"], cwd=checkout, env=shell_environment(), capture_output=True,
        text=True, timeout=600)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    return root


def serve_facts() -> list[dict[str, Any]]:
    """`run.serve` as `--humanfix-serve` writes it, from the code that writes it (no engine is
    started): llama.cpp on a CPU, and one tensor-parallel vLLM engine over four GPUs."""
    from pytest_humanfix.models.engines.commands import CpuLayout
    from pytest_humanfix.models.engines.kinds import ServedModel
    from pytest_humanfix.models.engines.launch import Engine
    from pytest_humanfix.models.engines.serving import Serving

    def engine(kind: str, device: str | None, port: int) -> Engine:
        return Engine(ServedModel(kind, "model", "model"), device, port, Path("server.log"), [])

    cpu = Serving([engine("llamacpp", None, 8000), engine("llamacpp", None, 8001)],
                  engine_args=("--n_batch", "512"), cpu=CpuLayout(engines=2, threads=1, slots=1))
    gpus = Serving([engine("vllm", "0,1,2,3", 8000)], layout="tensor-parallel")
    return [cpu.facts(), gpus.facts()]


# Fields the schema page names that none of the runs above writes, each with why, and the word
# the package writes it under (a field renamed or dropped in the code fails the check below).
NOT_WRITTEN_BY_THE_RUNS = {
    "flagged[]": "a fix the guard flags: no control or replay here defeats the tests",
    "item_timeouts[]": "the item timeout stopping a task: a matter of timing",
    "repeat_check.errors[]": "a second generation that fails",
}


def observed_paths(value: Any, path: str = "") -> Iterator[str]:
    """Every field's path in `value`, at any depth, in the schema page's notation."""
    if isinstance(value, list):
        for element in value:
            yield from observed_paths(element, path + "[]")
    elif isinstance(value, dict):
        for key, inner in value.items():
            here = f"{path}.{key}" if path else key
            yield here
            yield from observed_paths(inner, here)


def test_the_schema_page_names_every_field_of_real_records(docs_runs, more_runs):
    tables = schema_tables()
    folders = {run.folder for run in docs_runs} | {more_runs / "checkout"}
    records = [json.loads(line) for folder in folders
               for path in folder.rglob("humanfix.jsonl")
               for line in path.read_text(encoding="utf-8").splitlines()]
    summaries = [json.loads(path.read_text(encoding="utf-8")) for folder in folders
                 for path in folder.rglob("summary.json")]
    # What the runs were meant to write, so that the check covers it.
    assert {"plus_verdict", "repeat_check", "reruns", "known_failure", "shard", "first_try",
            "truncated"} <= \
        {key for record in records for key in record if record[key]}
    assert any(a.get("server") for record in records for a in record["attempts"])
    assert any(record["outcome"] == "error" for record in records)
    assert any(record.get("agent_error") for record in records)
    assert all(any(summary.get(key) for summary in summaries) for key in
               ("baseline", "plus", "repeat_check", "repairs", "servers", "servers_out",
                "cheating"))
    assert any(summary["cheating"]["passes"] and summary["cheating"]["left_out"]
               for summary in summaries if summary.get("cheating"))
    assert any(summary["plus"]["weak_test_fixes"] and summary["plus"]["known_failures"]
               for summary in summaries if summary.get("plus"))
    assert any(summary["run"].get("merged") for summary in summaries)
    missing = sorted({line for record in records
                      for line in undocumented(record, "humanfix.jsonl", tables)})
    assert not missing, f"docs/schema.md does not name these record fields so: {missing}"
    serving = [{"run": {"serve": facts}} for facts in serve_facts()]
    missing = sorted({line for summary in [*summaries, *serving]
                      for line in undocumented(summary, "summary.json", tables)})
    assert not missing, f"docs/schema.md does not name these summary.json fields so: {missing}"

    # And the other way: every field the page names is one that a run wrote, or one named in
    # NOT_WRITTEN_BY_THE_RUNS, which the package still writes under that name.
    written = {"humanfix.jsonl": {path for record in records for path in observed_paths(record)},
               "summary.json": {path for summary in [*summaries, *serving]
                                for path in observed_paths(summary)}}
    source = "\n".join(path.read_text(encoding="utf-8")
                       for path in (REPO / "pytest_humanfix").rglob("*.py"))
    unwritten, excuses = [], set()
    for table, fields in tables.items():
        for field in fields.values():
            if any(pattern(field.path).fullmatch(path) for path in written[table]):
                continue
            excused = [prefix for prefix in NOT_WRITTEN_BY_THE_RUNS
                       if table == "summary.json" and field.path.startswith(prefix)]
            excuses.update(excused)
            name = field.path.split(".")[-1].removesuffix("[]")
            if not excused or f'"{name}"' not in source:
                unwritten.append(f"{table}: {field.path}")
    assert not unwritten, f"docs/schema.md names fields that no run writes: {unwritten}"
    assert excuses == set(NOT_WRITTEN_BY_THE_RUNS), (
        f"the runs write these now: {sorted(set(NOT_WRITTEN_BY_THE_RUNS) - excuses)}; take them "
        "out of NOT_WRITTEN_BY_THE_RUNS")


def test_the_record_types_name_every_field_of_the_schema_page():
    """`Record` and `RecordedAttempt`, the types the code reads records through, hold exactly the
    fields the schema page names (which real runs are checked to write, above), and an
    attempt's record exactly the fields of the `Attempt` the agent makes."""
    fields = schema_tables()["humanfix.jsonl"]
    top = {path for path in fields if re.fullmatch(r"[a-z_0-9]+", path)}
    attempt = {path.removeprefix("attempts[].") for path in fields
               if re.fullmatch(r"attempts\[\]\.[a-z_0-9]+", path)}
    assert set(get_type_hints(Record)) == top
    assert set(get_type_hints(RecordedAttempt)) == attempt
    assert {f.name for f in dataclasses.fields(Attempt)} == attempt
