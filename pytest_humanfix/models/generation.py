"""What the model backends need of a run's settings, and nothing else: how a model is prompted
and decoded, where its servers are. Built once from `Settings` (`GenerationConfig.of`), it is
what `specs.load_model` hands every backend. See docs/models.md, "Model specs".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .openai_servers import ServerProbe

if TYPE_CHECKING:
    from ..settings import Settings


@dataclass(frozen=True)
class GenerationConfig:
    """`prompt` is --humanfix-prompt as asked (auto, chat, primed, completion: each backend
    settles auto for its model); `max_length` (prompt and reply together) replaces
    `max_new_tokens` when set; `base_urls` are the OpenAI-compatible servers, one or a fleet;
    `engine` names what serves them (auto: not known); `probed` is what the controller found
    at them, by base URL (a server not in it is asked by the backend itself); `determinism`
    asks the in-process engine for repeatable GPU arithmetic."""

    prompt: str = "auto"
    temperature: float = 0.0
    max_new_tokens: int = 512
    max_length: int | None = None
    seed: int = 0
    base_urls: tuple[str, ...] = ("http://localhost:8000/v1",)
    request_timeout: float = 300.0
    engine: str = "auto"
    determinism: bool = False
    probed: dict[str, ServerProbe] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings) -> GenerationConfig:
        return cls(prompt=settings.prompt, temperature=settings.temperature,
                   max_new_tokens=settings.max_new_tokens, max_length=settings.max_length,
                   seed=settings.seed, base_urls=settings.base_urls,
                   request_timeout=settings.request_timeout, engine=settings.engine,
                   determinism=settings.determinism)
