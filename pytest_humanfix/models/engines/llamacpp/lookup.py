"""Prompt-lookup drafting for our llama.cpp engine's greedy replies (`--draft`): the tokens that
followed the reply's last n-gram where it occurred earlier in the prompt or reply, for the
engine to check in one decode. Standard library only. See docs/models.md, "Levers for speed".
"""

from __future__ import annotations


class NgramIndex:
    """Where each n-gram (n = 1 .. `longest`) of a prompt and its growing reply last ended, so
    that a draft is found in time independent of the sequence's length."""

    def __init__(self, longest: int, prompt: list[int]) -> None:
        self.longest = longest
        # The prompt, then the reply as far as `draft` has seen it: extended in place, so a step
        # copies only the tokens the reply gained since the last one.
        self.tokens = list(prompt)
        self.prompt_length = len(prompt)
        self.last_end: dict[tuple[int, ...], int] = {}
        self.indexed = 0  # n-grams ending before this position are in `last_end`

    def draft(self, reply: list[int], most: int) -> list[int]:
        """Up to `most` tokens that followed the latest earlier occurrence of the longest
        suffix of the prompt and `reply` (n from `longest` down to 1) that occurred before; []
        if none did.

        `reply` only ever grows between calls."""
        tokens = self.tokens
        tokens.extend(reply[len(tokens) - self.prompt_length:])
        # Index the n-grams ending before the last token: the suffix itself is not a match.
        for end in range(self.indexed, len(tokens) - 1):
            for n in range(1, min(self.longest, end + 1) + 1):
                self.last_end[tuple(tokens[end - n + 1:end + 1])] = end
        self.indexed = max(self.indexed, len(tokens) - 1)
        for n in range(min(self.longest, len(tokens)), 0, -1):
            match = self.last_end.get(tuple(tokens[-n:]))
            if match is not None:
                return tokens[match + 1:match + 1 + most]
        return []
