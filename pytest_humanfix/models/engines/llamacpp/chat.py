"""The prompt's layout in our llama.cpp engine: a chat laid out by the chat template stored in
the GGUF file (an answer begun by the client continued verbatim, offered tools where the
template puts them), and text to tokens and back through llama-cpp-python's own tokenizer, so a
prompt is tokenized as llama_cpp.server tokenized it. See docs/models.md, "llama.cpp on a CPU".
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from ...toolcalls import Tool
from .jobs import RequestError

if TYPE_CHECKING:
    import llama_cpp


class LaidOut(NamedTuple):
    """A chat's prompt text, the template's stop strings, and whether the template wrote the
    special tokens (the beginning of sequence) itself."""

    text: str
    stop: list[str]
    added_special: bool


class PromptText:
    """Text in and out of one model, through a vocabulary-only `llama_cpp.Llama` of its file."""

    def __init__(self, llama: llama_cpp.Llama) -> None:
        self.llama = llama

    def chat_text(self, messages: list[dict[str, Any]], generation_prompt: bool = True,
                  continue_final: bool = False, tools: list[Tool] | None = None
                  ) -> LaidOut:
        """The prompt's text through the chat template stored in the file, its stop strings,
        and whether the template wrote the special tokens itself. `continue_final` leaves the
        final (assistant) message open: the messages before it, the generation prompt, then
        its content as it is. `tools` are laid out where the template puts them."""
        from llama_cpp import llama_chat_format

        template = self.llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise RequestError("the model has no chat template: ask /v1/completions instead "
                               "(--humanfix-prompt completion)")
        if tools and "tools" not in template:
            raise RequestError("the model's chat template has no place for tools: send the "
                               "request without `tools` (--humanfix-agent repair)")
        messages = [with_call_objects(message) for message in messages]
        begun = ""
        if continue_final:
            *messages, final = messages
            begun = final["content"]
        eos, bos = self.llama.token_eos(), self.llama.token_bos()
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template, stop_token_ids=[eos],
            eos_token=self.llama._model.token_get_text(eos) if eos != -1 else "",
            bos_token=self.llama._model.token_get_text(bos) if bos != -1 else "",
            add_generation_prompt=generation_prompt or continue_final)
        try:
            # Plain dicts, which llama-cpp-python annotates as its TypedDicts.
            formatted = formatter(messages=messages, tools=tools)  # type: ignore[arg-type]
        except Exception as exc:  # the template's own error, in its own words
            raise RequestError(f"the chat template cannot lay out these messages: {exc}") from None
        stop = formatted.stop if isinstance(formatted.stop, list) else [formatted.stop or ""]
        return LaidOut(formatted.prompt + begun, [s for s in stop if s], formatted.added_special)

    def chat_prompt(self, messages: list[dict[str, Any]], generation_prompt: bool = True,
                    continue_final: bool = False, tools: list[Tool] | None = None
                    ) -> tuple[list[int], list[str]]:
        """The prompt's tokens and stop strings (`chat_text`)."""
        text, stop, added_special = self.chat_text(messages, generation_prompt, continue_final,
                                                   tools)
        return self.llama.tokenize(text.encode(), add_bos=not added_special, special=True), stop

    def completion_prompt(self, prompt: str) -> list[int]:
        return self.llama.tokenize(prompt.encode(), special=True)

    def detokenize(self, tokens: list[int], special: bool = False) -> str:
        return self.llama.detokenize(tokens, special=special).decode("utf-8", errors="ignore")


def with_call_objects(message: Any) -> Any:
    """An assistant message's tool calls with their arguments as the object they write, not
    OpenAI's JSON text: templates write them with `tojson` (vLLM converts them the same way)."""
    if not isinstance(message, dict) or not isinstance(message.get("tool_calls"), list):
        return message
    calls = []
    for call in message["tool_calls"]:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise RequestError("each of `tool_calls` is {\"type\": \"function\", "
                               "\"function\": {\"name\": ..., \"arguments\": ...}}")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise RequestError("a tool call's `arguments` is not JSON text") from None
        calls.append({**call, "function": {**function, "arguments": arguments}})
    return {**message, "content": message.get("content") or "", "tool_calls": calls}

