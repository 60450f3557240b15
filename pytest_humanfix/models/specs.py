"""Model specs: what a `--humanfix-model` value names, resolved without loading anything, and the
lazy registry that imports a backend only when a spec asks for it (so the control models need
neither torch nor transformers).
"""

from __future__ import annotations

import difflib
import importlib
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


@dataclass(frozen=True)
class ResolvedSpec:
    """What a spec names: `kind` is control, replay, openai or transformers, and `target` the
    control's name, the replay file, the server's model name, or the Hub id or model folder."""

    kind: str
    target: str


def known_specs() -> list[str]:
    return [*CONTROLS, *(f"{alias} ({hub_id})" for alias, hub_id in ALIASES.items()),
            "replay:<file.jsonl>", "openai:<model>", "a Hub id org/name", "a local model folder"]


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
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelSpecError(
                f"model folder {path} has no config.json; give a folder saved with "
                "save_pretrained (config, tokenizer and weights), or a Hub id.")
        return ResolvedSpec("transformers", str(path.resolve()))
    if HUB_ID.fullmatch(spec):
        return ResolvedSpec("transformers", spec)
    if "/" in spec or spec.startswith("~") or path.exists():
        raise ModelSpecError(f"no model folder at {path}, and {spec!r} is not a Hub id "
                             "(org/name); give a folder saved with save_pretrained or a Hub id.")
    close = difflib.get_close_matches(spec, [*ALIASES, *CONTROLS], n=1)
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
    return provider(resolved.kind)(spec, resolved.target, settings)


def check_spec(spec: str, settings: Settings) -> None:
    """Fail fast on a spec that names nothing, without loading weights or reaching a server."""
    resolved = resolve_spec(spec)
    if resolved.kind == "replay":
        # A replay file is cheap to read, and a bad one is a usage error, not 164 errors.
        load_model(spec, settings)
