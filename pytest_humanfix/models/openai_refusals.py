"""How the client explains a request an OpenAI-compatible server refuses (a 4xx): advice added
only when the server's own words name the field, for tools, a continued answer and vLLM's limit
on stop strings; and the stop strings it sends a server that names its limit on them.
See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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

    def concerns(self, message: str) -> bool:
        lowered = message.lower()
        return any(word in lowered for word in self.about)

    def explain(self, message: str) -> str:
        return f"{message}; {self.advice}." if self.concerns(message) else message


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

# How a refusal names its limit: vLLM 0.32's pydantic message ("List should have at most 4 items
# after validation, not 8", with 'max_length': 4 in its context), and the plain words of others.
LIMIT_WORDS = re.compile(r"at most (\d+)|'max_length': (\d+)|maximum(?: of)? (\d+)|up to (\d+)"
                         r"|no more than (\d+)|limit(?: is| of)? (\d+)", re.IGNORECASE)


def stop_limit(message: str, sent: int) -> int | None:
    """The most stop strings a server takes, when its refusal of `sent` of them is about `stop`
    and names a smaller number; None otherwise (the refusal is then an error, explained)."""
    if not STOPS_REFUSED.concerns(message):
        return None
    for found in LIMIT_WORDS.finditer(message):
        limit = int(next(group for group in found.groups() if group))
        if 0 < limit < sent:
            return limit
    return None


def fitted_stops(stops: Sequence[str], limit: int) -> list[str]:
    """The `limit` stop strings sent to a server that takes no more; the client cuts at every
    one while streaming, so these only spare the server tokens past the stop. A stop that holds
    another stop of the list never ends a reply first, so each stands for the shortest it holds
    (the completion prompt's "\nclass" for its function end's "\nc"), in the list's order:
    BigCode's stop words first, which end most replies."""
    chosen: list[str] = []
    for stop in stops:
        held = min((other for other in stops if other and other in stop), key=len, default=stop)
        if held not in chosen:
            chosen.append(held)
    return chosen[:limit]
