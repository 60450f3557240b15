"""Starting the run's shared engines (--humanfix-serve), sized from the run's own work, its
longest first request and its workers, and the terminal's line of where the model runs
(docs/models.md#openai-compatible-servers-and-a-shared-engine)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..agent.prompts import first_prompt, prompt_base
from ..devices import DeviceError
from ..models.specs import ModelSpecError
from . import LAYOUT_NOTE
from .placement import Layout
from .xdist import workers_of

if TYPE_CHECKING:
    from ..dataset import Task
    from ..models.engines.serving import Serving
    from ..settings import Settings


def start_engines(config: pytest.Config, settings: Settings, layout: Layout,
                  tasks: list[Task]) -> Serving | None:
    """The shared engines of the run's layout, registered so that the run's end stops them;
    the terminal's layout line."""
    serving = None
    if settings.serve:
        from ..models.engines.commands import prompt_tokens
        from ..models.engines.kinds import ServeError
        from ..models.engines.serving import serve

        try:
            serving = serve(settings, workers_of(config),
                            prompt_tokens(longest_prompt(tasks, settings.variant)))
        except (ServeError, DeviceError, ModelSpecError) as exc:
            raise pytest.UsageError(str(exc)) from None
        config.pluginmanager.register(serving, "humanfix-serve")
    if layout.why:
        config.stash[LAYOUT_NOTE] = layout_note(layout, serving, workers_of(config))
    return serving


def longest_prompt(tasks: list[Task], variant: str) -> int:
    """The UTF-8 bytes of the run's longest first request: its first prompt, and the prompt
    base that a primed answer or a completion prompt adds to it."""
    return max((len((first_prompt(task, variant) + prompt_base(task, variant)).encode())
                for task in tasks), default=0)


def layout_note(layout: Layout, serving: Serving | None, workers: int) -> str:
    """The terminal's line of where the model runs, and why."""
    if serving is None:
        where = f"a copy of the model in each of {workers} worker(s)"
    else:
        engines = serving.engines
        devices = ", ".join(dict.fromkeys(f"GPU {e.device}" if e.device else "the CPU"
                                          for e in engines))
        where = (f"{len(engines)} shared {engines[0].model.engine} engine(s) on {devices}, "
                 f"asked by {workers} worker(s)")
    return f"layout: {where}, {layout.why}"
