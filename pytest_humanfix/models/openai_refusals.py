"""How the client explains a request an OpenAI-compatible server refuses (a 4xx): advice added
only when the server's own words name the field, for tools, a continued answer and vLLM's limit
on stop strings. See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

from dataclasses import dataclass

# VLLM_MAX_STOP_STRINGS for a vLLM server: more than our longest stop list (the completion
# prompt's function end has over 100 strings; vLLM's default is 4).
VLLM_STOP_STRINGS = "1024"


@dataclass(frozen=True)
class Refusal:
    """Advice added to a 4xx whose server message names one of `about` (case ignored): a
    refusal blames a field only when the server's words do."""

    about: tuple[str, ...]
    advice: str

    def explain(self, message: str) -> str:
        lowered = message.lower()
        return f"{message}; {self.advice}." if any(w in lowered for w in self.about) else message


TOOLS_REFUSED = Refusal(("tool",),
                        "the server may not serve tool calls (`tools` in a chat request), which "
                        "--humanfix-agent tools needs; start it with tool calling (vLLM: "
                        "--enable-auto-tool-choice --tool-call-parser hermes), or use "
                        "--humanfix-agent repair")
CONTINUE_REFUSED = Refusal(("continue_final_message", "add_generation_prompt"),
                           "the server may not continue a final assistant message (vLLM's "
                           "continue_final_message), which --humanfix-prompt primed needs; use "
                           "--humanfix-prompt chat")
# vLLM validates `stop` as a list of at most VLLM_MAX_STOP_STRINGS (default 4) items; 0.32 says
# "List should have at most 4 items after validation, not 8" at 'loc': 'body.stop'.
STOPS_REFUSED = Refusal(("body.stop", "'stop'"),
                        "a vLLM server takes at most VLLM_MAX_STOP_STRINGS stop strings (4 by "
                        "default) and our stop lists are longer: restart it with "
                        f"VLLM_MAX_STOP_STRINGS={VLLM_STOP_STRINGS} in its environment "
                        "(--humanfix-serve does so)")
