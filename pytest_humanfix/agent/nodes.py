"""The repair agent's nodes: each takes the state and the runtime and returns the state's
update. `propose` and `call` ask the model, `check` reads the reply's code, `execute` runs it,
`reflect` and `reflect_call` tell the model what happened, `sample_again` begins a resampling
round, `finish` grades (docs/agent.md, "The repair loop")."""

from __future__ import annotations

import dataclasses
import difflib
import json
import time
from typing import Any

from ..languages import LANGUAGES
from ..models.base import Generation, PromptKind
from ..models.toolcalls import reply_text, written_calls
from ..records import Attempt
from ..sandbox.environment import Verdict
from . import prompts
from .braces import continued_code as continued_braced, extract_braced
from .context import RepairContext, RepairRuntime, RepairState
from .extract import continued_code, extract_code, same_code
from .feedback import what_happened
from .grading import final_candidate, graded, run_hidden, run_tests
from .precheck import check_candidate


def unified_diff(before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="buggy", tofile="candidate"))


def _replace_last(attempts: list[Attempt], **changes: Any) -> list[Attempt]:
    return [*attempts[:-1], dataclasses.replace(attempts[-1], **changes)]


def _code_of(ctx: RepairContext, text: str, continued: bool) -> str:
    """The candidate in a reply (a chat answer) or a continuation of the prompt base (a
    completion, or a primed answer)."""
    language = LANGUAGES[ctx.task.language]
    if language.name == "python":
        return continued_code(text, ctx.base) if continued else \
            extract_code(text, ctx.task.entry_point, ctx.base, ctx.task.buggy_code)
    if continued:
        return continued_braced(text, ctx.base, language)
    return extract_braced(text, ctx.task.entry_point, ctx.base,
                          ctx.base + ctx.task.buggy_solution, language)


def reply_attempt(generation: Generation, kind: PromptKind, in_round: int, temperature: float,
                  began: float, tool_calls: int | None = None) -> Attempt:
    """The attempt of a reply, before any code is read from it: what it said and cost."""
    seconds = generation.seconds or time.monotonic() - began
    return Attempt(code="", diff="", verdict=None, prompt_tokens=generation.prompt_tokens,
                   completion_tokens=generation.completion_tokens,
                   generate_seconds=round(seconds, 4),
                   reply=reply_text(generation.text, generation.tool_calls),
                   prompt=kind, finish_reason=generation.finish_reason,
                   engine=generation.engine, server=generation.server,
                   round=in_round, temperature=temperature, tool_calls=tool_calls)


def _asked(ctx: RepairContext, state: RepairState, generation: Generation, code: str,
           kind: PromptKind, temperature: float, began: float,
           tool_calls: int | None = None) -> dict[str, Any]:
    """The state's update for a reply: its attempt appended, and its round counted."""
    attempt = dataclasses.replace(
        reply_attempt(generation, kind, state["round"], temperature, began, tool_calls),
        code=code, diff=unified_diff(ctx.task.buggy_code, code))
    # An ask again belongs to the round it repeats: the round was counted at its first reply.
    spent = 0 if state["resamples"] else 1
    return {"attempts": [*state["attempts"], attempt],
            "rounds_left": state["rounds_left"] - spent}


