"""Model specs and the models behind them.

A model answers a chat (a list of role/content messages) about one task with a `Generation`.
Heavy backends are imported only when a spec asks for them, so the control models need neither
torch nor transformers.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .dataset import Task

if TYPE_CHECKING:
    from .settings import Settings


class ModelSpecError(Exception):
    """The model spec names nothing we can load; the message lists what is known."""


class ModelLoadError(Exception):
    """The model exists in name but cannot be loaded or reached: a harness fault."""


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


class Model(Protocol):
    spec: str

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation: ...


@dataclass
class ControlModel:
    """Answers with a known solution, in the shape a chat model would reply."""

    spec: str

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation:
        code = task.canonical_code if self.spec == "canonical" else task.buggy_code
        return Generation(text=f"Here is the fixed function:\n\n```python\n{code}```\n")


class ReplayModel:
    """Replays recorded replies: `{"task_id", "completion"}` lines, in order per task, or the
    attempts of this plugin's own results JSONL, so a run can be re-scored without a model."""

    def __init__(self, spec: str, path: Path) -> None:
        self.spec = spec
        self.replies: dict[str, list[str]] = {}
        self._served: dict[str, int] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ModelSpecError(f"replay file {path}: {exc.strerror or exc}.") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise ModelSpecError(f"replay file {path}: line {number} is not JSON.") from None
            if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
                raise ModelSpecError(f"replay file {path}: line {number} has no task_id.")
            self.replies.setdefault(row["task_id"], []).extend(_recorded_replies(row, path, number))

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation:
        replies = self.replies.get(task.task_id)
        if not replies:
            raise ModelLoadError(f"replay file has no reply for {task.task_id}")
        served = self._served.get(task.task_id, 0)
        self._served[task.task_id] = served + 1
        # Past the last recorded reply the model keeps saying the same thing.
        return Generation(text=replies[min(served, len(replies) - 1)])


def _recorded_replies(row: dict, path: Path, number: int) -> list[str]:
    if isinstance(row.get("completion"), str):
        return [row["completion"]]
    attempts = row.get("attempts")
    if isinstance(attempts, list) and attempts:
        return [a.get("reply") or a["code"] for a in attempts]
    if isinstance(row.get("code"), str):
        return [row["code"]]
    raise ModelSpecError(
        f"replay file {path}: line {number} has neither 'completion' nor recorded attempts.")


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


def load_model(spec: str, settings: Settings) -> Model:
    resolved = resolve_spec(spec)
    if resolved.kind == "control":
        return ControlModel(spec)
    if resolved.kind == "replay":
        return ReplayModel(spec, Path(resolved.target))
    if resolved.kind == "openai":
        from .openai_backend import OpenAIModel

        return OpenAIModel(spec, resolved.target, settings)
    from .hf_backend import TransformersModel

    return TransformersModel(spec, resolved.target, settings)


def check_spec(spec: str, settings: Settings) -> None:
    """Fail fast on a spec that names nothing, without loading weights or reaching a server."""
    resolved = resolve_spec(spec)
    if resolved.kind == "replay":
        # A replay file is cheap to read, and a bad one is a usage error, not 164 errors.
        load_model(spec, settings)
