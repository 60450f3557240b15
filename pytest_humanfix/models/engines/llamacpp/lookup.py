"""Prompt-lookup drafting for the llama.cpp engine's greedy replies (issue 21 point 2).

A repair copies long spans of what it was shown: the buggy function, and in a repair round its
own earlier reply. So the tokens that follow the reply's last few tokens are guessed from where
those tokens last occurred earlier in the prompt or the reply (prompt-lookup decoding, as
transformers' `prompt_lookup_num_tokens` and llama.cpp's `lookup` example draft), and the engine
checks all the guesses in one decode, keeping those the model itself would have chosen.

Only the standard library here: the engine's process imports this module.
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