def propose(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    began = time.monotonic()
    kind = ctx.model.prompt
    temperature = ctx.temperature(state)
    if kind == "completion":
        generation = ctx.model.complete(
            prompts.completion_prompt(state["messages"], ctx.base), prompts.stop_words(ctx.task),
            ctx.task, temperature=temperature)
    elif kind == "primed":
        generation = ctx.model.continue_answer(
            state["messages"], prompts.answer_start(ctx.task, ctx.config.variant),
            prompts.stop_words(ctx.task), ctx.task, temperature=temperature)
    else:
        generation = ctx.model.generate(state["messages"], ctx.task, temperature=temperature,
                                        stop=prompts.chat_stop(ctx.config.chat_stop, ctx.task))
    return _asked(ctx, state, generation, _code_of(ctx, generation.text, continued=kind != "chat"),
                  kind, temperature, began)


def call(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """The function-calling agent's reply: the code of its first call (a call without a `code`
    text holds no code, which `check` rejects), else the code in what it said. Further calls
    in the same reply are counted, not run: one call is one round. A reply whose server found
    no call may hold one written as bare JSON (`written_calls`), which counts as a call."""
    ctx = runtime.context
    began = time.monotonic()
    temperature = ctx.temperature(state)
    generation = ctx.model.generate(state["messages"], ctx.task, temperature=temperature,
                                    tools=[prompts.run_tests_tool(ctx.config.variant)])
    calls = generation.tool_calls or written_calls(generation.text)
    if calls:
        code = calls[0].argument("code")
        code = _code_of(ctx, code, continued=False) if isinstance(code, str) else ""
    else:
        code = _code_of(ctx, generation.text, continued=False)
    return _asked(ctx, state, generation, code, "chat", temperature, began,
                  tool_calls=len(calls))


def check(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    *earlier, latest = state["attempts"]
    # A completion's code follows the prompt base with its last newline stripped.
    base = ctx.base.rstrip()
    empty = latest.code.startswith(base) and not latest.code[len(base):].strip()
    reason = "the reply holds no code." if empty or not latest.code.strip() else \
        check_candidate(latest.code, ctx.task)
    if reason:
        return {"attempts": _replace_last(state["attempts"], status="rejected", check=reason)}
    for number, attempt in enumerate(earlier, 1):
        if attempt.status in ("passed", "failed") and same_code(attempt.code, latest.code):
            return {"attempts": _replace_last(state["attempts"], status="repeat", repeat_of=number)}
    return {}


def execute(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    name, tests = ctx.round_tests
    code = state["attempts"][-1].code
    verdict, guard = run_hidden(ctx, code) if name == "test" else \
        (run_tests(ctx, code, tests), None)
    return {"attempts": _replace_last(
        state["attempts"], status="passed" if verdict.passed else "failed", tests=name,
        verdict=verdict.to_dict(), execute_seconds=verdict.seconds, guard=guard)}


def _failure_of(attempt: Attempt) -> str:
    verdict = attempt.verdict
    return what_happened(Verdict(**verdict)) if verdict else ""


def ask_again(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """Ask again, within the round, for a reply that repeated failed code: `propose` samples it
    at the next of the ask-again temperatures, from the same conversation. A turn telling the
    model that it repeated itself, put before the ask, was measured and not kept
    (docs/benchmarks.md, "Repair rounds")."""
    return {"resamples": state["resamples"] + 1}


def told(ctx: RepairContext, attempts: list[Attempt], kind: PromptKind) -> str:
    """What the repair agent tells the model after its latest attempt: why it was not run, that
    it repeats an earlier one, or what it did (also what a brought agent's run_tests returns)."""
    latest = attempts[-1]
    if latest.status == "rejected":
        return prompts.rejection_feedback(ctx.task, latest.check, kind)
    if latest.status == "repeat":
        assert latest.repeat_of is not None  # `check` names the earlier attempt
        return prompts.repeat_feedback(
            ctx.task, latest.repeat_of, _failure_of(attempts[latest.repeat_of - 1]), kind)
    return prompts.failure_feedback(ctx.task, _failure_of(latest),
                                    example_only=latest.tests == "example_test", prompt=kind)


def reflect(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    attempts = state["attempts"]
    latest = attempts[-1]
    kind = ctx.model.prompt
    feedback = told(ctx, attempts, kind)
    messages = [*state["messages"], {"role": "assistant", "content": prompts.attempt_turn(
                    ctx.task, latest.code, latest.reply, kind)},
                {"role": "user", "content": feedback}]
    return {"messages": messages, "attempts": _replace_last(attempts, feedback=feedback),
            "round": state["round"] + 1, "resamples": 0}


def reflect_call(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """The function-calling agent's turn after a call that did not pass: the call, as the code
    it ran (not the whole reply), and the tool's answer: what that code did."""
    attempts = state["attempts"]
    latest = attempts[-1]
    if latest.status == "rejected":
        detail = latest.check
    elif latest.status == "repeat":
        assert latest.repeat_of is not None  # `check` names the earlier attempt
        detail = _failure_of(attempts[latest.repeat_of - 1])
    else:
        detail = _failure_of(latest)
    result = prompts.tool_result(latest.status, detail, latest.tests == "example_test")
    # Numbered by the attempt: unique in the conversation, and the same in every run.
    call_id = f"call_{len(attempts)}"
    messages = [*state["messages"],
                {"role": "assistant", "content": "", "tool_calls": [{
                    "id": call_id, "type": "function", "function": {
                        "name": prompts.RUN_TESTS,
                        "arguments": json.dumps({"code": latest.code.strip()})}}]},
                {"role": "tool", "tool_call_id": call_id, "content": result}]
    return {"messages": messages, "attempts": _replace_last(attempts, feedback=result),
            "round": state["round"] + 1, "resamples": 0}


def sample_again(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """The resampling agent's next round: the first prompt again, unchanged and told nothing,
    sampled at the round's temperature; the model's seed for it is drawn per reply, so a rerun
    draws the same samples (models/base.py, `ReplySeeds`)."""
    return {"round": state["round"] + 1, "resamples": 0}


def sample_anew(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """The rewriting agent's next round. Round 1 is a second first attempt: the function written
    anew from what specifies it (`prompts.rewrite_prompt`: no buggy code to copy), at the first
    attempt's temperature. Each later round is a fresh sample of the first prompt, as `resample`
    draws it: the round schedule starts after the first attempts and a greedy reply takes no
    sample's seed (models/base.py, `ReplySeeds`), so rounds 2 and 3 draw `resample`'s rounds
    1 and 2, in process and served alike. That holds at --humanfix-temperature 0 only: a
    sampled first attempt takes a seed, and rounds 2 and 3 then draw `resample`'s rounds 2 and
    3's seeds."""
    ctx = runtime.context
    first = prompts.rewrite_prompt if state["round"] == 0 else prompts.first_prompt
    return {**sample_again(state, runtime), "messages": [
        {"role": "user", "content": first(ctx.task, ctx.config.variant)}]}


def finish(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    result = graded(runtime.context, state["attempts"], final_candidate(state["attempts"]))
    return {"result": result, "attempts": result.attempts}
