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
    """Where each n-gram (n = 1 .. `longest`) of a growing token sequence last ended, so that a
    draft is found in time independent of the sequence's length."""

    def __init__(self, longest: int) -> None:
        self.longest = longest
        self.last_end: dict[tuple[int, ...], int] = {}
        self.indexed = 0  # n-grams ending before this position are in `last_end`

    def draft(self, tokens: list[int], most: int) -> list[int]:
        """Up to `most` tokens that followed the latest earlier occurrence of the longest
        suffix of `tokens` (n from `longest` down to 1) that occurred before; [] if none did.

        `tokens` only ever grows between calls (the prompt, then the reply so far)."""
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
