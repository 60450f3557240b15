"""`RepairConfig`: the part of the run's settings that a repair reads (the agent, its rounds,
the temperature schedule, where a chat reply stops, strict scoring), built once from `Settings`
so that the graph's nodes depend on what they use, not on every option (docs/agent.md)."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

from ..settings import Settings


@dataclass(frozen=True)
class RepairConfig:
    """Each field is the `Settings` field of its name (docs/options.md has what it means)."""

    variant: str                    # tests or docs: what the model sees and may run
    agent: str                      # a built-in agent (agent/contract runs a brought one)
    iters: int                      # repair rounds after the first attempt
    temperature: float              # of the first attempt
    # The k-th round after the first attempts takes the k-th value, later rounds the last.
    round_temperature: tuple[float, ...]
    ask_again_temperature: tuple[float, ...]  # one ask again of a repeat per value
    chat_stop: str                  # code or none: where a chat reply ends
    strict: bool                    # a flagged fix is scored not fixed

    @classmethod
    def of(cls, settings: Settings) -> RepairConfig:
        # The model sees the impossible variant's tests as the tests variant's: it is told
        # nothing that would set it apart.
        return cls(**{field.name: getattr(settings, field.name)
                      for field in dataclasses.fields(cls) if field.name != "variant"},
                   variant=settings.shown_variant)

    @property
    def resamples(self) -> int:
        """The asks again a round may spend on replies that repeat failed code, in an agent
        that asks again (`RepairContext.may_ask_again`)."""
        return len(self.ask_again_temperature)

    @property
    def resample_temperature(self) -> tuple[float, ...]:
        """Deprecated: `ask_again_temperature`, the option's name until 2026-12-05."""
        warnings.warn("RepairConfig.resample_temperature is ask_again_temperature: the schedule "
                      "of repair's asks again, which resample never used; read that.",
                      DeprecationWarning, stacklevel=2)
        return self.ask_again_temperature

    def temperature_of(self, round: int, resample: int = 0, first_attempts: int = 1) -> float:
        """The temperature of a reply, one rule for every agent: a first attempt's (the graph's
        `first_attempts` rounds: round 0, and `rewrite`'s round 1), the k-th value of the
        schedule for the k-th round after them (the last value for later ones), or the
        `resample`-th ask again of a round whose reply repeated failed code."""
        if resample:
            return self.ask_again_temperature[resample - 1]
        if round < first_attempts:
            return self.temperature
        schedule = self.round_temperature or (self.temperature,)
        return schedule[min(round - first_attempts, len(schedule) - 1)]
