"""--humanfix-repeat-check: the first attempt of a task generated a second time, by the same
model or by the one --humanfix-repeat-with names, and compared with the run's own first attempt.

The share of tasks whose outcome flips between the two is the noise a paired gate has to see
through (docs/trust.md, "Flip rate measured"); the repeat is kept under the record's
`repeat_check` key and never scored.
"""

from __future__ import annotations

import dataclasses
import time
import traceback

from ..agent.config import RepairConfig
from ..agent.graph import repair
from ..computed_by import ComputedBy
from ..dataset import Task
from ..models.base import Generation, Message, Model, PromptKind, RecordedAnswers, settle_prompt
from ..models.toolcalls import Tool, split_reply
from ..records import RepeatCheck, TaskResult
from ..sandbox.environment import Sandbox
from ..settings import Settings


def repeated(tasks: list[Task], settings: Settings) -> frozenset[str]:
    """The tasks checked: the first N of this process's selection in dataset order (of its
    shard under --humanfix-shard), the same in every xdist worker."""
    return frozenset(t.task_id for t in tasks[:settings.repeat_check or 0])


@dataclasses.dataclass
class RecordedReply(RecordedAnswers):
    """A model that answers with one recorded reply: the run's own first attempt, graded again
    on its own when the run's repair rounds went past it."""

    text: str
    prompt: PromptKind
    spec: str = "recorded"
    computed_by: ComputedBy = dataclasses.field(
        default_factory=lambda: ComputedBy(engine="recorded", version="the run's first reply",
                                           device="none"))

    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[Tool] | None = None,
                 stop: list[str] | None = None) -> Generation:
        text, calls = split_reply(self.text, tools)  # a recorded call is called again
        return Generation(text=text, tool_calls=calls, engine="recorded")


def first_attempt_outcome(first: TaskResult, task: Task, sandbox: Sandbox, settings: Settings,
                          langgraph: bool) -> str:
    """The outcome the run's first reply alone would have had: the task's outcome when the run
    stopped at it, else that reply graded as a single attempt, read as it was asked for."""
    if len(first.attempts) == 1:
        return first.outcome
    reply = first.attempts[0]
    prompt = settle_prompt(reply.prompt, has_chat_template=True)
    recorded = RecordedReply(reply.reply, prompt)
    return repair(task, recorded, sandbox, dataclasses.replace(RepairConfig.of(settings), iters=0),
                  langgraph=langgraph).outcome


def repeat_check(task: Task, first: TaskResult, model: Model, sandbox: Sandbox,
                 settings: Settings, langgraph: bool) -> RepeatCheck:
    """The `repeat_check` of the task's record: the second generation of its first attempt,
    graded, beside the run's own; {"error": why} when the repeat could not be made."""
    started = time.monotonic()
    try:
        again = repair(task, model, sandbox,
                       dataclasses.replace(RepairConfig.of(settings), iters=0),
                       langgraph=langgraph)
        before = first_attempt_outcome(first, task, sandbox, settings, langgraph)
    except Exception as exc:  # the side measurement must not cost the task its score
        return RepeatCheck(error="".join(traceback.format_exception_only(exc)).strip(),
                           seconds=round(time.monotonic() - started, 4))
    reply = again.attempts[0]
    return RepeatCheck(spec=model.spec, engine=reply.engine, reply=reply.reply, code=again.code,
                       reply_differs=reply.reply != first.attempts[0].reply,
                       first_outcome=before, outcome=again.outcome,
                       outcome_flipped=again.outcome != before, failure=again.failure,
                       error="", seconds=round(time.monotonic() - started, 4))
