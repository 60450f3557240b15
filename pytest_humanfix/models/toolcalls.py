"""Tool calls written in a reply's text in the Hermes form (`<tool_call>{"name": ..., "arguments":
...}</tool_call>`, as Qwen2.5's chat template asks), read leniently into OpenAI's calls; a
malformed call stays in the text. See docs/models.md, "Tool calls in a reply's text".
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
# Where a call written as a bare JSON object may begin.
CALL_OBJECT = re.compile(r'\{\s*"name"\s*:')
# One tool offered to a model, as OpenAI's API declares it and every server reads it:
# {"type": "function", "function": {"name": ..., "description": ..., "parameters": {...}}}.
# It is sent as it is, so it stays the JSON object it is.
Tool = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call as OpenAI's API carries it: `arguments` is the text of a JSON object."""

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        """The call as an entry of an assistant message's `tool_calls`."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}

    def argument(self, name: str) -> Any:
        """One argument's value; None when the call lacks it, or its arguments (a server's
        text) are not a JSON object."""
        try:
            arguments = json.loads(self.arguments, strict=False)
        except ValueError:
            return None
        return arguments.get(name) if isinstance(arguments, dict) else None


def _call_of(block: str) -> ToolCall | None:
    try:
        value = json.loads(block, strict=False)
    except ValueError:
        return None
    return _call_from(value)


def _call_from(value: Any) -> ToolCall | None:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments, strict=False)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(f"call_{uuid.uuid4().hex[:24]}", value["name"],
                    json.dumps(arguments, ensure_ascii=False))


def parse_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """The reply's text without its well-formed calls, and those calls in order."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    end = 0
    for match in BLOCK.finditer(text):
        call = _call_of(match[1])
        if call is None:
            continue  # malformed: stays in the text
        calls.append(call)
        kept.append(text[end:match.start()])
        end = match.end()
    kept.append(text[end:])
    return ("".join(kept).strip() if calls else text), calls


def written_calls(text: str) -> list[ToolCall]:
    """Calls written in a reply's text as bare JSON objects of the same shape, `{"name": ...,
    "arguments": {...}}`, anywhere (in a ```json block or not), rather than in the template's
    form. Qwen2.5-Coder-0.5B, offered a tool, writes its first call so (in a ```json block,
    named after the function it fixes), and later ones as bare JSON lines, never as
    `<tool_call>`. No server parses these; the function-calling agent reads them."""
    decoder = json.JSONDecoder(strict=False)
    calls: list[ToolCall] = []
    end = 0
    for match in CALL_OBJECT.finditer(text):
        if match.start() < end:
            continue  # inside the call read before
        try:
            value, end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        call = _call_from(value)
        if call is not None:
            calls.append(call)
    return calls


def render_tool_calls(calls: list[ToolCall]) -> str:
    """The calls in the Hermes form `parse_tool_calls` reads."""
    return "\n".join(
        "<tool_call>\n" + json.dumps({"name": call.name, "arguments": json.loads(call.arguments)},
                                     ensure_ascii=False) + "\n</tool_call>"
        for call in calls)


def reply_text(content: str, calls: list[ToolCall]) -> str:
    """A reply as one text: what it said, then its calls in the Hermes form."""
    return "\n".join(part for part in (content, render_tool_calls(calls)) if part)


def split_reply(text: str, tools: list[Tool] | None) -> tuple[str, list[ToolCall]]:
    """A known reply (a control's, a recorded one) as a server would answer it: its calls
    parsed out when it was asked with tools, else the text as it is."""
    return parse_tool_calls(text) if tools else (text, [])
