"""Which agent repairs the tasks: a built-in one (`repair`, `tools`), one named by
`--humanfix-agent module:callable` or `path/to/file.py:callable`, or the `humanfix_agent` fixture
of a conftest.py. Each process finds it at start, before any task, so that an agent that cannot
be imported is a one-line usage error, not 164 failed tasks; the name found is the protocol's
`agent`, by its place and content (`identity`), so records of two agents are never resumed
as one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ..settings import BUILT_IN_AGENTS, Settings

FIXTURE = "humanfix_agent"
HASH_CHARS = 12  # of the sha256 of a brought agent's file, in its identity
# The agents this process settled, by identity: the settings name an agent by it from then on.
_SETTLED: dict[str, object] = {}


class AgentLoadError(Exception):
    """The agent named cannot be loaded; the message says why and what to do."""


def is_graph(agent: object) -> bool:
    """A compiled LangGraph graph, told by its interface so that langgraph is not imported."""
    return callable(getattr(agent, "invoke", None)) and callable(getattr(agent, "get_graph", None))


def is_agent(agent: object) -> bool:
    return is_graph(agent) or callable(agent)


def conftest_agent(config: pytest.Config) -> str | None:
    """`<conftest.py>::humanfix_agent` for the conftest.py nearest the tasks that defines the
    fixture (it overrides the plugin's, as any fixture is overridden), else None."""
    start = config.invocation_params.dir
    found = [Path(module.__file__) for module in config.pluginmanager.get_plugins()
             if getattr(module, "__file__", None) and Path(module.__file__).name == "conftest.py"
             and FIXTURE in vars(module) and start.is_relative_to(Path(module.__file__).parent)]
    if not found:
        return None
    nearest = max(found, key=lambda path: len(path.parts))
    if nearest.is_relative_to(config.rootpath):
        nearest = nearest.relative_to(config.rootpath)
    return f"{nearest}::{FIXTURE}"


def _module_of_file(spec: str, file: Path) -> Any:
    name = f"humanfix_agent_{file.stem}"
    module_spec = importlib.util.spec_from_file_location(name, file)
    if module_spec is None or module_spec.loader is None:
        raise AgentLoadError(f"--humanfix-agent {spec}: {file} cannot be imported as a Python "
                             "module; give a .py file.")
    module = importlib.util.module_from_spec(module_spec)
    # Registered before it runs, as an import would: dataclasses and pickling look it up.
    sys.modules[name] = module
    # Its folder first on the path, as `python file.py` puts it: it imports its siblings.
    if str(file.parent) not in sys.path:
        sys.path.insert(0, str(file.parent))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise AgentLoadError(f"--humanfix-agent {spec}: importing {file} raised "
                             f"{_where(exc)}; fix the file (python {file} shows the whole "
                             "traceback).") from None
    return module


def _where(exc: BaseException) -> str:
    """The exception's last line, and where it was raised."""
    said = "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
    if isinstance(exc, SyntaxError):  # raised by the compiler, from no frame of the file
        return f"{said} ({exc.filename}:{exc.lineno})"
    frames = traceback.extract_tb(exc.__traceback__)
    return said + (f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else "")


def _find_file(spec: str, target: str, folders: Sequence[Path]) -> Path:
    path = Path(target).expanduser()
    candidates = [path] if path.is_absolute() else [folder / path for folder in folders]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise AgentLoadError(f"--humanfix-agent {spec}: there is no file {target} (looked in "
                         f"{', '.join(str(folder) for folder in folders)}); give the path of "
                         "the .py file that defines the agent, or module:callable.")


@dataclasses.dataclass(frozen=True)
class Loaded:
    """An agent, the file that defines it (None for a module without one) and the module's
    name where it was imported by name."""

    agent: object
    file: Path | None
    module: str | None


def load_agent(spec: str, folders: tuple[Path, ...]) -> object:
    """The agent `spec` names: a callable that takes the context, or a compiled LangGraph
    graph; a relative file path is looked for in `folders` in turn."""
    return _load(spec, folders).agent


@functools.cache
def _load(spec: str, folders: tuple[Path, ...]) -> Loaded:
    target, _, name = spec.rpartition(":")
    imported: str | None = None
    if target.endswith(".py") or "/" in target:
        file = _find_file(spec, target, folders)
        module, where = _module_of_file(spec, file), str(file)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            raise AgentLoadError(
                f"--humanfix-agent {spec}: there is no module {exc.name!r}; install it, put "
                "its folder on PYTHONPATH, or give path/to/file.py:callable.") from None
        except Exception as exc:
            raise AgentLoadError(f"--humanfix-agent {spec}: importing {target} raised "
                                 f"{_where(exc)}; fix the module.") from None
        where = getattr(module, "__file__", None) or target
        imported = target
    agent: object = module
    for part in name.split("."):
        if not hasattr(agent, part):
            defined = sorted(key for key, value in vars(module).items()
                             if is_agent(value) and not key.startswith("_")
                             and getattr(value, "__module__", None) == module.__name__)
            raise AgentLoadError(
                f"--humanfix-agent {spec}: {where} has no {name}; name the agent after the "
                f"colon (callables defined there: {', '.join(defined) or 'none'}).")
        agent = getattr(agent, part)
    if not is_agent(agent):
        raise AgentLoadError(
            f"--humanfix-agent {spec}: {name} in {where} is a {type(agent).__name__}, not an "
            "agent; name a function that takes the context and returns the code, or a "
            "compiled LangGraph graph.")
    source = getattr(module, "__file__", None)
    return Loaded(agent, Path(source).resolve() if source else None, imported)


def identity(spec: str, folders: tuple[Path, ...], rootdir: Path) -> str:
    """What the protocol's `agent` records of a brought agent: where it is, as the file
    relative to the rootdir (else the module's name, else the absolute file), its callable,
    and a hash of its file, e.g. `agents/mine.py:fix@3f2a9c01b7de`. However the path was
    typed (relative, absolute, as a module), one source is one agent, and an edit of that file
    makes another, which --humanfix-resume then refuses. Only the file that holds the callable
    is hashed: an edit in another module it imports keeps the identity."""
    loaded = _load(spec, folders)
    name = spec.rpartition(":")[2]
    if loaded.file is None:  # a namespace package: no file to hash
        return spec
    digest = hashlib.sha256(loaded.file.read_bytes()).hexdigest()[:HASH_CHARS]
    root = rootdir.resolve()
    if loaded.file.is_relative_to(root):
        where = loaded.file.relative_to(root).as_posix()
    else:
        where = loaded.module or str(loaded.file)
    return f"{where}:{name}@{digest}"


def agent_name(agent: str) -> str:
    """An agent's identity without its hash, as messages name it."""
    return agent.rpartition("@")[0] if is_brought(agent) and "@" in agent else agent


def agent_folders(config: pytest.Config) -> tuple[Path, ...]:
    """Where a relative agent file is looked for: the invocation folder, then the ini file's."""
    ini = config.inipath.parent if config.inipath else config.rootpath
    return tuple(dict.fromkeys((config.invocation_params.dir, ini)))


def agent_of(config: pytest.Config, agent: str) -> object:
    """The plugin's humanfix_agent fixture: the agent --humanfix-agent names, None for a
    built-in one."""
    if agent.endswith("::" + FIXTURE):
        raise AgentLoadError(f"{agent.removesuffix('::' + FIXTURE)} defines {FIXTURE}, but not "
                             "as a fixture: decorate it with @pytest.fixture and return the "
                             "agent from it.")
    if agent in _SETTLED:
        return _SETTLED[agent]
    return load_agent(agent, agent_folders(config)) if is_brought(agent) else None


def is_brought(agent: str) -> bool:
    return agent not in BUILT_IN_AGENTS


def settle_agent(config: pytest.Config, settings: Settings) -> Settings:
    """The settings with the agent this process runs: a conftest.py's fixture wins over the
    option, as a fixture override does. Loads a named agent now, and refuses what a brought
    agent cannot do, each as a usage error."""
    fixture = conftest_agent(config)
    if fixture is not None:
        settings = dataclasses.replace(settings, agent=fixture)
    elif is_brought(settings.agent):
        folders = agent_folders(config)
        try:
            agent = load_agent(settings.agent, folders)
        except AgentLoadError as exc:
            raise pytest.UsageError(str(exc)) from None
        settled = identity(settings.agent, folders, config.rootpath)
        _SETTLED[settled] = agent
        settings = dataclasses.replace(settings, agent=settled)
    if not is_brought(settings.agent):
        return settings
    if settings.prompt in ("completion", "primed"):
        raise pytest.UsageError(
            f"--humanfix-agent {settings.agent} talks with the model through ctx.model.chat, "
            f"and --humanfix-prompt {settings.prompt} does not: use --humanfix-prompt chat (or "
            "auto).")
    if settings.repeat_check:
        raise pytest.UsageError(
            f"--humanfix-repeat-check asks the built-in agent's first reply again, which "
            f"--humanfix-agent {settings.agent} does not make: leave the repeat check out, or "
            "run it with --humanfix-agent repair.")
    return settings
