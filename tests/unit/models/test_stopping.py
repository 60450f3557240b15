"""The llama.cpp engine's bounded stop check (`stopping.StopScanner`, issue 21 point 5): fed a
reply a piece at a time, it stops at exactly the piece where `stop_point` on the whole text so
far first finds a stop, on texts cut at random points (UTF-8 characters split across pieces,
bytes that are not UTF-8 at all, stop words and function ends straddling a cut)."""

from __future__ import annotations

import random

import pytest

from pytest_humanfix.models.stopping import StopScanner, stop_point

STOP = ["\ndef ", "<|endoftext|>", "```", "é!"]
# Fragments a reply is drawn from: code lines, indentation, braces, stop words and their halves,
# multi-byte characters, and bytes that never decode.
FRAGMENTS = ["\n", "    ", "\t", " ", "return x", "if y:", "{", "}", "\ndef", " ", "<|endof",
             "text|>", "``", "`", "é", "!", "€", "😀", "x = 1", "#", "\r", "\n\n", "pass"]
RULES = [None, "indent", "braces:1", "braces:2"]


def random_reply(rng: random.Random) -> bytes:
    parts = [rng.choice(FRAGMENTS).encode() for _ in range(rng.randint(0, 40))]
    if rng.random() < 0.3:  # a stray byte, or a character cut short, mid-reply
        parts.insert(rng.randint(0, len(parts)), rng.choice([b"\xff", b"\xe2\x82", b"\xc3"]))
    return b"".join(parts)


def first_stop_whole(data: bytes, cuts: list[int], stop: list[str], rule: str | None) -> int | None:
    """The index of the first piece after which the whole text so far has a stop point."""
    for index, end in enumerate(cuts):
        if stop_point(data[:end].decode("utf-8", errors="ignore"), stop, rule) is not None:
            return index
    return None


def first_stop_scanned(data: bytes, cuts: list[int], stop: list[str],
                       rule: str | None) -> int | None:
    scanner = StopScanner(stop, rule)
    start = 0
    for index, end in enumerate(cuts):
        if scanner.feed(data[start:end]):
            return index
        start = end
    return None


@pytest.mark.parametrize("rule", RULES)
def test_the_scanner_stops_where_the_whole_text_check_first_stops(rule):
    rng = random.Random(f"stop {rule}")
    stopped = 0
    for _ in range(600):
        data = random_reply(rng)
        # Pieces of 1 to 6 bytes, as tokens are: cut points anywhere, mid-character included.
        cuts, end = [], 0
        while end < len(data):
            end = min(len(data), end + rng.randint(1, 6))
            cuts.append(end)
        stop = rng.choice([STOP, [], ["\n"]])
        expected = first_stop_whole(data, cuts, stop, rule)
        assert first_stop_scanned(data, cuts, stop, rule) == expected, (data, cuts, stop)
        stopped += expected is not None
    assert 100 < stopped < 590  # both outcomes are well exercised


def test_the_scanner_text_is_the_whole_decode_at_every_cut():
    rng = random.Random("decode")
    for _ in range(300):
        data = random_reply(rng)
        scanner = StopScanner([])
        for end in range(len(data)):
            scanner.feed(data[end:end + 1])
            assert scanner.text == data[:end + 1].decode("utf-8", errors="ignore")


def test_an_unknown_rule_is_refused_naming_the_rules():
    with pytest.raises(ValueError, match="indent or braces:N"):
        StopScanner([], "braces")
