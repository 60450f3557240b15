"""Which agent repairs the tasks: a built-in one (`repair`, `tools`), one named by
`--humanfix-agent module:callable` or `path/to/file.py:callable`, or the `humanfix_agent` fixture
of a conftest.py. Each process finds it at start, before any task, so that an agent that cannot
be imported is a one-line usage error, not 164 failed tasks; the name the controller finds is
the protocol's `agent` for the whole run, by its place and content (`identity`,
`fixture_identity`), so records of two agents are never resumed as one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ..settings import BUILT_IN_AGENTS, Settings

FIXTURE = "humanfix_agent"
HASH_CHARS = 12  # of the sha256 of a brought agent's source files, in its identity
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
    """The identity of the humanfix_agent fixture of the conftest.py nearest the tasks that
    defines one (it overrides the plugin's, as any fixture is overridden), else None."""
    start = config.invocation_params.dir
    found = [module for module in config.pluginmanager.get_plugins()
             if getattr(module, "__file__", None) and Path(module.__file__).name == "conftest.py"
             and FIXTURE in vars(module) and start.is_relative_to(Path(module.__file__).parent)]
    if not found:
        return None
    nearest = max(found, key=lambda module: len(Path(module.__file__).parts))
    return fixture_identity(Path(nearest.__file__), vars(nearest)[FIXTURE], config.rootpath)


def fixture_identity(conftest: Path, fixture: Callable[..., object], rootdir: Path) -> str:
    """What the protocol's `agent` records of a conftest.py's `fixture`: the conftest.py relative
    to the rootdir, the fixture's name, and a hash of its source, which is the conftest.py and,
    for a fixture function imported there from another module, that module's file too, e.g.
    `tests/conftest.py::humanfix_agent@3f2a9c01b7de`. An edit of either makes another agent,
    which --humanfix-resume then refuses; as for a file agent, an edit in a module the fixture
    only calls keeps the identity."""
    path = conftest.resolve()
    files = [path]
    try:  # a fixture function, or what a fixture decorator wraps; else it has no source file
        defined = inspect.getsourcefile(inspect.unwrap(fixture))
    except TypeError:
        defined = None
    if defined and Path(defined).resolve() != path:
        files.append(Path(defined).resolve())
    root = rootdir.resolve()
    where = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    return f"{where}::{FIXTURE}@{_digest(files)}"


def _digest(files: Sequence[Path]) -> str:
    source = hashlib.sha256()
    for file in files:
        source.update(file.read_bytes())
    return source.hexdigest()[:HASH_CHARS]


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
    digest = _digest([loaded.file])
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
    if agent_name(agent).endswith("::" + FIXTURE):
        raise AgentLoadError(f"{agent_name(agent).removesuffix('::' + FIXTURE)} defines "
                             f"{FIXTURE}, but not as a fixture: decorate it with @pytest.fixture "
                             "and return the agent from it.")
    if agent in _SETTLED:
        return _SETTLED[agent]
    return load_agent(agent, agent_folders(config)) if is_brought(agent) else None


def is_brought(agent: str) -> bool:
    return agent not in BUILT_IN_AGENTS


def settle_agent(config: pytest.Config, settings: Settings) -> Settings:
    """The settings with the agent this process runs: a conftest.py's fixture wins over the
    option, as a fixture override does. Loads a named agent now, and refuses what a brought
    agent cannot do, each as a usage error. A worker then takes the run's identity from the
    controller (`run_as`)."""
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


def run_as(settings: Settings, identity: str | None) -> Settings:
    """A worker's settings with the agent's identity the controller fixed for the whole run
    (sent in the run's state; None: none was), which this process's own may not be: a worker
    started after an edit of the agent's source hashes the edited file. Every record of a run
    carries one identity, the one its protocol was checked under (resume, baseline)."""
    if identity is None:
        return settings
    if identity != settings.agent and settings.agent in _SETTLED:
        _SETTLED[identity] = _SETTLED[settings.agent]
    return dataclasses.replace(settings, agent=identity)
