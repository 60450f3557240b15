"""The house's rules for pytest_humanfix, read from the source (nothing is imported or run): no
module over 450 lines, no import cycle, a short docstring on every module. Each failure names the
modules that break the rule. What a plugin import may load is tests/runs/test_idle.py's to check.
The rules and why: docs/architecture.md and issue 35."""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_humanfix"
DOCS = PACKAGE.parent / "docs"
MAX_LINES = 450
# "What it is and why in a few lines" (2-8 is the aim), with a line of slack for the link to
# the docs page; anything longer is an essay that belongs on that page.
MAX_DOCSTRING_LINES = 10
# The BigCode harness's imports, put before every candidate as text: its lines count in the line
# numbers of the candidate's tracebacks, so it holds no docstring (sandbox/inside/__init__.py).
VERBATIM_PROGRAMS = {"pytest_humanfix.sandbox.inside.prelude"}


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imported(module: str, path: Path) -> set[str]:
    """The package's modules that `module` imports anywhere in its file: at the top, inside
    functions (lazy imports) and under `if TYPE_CHECKING:` alike. A type-only import still ties
    the two modules together: neither reads, or type-checks, without the other."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                # `.` is the module's own package: the module itself for an __init__.py.
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                # `from package import submodule` imports the submodule; a name, its module.
                submodule = f"{source}.{alias.name}"
                targets.add(submodule if submodule in MODULES else source)
    targets = {target for target in targets if target in MODULES and target != module}
    if is_package:
        # A package's __init__ re-exporting its own modules runs before them: not a cycle.
        targets = {target for target in targets if not target.startswith(module + ".")}
    return targets


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module: each is an import cycle."""
    reach: dict[str, set[str]] = {}
    for start in edges:
        seen, todo = set(), [start]
        while todo:
            for target in edges[todo.pop()] - seen:
                seen.add(target)
                todo.append(target)
        reach[start] = seen
    groups = {frozenset(m for m in reach[start] if start in reach[m]) | {start}
              for start in edges}
    return sorted(sorted(group) for group in groups if len(group) > 1)


def test_no_module_is_over_450_lines():
    long = {name: lines for name, path in MODULES.items()
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, (f"modules over {MAX_LINES} lines (split each by its concerns, "
                        "docs/architecture.md): "
                        + ", ".join(f"{n} ({c})" for n, c in long.items()))


def test_no_import_cycle_between_the_package_modules():
    cycles = _cycles({name: _imported(name, path) for name, path in MODULES.items()})
    assert cycles == [], ("import cycles, type-only imports included (move what both sides need "
                          "into a module of its own): "
                          + "; ".join(" <-> ".join(cycle) for cycle in cycles))


def test_every_module_has_a_short_docstring():
    missing, long = [], {}
    for name, path in MODULES.items():
        if name in VERBATIM_PROGRAMS:
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not docstring:
            missing.append(name)
        elif (lines := len(docstring.splitlines())) > MAX_DOCSTRING_LINES:
            long[name] = lines
    assert missing == [], f"modules without a docstring (say what it is and why): {missing}"
    assert long == {}, (f"module docstrings over {MAX_DOCSTRING_LINES} lines (keep what and why, "
                        "move history and figures to the docs page it links): "
                        + ", ".join(f"{n} ({c})" for n, c in long.items()))


def _anchor(heading: str) -> str:
    """The id mkdocs gives a heading (Python-Markdown's toc `slugify`, on its text)."""
    text = unicodedata.normalize("NFKD", heading.replace("`", ""))
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode("ascii")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in page.read_text(encoding="utf-8").splitlines()
            if re.match(r"#{1,6} ", line)}


def test_the_docs_pages_the_code_links_exist_with_their_sections():
    broken = []
    for name, path in MODULES.items():
        for page, anchor in re.findall(r"docs/([\w-]+\.md)(?:#([\w-]+))?",
                                       path.read_text(encoding="utf-8")):
            if not (DOCS / page).is_file():
                broken.append(f"{name}: docs/{page}")
            elif anchor and anchor not in _anchors(DOCS / page):
                broken.append(f"{name}: docs/{page}#{anchor}")
    assert broken == [], f"links to docs pages or sections that do not exist: {broken}"


