"""OpenAI's request fields as our llama.cpp engine reads them (a request becomes a `Job`; vLLM's
fields for continuing a final message; `tools`) and the answer it writes. Request bodies and
answers are JSON objects: plain dicts at this HTTP boundary. See docs/models.md,
"llama.cpp on a CPU".
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, NamedTuple

from ...stopping import StopScanner, valid_rule
from ...toolcalls import Tool, parse_tool_calls
from .jobs import FUNCTION_END_FIELD, Job, RequestError

if TYPE_CHECKING:
    from .decode import BatchedModel


class ChatLayout(NamedTuple):
    """Where a chat's prompt ends: with the generation prompt, or inside the final (assistant)
    message, which the model continues."""

    generation_prompt: bool
    continue_final: bool


def new_job(model: BatchedModel, body: dict[str, Any], prompt: list[int], stop: list[str],
            default_seed: int, completion: bool = False) -> Job:
    if body.get("stream"):
        raise RequestError("streaming is not served: send the request without `stream`")
    if body.get("n", 1) != 1:
        raise RequestError("one choice per request: send the request with n=1")
    extra = body.get("stop") or []
    stop = [*stop, *([extra] if isinstance(extra, str) else extra)]
    room = model.context - len(prompt)
    if room < 1:
        raise RequestError(f"the prompt has {len(prompt)} tokens and a slot holds "
                           f"{model.context}: raise --n_ctx, or shorten the prompt")
    try:
        max_tokens = min(int(field_or(body, "max_tokens", room)), room)
        temperature = float(field_or(body, "temperature", 1.0))  # OpenAI's defaults
        top_p = float(field_or(body, "top_p", 1.0))
        seed = int(field_or(body, "seed", default_seed))
    except (TypeError, ValueError) as exc:
        raise RequestError(f"a sampling field is not a number: {exc}") from None
    if max_tokens < 1:
        raise RequestError("max_tokens must be at least 1")
    function_end = body.get(FUNCTION_END_FIELD)
    if function_end is not None and not (completion and isinstance(function_end, str)
                                         and valid_rule(function_end)):
        raise RequestError(f"`{FUNCTION_END_FIELD}` is \"indent\" or \"braces:N\", for "
                           f"/v1/completions only; got {function_end!r}")
    return Job(prompt, max_tokens, stop, temperature, top_p, seed, special=completion,
               scanner=StopScanner(stop, function_end) if stop or function_end else None)


def chat_layout(body: dict[str, Any]) -> ChatLayout:
    """`chat_prompt`'s arguments from vLLM's request fields, checked as vLLM checks them (but
    `continue_final_message` alone means no generation prompt, as it can mean nothing else)."""
    continue_final = body.get("continue_final_message", False)
    generation_prompt = body.get("add_generation_prompt", not continue_final)
    if not isinstance(continue_final, bool) or not isinstance(generation_prompt, bool):
        raise RequestError("`continue_final_message` and `add_generation_prompt` are true or false")
    if continue_final and generation_prompt:
        raise RequestError("`continue_final_message` continues the final message, and "
                           "`add_generation_prompt` begins a new one: they cannot both be true")
    messages = body.get("messages") or []
    final = messages[-1] if messages else None
    if continue_final and not (isinstance(final, dict) and final.get("role") == "assistant"
                               and isinstance(final.get("content"), str)):
        raise RequestError("`continue_final_message` continues a final assistant message with "
                           "text `content`; the messages end otherwise")
    return ChatLayout(generation_prompt, continue_final)


def offered_tools(body: dict[str, Any]) -> list[Tool] | None:
    """The request's `tools`, checked; None when it offers none. Only `tool_choice` auto (the
    default with tools) is served: the model decides whether it calls one."""
    tools = body.get("tools")
    if tools is None or tools == []:
        return None
    if not isinstance(tools, list) or not all(
            isinstance(tool, dict) and tool.get("type") == "function"
            and isinstance(tool.get("function"), dict)
            and isinstance(tool["function"].get("name"), str) for tool in tools):
        raise RequestError("`tools` is a list of {\"type\": \"function\", \"function\": "
                           "{\"name\": ..., \"parameters\": ...}}")
    if body.get("tool_choice", "auto") != "auto":
        raise RequestError("only `tool_choice` auto is served: send it so, or without it")
    return tools


def field_or(body: dict[str, Any], name: str, default: float) -> Any:
    value = body.get(name)
    return default if value is None else value


def answer(job: Job, model: BatchedModel, kind: str, name: str,
           tools: bool = False) -> dict[str, Any]:
    """The OpenAI answer to a finished job; offered `tools`, a chat reply's calls are parsed
    out of its text."""
    text = model.reply_text(job)
    choice: dict[str, Any] = {"index": 0, "finish_reason": job.finish_reason, "logprobs": None}
    content, calls = parse_tool_calls(text) if tools else (text, [])
    if kind == "chat" and calls:
        choice["message"] = {"role": "assistant", "content": content or None,
                             "tool_calls": [call.to_message() for call in calls]}
        choice["finish_reason"] = "tool_calls"
    elif kind == "chat":
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    return {"id": f"{kind}-{uuid.uuid4().hex}", "created": int(time.time()), "model": name,
            "object": "chat.completion" if kind == "chat" else "text_completion",
            "choices": [choice],
            "usage": {"prompt_tokens": len(job.prompt), "completion_tokens": len(job.tokens),
                      "total_tokens": len(job.prompt) + len(job.tokens),
                      # OpenAI's name for the prompt tokens a cache held.
                      "prompt_tokens_details": {"cached_tokens": job.cached}}}
