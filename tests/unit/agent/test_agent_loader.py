"""Finding the agent that repairs the tasks (agent/loader): a built-in one, one that
--humanfix-agent names as module:callable or file.py:callable, or a conftest.py's fixture; each
way it cannot be loaded is an error that says what to do."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from pytest_humanfix.agent.loader import (
    FIXTURE,
    AgentLoadError,
    agent_folders,
    agent_name,
    agent_of,
    conftest_agent,
    identity,
    is_agent,
    is_brought,
    is_graph,
    load_agent,
    run_as,
    settle_agent,
)
from pytest_humanfix.settings import Settings


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch: pytest.MonkeyPatch):
    """Undoes what loading an agent file does to the interpreter: its folder on sys.path, and
    the agent modules and their siblings in sys.modules (only those: a module of the plugin
    imported for the first time here must stay the one its classes come from)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [n for n in sys.modules
                 if n.startswith(("humanfix_agent_", "helper_of_", "loader_ident_pkg"))]:
        del sys.modules[name]


def agent_file(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


class Graphlike:
    def invoke(self, state, context=None):
        return state

    def get_graph(self):
        return None


def test_a_function_and_a_graph_are_agents_and_only_the_graph_is_a_graph():
    assert is_agent(len) and not is_graph(len)
    assert is_agent(Graphlike()) and is_graph(Graphlike())
    # Told by its interface: an invoke alone is not a graph, and data is no agent.
    assert not is_graph(SimpleNamespace(invoke=lambda state: state))
    assert not is_agent(3) and not is_agent("repair")


def test_the_built_in_agents_are_not_brought():
    assert not is_brought("repair") and not is_brought("tools")
    assert is_brought("my_agents:fix")


def test_a_file_agent_is_loaded_from_the_folders_in_turn_and_imports_its_siblings(tmp_path):
    first, second = tmp_path / "invocation", tmp_path / "ini"
    first.mkdir(), second.mkdir()
    agent_file(second, "helper_of_loader_test.py", "ANSWER = 'fixed code'\n")
    agent_file(second, "loader_agent_a.py", """
        from helper_of_loader_test import ANSWER

        def fix(ctx):
            return ANSWER
        """)
    agent = load_agent("loader_agent_a.py:fix", (first, second))
    assert callable(agent) and agent(None) == "fixed code"


def test_a_dotted_name_reaches_an_attribute_of_the_module(tmp_path):
    agent_file(tmp_path, "loader_agent_b.py", """
        class Agents:
            @staticmethod
            def fix(ctx):
                return None
        """)
    agent = load_agent(f"{tmp_path}/loader_agent_b.py:Agents.fix", ())
    assert agent.__qualname__ == "Agents.fix"


def test_a_module_agent_is_imported_by_name():
    import json

    assert load_agent("json:dumps", ()) is json.dumps


def test_a_missing_file_names_where_it_was_looked_for(tmp_path):
    with pytest.raises(AgentLoadError, match="there is no file agents/absent.py") as raised:
        load_agent("agents/absent.py:fix", (tmp_path,))
    assert str(tmp_path) in str(raised.value) and "module:callable" in str(raised.value)


def test_a_missing_module_says_how_to_make_it_importable():
    with pytest.raises(AgentLoadError, match="no module 'no_such_agent_module_x'") as raised:
        load_agent("no_such_agent_module_x:fix", ())
    assert "PYTHONPATH" in str(raised.value)


def test_a_file_that_raises_on_import_names_the_line_and_is_not_left_imported(tmp_path):
    path = agent_file(tmp_path, "loader_agent_c.py", "x = 1\nraise RuntimeError('no key')\n")
    with pytest.raises(AgentLoadError) as raised:
        load_agent(f"{path}:fix", ())
    message = str(raised.value)
    assert f"RuntimeError: no key ({path}:2)" in message and f"python {path}" in message
    assert "humanfix_agent_loader_agent_c" not in sys.modules


def test_a_file_with_a_syntax_error_names_its_line(tmp_path):
    path = agent_file(tmp_path, "loader_agent_d.py", "def fix(ctx)\n    return None\n")
    with pytest.raises(AgentLoadError, match=f"SyntaxError: .*\\({path}:1\\)"):
        load_agent(f"{path}:fix", ())


def test_a_missing_callable_lists_the_agents_the_file_defines(tmp_path):
    path = agent_file(tmp_path, "loader_agent_e.py", """
        import json

        def fix(ctx):
            return None

        def _private(ctx):
            return None

        class Agent:
            pass

        LIMIT = 3
        """)
    with pytest.raises(AgentLoadError, match="has no repair") as raised:
        load_agent(f"{path}:repair", ())
    # Its own public callables, not the ones it imported, not its data.
    assert "(callables defined there: Agent, fix)" in str(raised.value)


def test_a_name_that_is_not_an_agent_says_what_it_is(tmp_path):
    path = agent_file(tmp_path, "loader_agent_f.py", "LIMIT = 3\n")
    with pytest.raises(AgentLoadError, match="LIMIT in .* is a int, not an agent"):
        load_agent(f"{path}:LIMIT", ())


def config(tmp_path: Path, *plugins: object, inipath: Path | None = None) -> pytest.Config:
    """The little of pytest's config the loader reads."""
    fake = SimpleNamespace(
        invocation_params=SimpleNamespace(dir=tmp_path), rootpath=tmp_path, inipath=inipath,
        pluginmanager=SimpleNamespace(get_plugins=lambda: set(plugins)))
    return fake  # type: ignore[return-value]


FIXTURE_SOURCE = f"""import pytest


@pytest.fixture
def {FIXTURE}():
    return None
"""


def conftest_module(path: Path, with_fixture: bool = True,
                    source: str = FIXTURE_SOURCE) -> ModuleType:
    """A conftest.py written in `path` and imported, as pytest imports it."""
    path.mkdir(parents=True, exist_ok=True)
    file = path / "conftest.py"
    file.write_text(source if with_fixture else "LIMIT = 3\n", encoding="utf-8")
    module = ModuleType("conftest")
    module.__file__ = str(file)
    exec(compile(file.read_text(encoding="utf-8"), str(file), "exec"), vars(module))
    return module


def test_the_folders_are_the_invocation_folder_then_the_ini_files(tmp_path):
    ini = tmp_path / "project"
    assert agent_folders(config(tmp_path, inipath=ini / "pytest.ini")) == (tmp_path, ini)
    # Without an ini file, the root folder, named once when it is the invocation folder.
    assert agent_folders(config(tmp_path)) == (tmp_path,)


def test_the_nearest_conftest_defining_the_fixture_is_the_agent(tmp_path):
    tasks = tmp_path / "tasks"
    deeper, elsewhere = tasks / "deeper", tmp_path / "elsewhere"
    plugins = (conftest_module(tmp_path), conftest_module(tasks),
               conftest_module(deeper), conftest_module(elsewhere),
               conftest_module(tasks / "x", with_fixture=False))
    fake = config(tmp_path, *plugins)
    fake.invocation_params.dir = deeper / "below"
    assert conftest_agent(fake) == \
        f"tasks/deeper/conftest.py::{FIXTURE}@{sha12(deeper / 'conftest.py')}"
    assert conftest_agent(config(tmp_path, conftest_module(tasks, with_fixture=False))) is None


def test_the_fixture_of_the_plugin_gives_none_for_a_built_in_agent(tmp_path):
    assert agent_of(config(tmp_path), "repair") is None


def test_a_conftest_agent_the_plugin_must_load_was_not_a_fixture(tmp_path):
    with pytest.raises(AgentLoadError, match="tests/conftest.py defines humanfix_agent, but "
                                             "not as a fixture: decorate it with @pytest"):
        agent_of(config(tmp_path), f"tests/conftest.py::{FIXTURE}@3f2a9c01b7de")


def test_settle_keeps_a_built_in_agent_and_lets_a_conftest_fixture_win(tmp_path):
    settings = Settings(model="canonical", prompt="completion")
    assert settle_agent(config(tmp_path), settings) is settings
    with pytest.raises(pytest.UsageError, match="use --humanfix-prompt chat"):
        settle_agent(config(tmp_path, conftest_module(tmp_path)), settings)
    settled = settle_agent(config(tmp_path, conftest_module(tmp_path)),
                           Settings(model="canonical", agent="repair"))
    assert settled.agent == f"conftest.py::{FIXTURE}@{sha12(tmp_path / 'conftest.py')}"


def test_a_fixture_agent_is_its_source_the_conftest_and_the_fixtures_own_module(
        tmp_path, monkeypatch):
    """An edit of the conftest.py, or of the module its fixture function is imported from,
    makes another agent; an edit of a module the fixture only calls does not, as for a file
    agent (only the file that holds the callable is hashed)."""
    first = conftest_agent(config(tmp_path, conftest_module(tmp_path)))
    edited = FIXTURE_SOURCE.replace("return None", "return None  # edited")
    second = conftest_agent(config(tmp_path, conftest_module(tmp_path, source=edited)))
    assert first != second == f"conftest.py::{FIXTURE}@{sha12(tmp_path / 'conftest.py')}"
    # The fixture defined in a module of the project's and imported by the conftest.py.
    monkeypatch.syspath_prepend(str(tmp_path))
    fixtures = tmp_path / "loader_ident_pkg"
    fixtures.mkdir()
    (fixtures / "__init__.py").write_text("", encoding="utf-8")
    (fixtures / "called.py").write_text("def fix(ctx):\n    return None\n", encoding="utf-8")
    defined = fixtures / "fixtures.py"
    defined.write_text(FIXTURE_SOURCE.replace("return None", "from .called import fix\n"
                                              "    return fix"), encoding="utf-8")
    tests = tmp_path / "tests"
    importing = f"from loader_ident_pkg.fixtures import {FIXTURE}  # noqa: F401\n"

    def found() -> str | None:
        fake = config(tmp_path, conftest_module(tests, source=importing))
        fake.invocation_params.dir = tests
        return conftest_agent(fake)

    before = found()
    both = hashlib.sha256((tests / "conftest.py").read_bytes() + defined.read_bytes())
    assert before == f"tests/conftest.py::{FIXTURE}@{both.hexdigest()[:12]}"
    defined.write_text(defined.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    sys.modules.pop("loader_ident_pkg.fixtures")
    after = found()
    assert after != before
    (fixtures / "called.py").write_text("def fix(ctx):\n    return 1\n", encoding="utf-8")
    assert found() == after


def test_settle_makes_an_agent_that_cannot_load_a_usage_error(tmp_path):
    with pytest.raises(pytest.UsageError, match="there is no file absent.py"):
        settle_agent(config(tmp_path), Settings(model="canonical", agent="absent.py:fix"))


def test_settle_refuses_the_repeat_check_for_a_brought_agent(tmp_path):
    agent_file(tmp_path, "loader_agent_g.py", "def fix(ctx):\n    return None\n")
    settings = Settings(model="canonical", agent="loader_agent_g.py:fix", repeat_check=2)
    with pytest.raises(pytest.UsageError, match="leave the repeat check out"):
        settle_agent(config(tmp_path), settings)
    fine = Settings(model="canonical", agent="loader_agent_g.py:fix")
    assert settle_agent(config(tmp_path), fine).agent.startswith("loader_agent_g.py:fix@")


def sha12(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def test_an_agent_is_its_file_under_the_rootdir_and_its_source_however_it_was_typed(
        tmp_path, monkeypatch):
    package = tmp_path / "loader_ident_pkg"
    package.mkdir()
    path = agent_file(package, "agent_h.py", "def fix(ctx):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = f"loader_ident_pkg/agent_h.py:fix@{sha12(path)}"
    for typed in ("loader_ident_pkg/agent_h.py:fix", f"{path}:fix",
                  "./loader_ident_pkg/agent_h.py:fix", "loader_ident_pkg.agent_h:fix"):
        assert identity(typed, (tmp_path,), tmp_path) == expected, typed
    # Outside the rootdir: the module's name where it was imported by one, else the file.
    elsewhere = tmp_path / "root"
    elsewhere.mkdir()
    assert identity("loader_ident_pkg.agent_h:fix", (tmp_path,), elsewhere) == \
        f"loader_ident_pkg.agent_h:fix@{sha12(path)}"
    assert identity(f"{path}:fix", (), elsewhere) == f"{path}:fix@{sha12(path)}"


def test_an_edited_agent_is_another_agent(tmp_path):
    path = agent_file(tmp_path, "loader_agent_i.py", "def fix(ctx):\n    return None\n")
    before = identity("loader_agent_i.py:fix", (tmp_path,), tmp_path)
    path.write_text("def fix(ctx):\n    return 'changed'\n", encoding="utf-8")
    after = identity("loader_agent_i.py:fix", (tmp_path,), tmp_path)
    assert before != after and after == f"loader_agent_i.py:fix@{sha12(path)}"
    assert agent_name(after) == "loader_agent_i.py:fix" and agent_name("repair") == "repair"


def test_settled_the_settings_name_the_agent_by_identity_and_it_is_found_by_it(tmp_path):
    path = agent_file(tmp_path, "loader_agent_j.py", "def fix(ctx):\n    return 'code'\n")
    settled = settle_agent(config(tmp_path / "sub"),
                           Settings(model="canonical", agent=f"{path}:fix"))
    assert settled.agent == f"{path}:fix@{sha12(path)}"  # rootdir tmp_path/sub: outside it
    rooted = config(tmp_path)
    settled = settle_agent(rooted, Settings(model="canonical", agent=f"{path}:fix"))
    assert settled.agent == f"loader_agent_j.py:fix@{sha12(path)}"
    assert agent_of(rooted, settled.agent)(None) == "code"


def test_a_worker_runs_under_the_identity_the_controller_fixed(tmp_path):
    """A worker that starts after the agent's file was edited finds another identity; it takes
    the controller's, and the agent is found by it."""
    path = agent_file(tmp_path, "loader_agent_k.py", "def fix(ctx):\n    return 'code'\n")
    spec = Settings(model="canonical", agent="loader_agent_k.py:fix")
    controller = settle_agent(config(tmp_path), spec).agent
    path.write_text("def fix(ctx):\n    return 'edited'\n", encoding="utf-8")
    worker = settle_agent(config(tmp_path), spec)
    assert worker.agent != controller  # what such a worker recorded before
    settled = run_as(worker, controller)
    assert settled.agent == controller
    # The agent this process loaded, found under the run's identity.
    assert agent_of(config(tmp_path), settled.agent) is agent_of(config(tmp_path), worker.agent)
    assert run_as(worker, None) is worker  # no identity sent: a runner without a controller