# The rules' own logic, on made-up graphs and files, so that a green house is not a blind one.

def test_a_cycle_is_found_and_a_chain_is_not():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


LAZY_AND_TYPE_ONLY = """\
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from {dots}records import Record
def lazy():
    from pytest_humanfix import settings
    import pytest_humanfix.sandbox.fresh
"""


def test_lazy_and_type_only_imports_are_edges(tmp_path):
    module = tmp_path / "dataset.py"
    module.write_text(LAZY_AND_TYPE_ONLY.format(dots="."))
    assert _imported("pytest_humanfix.dataset", module) == {
        "pytest_humanfix.records", "pytest_humanfix.settings", "pytest_humanfix.sandbox.fresh"}


def test_a_package_init_resolves_dots_from_itself_and_may_import_its_own_modules(tmp_path):
    module = tmp_path / "__init__.py"
    module.write_text(LAZY_AND_TYPE_ONLY.format(dots=".."))
    assert _imported("pytest_humanfix.sandbox", module) == {
        "pytest_humanfix.records", "pytest_humanfix.settings"}


def test_a_heading_anchor_is_the_one_mkdocs_gives():
    assert _anchor(" HumanEvalFix+ (`--humanfix-tests plus`)") == "humanevalfix-humanfix-tests-plus"
    assert _anchor(" One pass@1") == "one-pass1"
    assert _anchor(" llama.cpp on a CPU") == "llamacpp-on-a-cpu"


TESTS = PACKAGE.parent / "tests"
# Rows of tests/README.md's table that stand for a whole folder of like modules.
FOLDER_ROWS = re.compile(r"^(?P<folder>[\w/]+)/(\*\.py)?$")


def _test_table() -> dict[str, list[str]]:
    """tests/README.md's "Where a module's unit tests are": each module named in a row, and
    the test files of that row."""
    table = (TESTS / "README.md").read_text(encoding="utf-8").split(
        "## Where a module's unit tests are", 1)[1]
    rows: dict[str, list[str]] = {}
    for line in table.splitlines():
        cells = line.split("|")
        if len(cells) < 4 or not cells[1].strip().startswith("`"):
            continue
        files = re.findall(r"`([\w/]+\.py)`", cells[2])
        for module in re.findall(r"`([^`]+)`", cells[1]):
            rows[module] = files
    return rows


def test_every_module_names_its_unit_tests_and_they_exist():
    rows = _test_table()
    folders = [match["folder"] for name in rows if (match := FOLDER_ROWS.match(name))]
    unnamed = []
    for path in MODULES.values():
        relative = path.relative_to(PACKAGE).as_posix()
        if path.name in ("__init__.py", "__main__.py") or relative in rows:
            continue
        if not any(relative.startswith(folder + "/") for folder in folders):
            unnamed.append(relative)
    assert unnamed == [], (
        "modules without a row in tests/README.md's \"Where a module's unit tests are\" (write "
        "a unit test of the module's own logic under tests/unit/<package>/ and name it there): "
        + ", ".join(unnamed))
    missing = sorted({name for files in rows.values() for name in files
                      if not (TESTS / name).is_file()})
    assert missing == [], f"tests/README.md names test files that do not exist: {missing}"
    assert all(files for files in rows.values()), "a row of tests/README.md names no test file"


def test_the_test_table_reader_sees_rows_folders_and_files():
    rows = _test_table()
    assert rows["protocol.py"] == ["unit/test_protocol_type.py"]
    assert "runs/test_reports.py" in rows["reporting/files.py"]
    assert FOLDER_ROWS.match("languages/*.py") and FOLDER_ROWS.match("sandbox/inside/")
    assert not FOLDER_ROWS.match("records.py")
