"""Tool calls read out of a reply's text (`models/toolcalls.py`): the Hermes form Qwen2.5's chat
template asks for, several calls, and malformed ones, which stay text."""

from __future__ import annotations

import json

import pytest

from pytest_humanfix.models.toolcalls import (
    ToolCall, parse_tool_calls, render_tool_calls, reply_text, split_reply, written_calls)

CODE = "def f(x):\n    return x + 1\n"


def block(payload: str) -> str:
    return f"<tool_call>\n{payload}\n</tool_call>"


def test_a_call_is_parsed_out_of_the_text():
    text = "I fixed it.\n" + block(json.dumps({"name": "run_tests", "arguments": {"code": CODE}}))
    content, calls = parse_tool_calls(text)
    assert content == "I fixed it."
    [call] = calls
    assert call.name == "run_tests" and json.loads(call.arguments) == {"code": CODE}
    assert call.argument("code") == CODE and call.argument("other") is None
    assert call.id.startswith("call_")
    assert call.to_message() == {"id": call.id, "type": "function", "function": {
        "name": "run_tests", "arguments": call.arguments}}


def test_several_calls_keep_their_order():
    text = "\n".join(block(json.dumps({"name": name, "arguments": {"n": n}}))
                     for n, name in enumerate(["a", "b", "c"]))
    content, calls = parse_tool_calls(text)
    assert content == ""
    assert [(c.name, c.argument("n")) for c in calls] == [("a", 0), ("b", 1), ("c", 2)]
    assert len({c.id for c in calls}) == 3


def test_a_small_models_json_is_read_leniently():
    # Raw newlines inside the string (not JSON, strictly), and the arguments as JSON text.
    raw = '{"name": "run_tests", "arguments": {"code": "def f(x):\n    return x + 1\n"}}'
    as_text = json.dumps({"name": "run_tests", "arguments": json.dumps({"code": CODE})})
    for payload in (raw, as_text):
        _, [call] = parse_tool_calls(block(payload))
        assert call.argument("code") == CODE


@pytest.mark.parametrize("payload", [
    "not json at all",
    json.dumps({"arguments": {"code": CODE}}),                # no name
    json.dumps({"name": 3, "arguments": {}}),                 # a name that is no text
    json.dumps({"name": "run_tests", "arguments": [CODE]}),   # arguments that are no object
    json.dumps({"name": "run_tests", "arguments": "{oops"}),  # arguments text that is no JSON
    json.dumps(["run_tests"]),
])
def test_a_malformed_call_stays_text(payload):
    text = "Here:\n" + block(payload)
    assert parse_tool_calls(text) == (text, [])


def test_a_malformed_call_beside_a_good_one_stays_text_and_the_good_one_is_called():
    good = block(json.dumps({"name": "run_tests", "arguments": {"code": CODE}}))
    content, calls = parse_tool_calls(block("{broken") + "\n" + good)
    assert content == block("{broken") and [c.name for c in calls] == ["run_tests"]


def test_an_unclosed_call_cut_by_the_budget_stays_text():
    text = '<tool_call>\n{"name": "run_tests", "arguments": {"code": "def f('
    assert parse_tool_calls(text) == (text, [])


def test_a_reply_and_its_calls_round_trip_through_one_text():
    calls = [ToolCall("call_1", "run_tests", json.dumps({"code": CODE})),
             ToolCall("call_2", "run_tests", json.dumps({"code": "pass"}))]
    text = reply_text("Testing.", calls)
    assert text == "Testing.\n" + render_tool_calls(calls)
    content, again = parse_tool_calls(text)
    assert content == "Testing."
    assert [(c.name, c.arguments) for c in again] == [(c.name, c.arguments) for c in calls]
    assert reply_text("Only words.", []) == "Only words."


def test_a_known_reply_is_split_only_when_it_was_offered_tools():
    text = block(json.dumps({"name": "run_tests", "arguments": {"code": CODE}}))
    assert split_reply(text, None) == (text, [])
    content, [call] = split_reply(text, [{"type": "function", "function": {"name": "run_tests"}}])
    assert content == "" and call.argument("code") == CODE


def test_a_call_written_as_bare_json_is_read_as_a_call():
    # As Qwen2.5-Coder-0.5B writes its first call: named after the function it fixes, in a
    # json block ...
    fenced = ("```json\n" + json.dumps({"name": "f", "arguments": {"code": CODE}}, indent=2)
              + "\n```")
    [call] = written_calls("Let me test it.\n" + fenced + "\nDone.")
    assert call.name == "f" and call.argument("code") == CODE
    assert parse_tool_calls(fenced) == (fenced, [])  # not the template's form: no server's call
    # ... and its later ones: bare lines, the same call twice, a raw newline in a string.
    line = json.dumps({"name": "run_tests", "arguments": {"code": CODE}})
    assert [c.argument("code") for c in written_calls(line + "\n" + line)] == [CODE, CODE]
    raw = '{"name": "run_tests", "arguments": {"code": "def f(x):\n    return x + 1\n"}}'
    assert [c.argument("code") for c in written_calls(raw)] == [CODE]
    # Fenced code that is no call, JSON of another shape, and a call cut short are none.
    assert written_calls("```python\n" + CODE + "\n```") == []
    assert written_calls('```json\n{"name": "f", "arguments": ["x"]}\n```') == []
    assert written_calls('{"result": 3}') == []
    assert written_calls(line[:-10]) == []
