"""The llama.cpp engine's speed levers (issue 21). A prompt whose prefix a slot evaluated before
reuses that prefix's whole chunks, and its reply is the one a fresh evaluation gives. Greedy
replies drafted from their prompt and checked in one decode stay a function of their prompt
(a rejected draft leaves nothing behind), but not always plain greedy's: llama.cpp's CPU matrix
product takes another path for a batch of 2 or more tokens (llamafile's sgemm) than for one, and
its sums round otherwise.

The engine is driven here without its HTTP front or its loop thread (`serve_together`), so a
test decides which slot is busy when a prompt arrives."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.models.engines.llamacpp import decode, jobs, protocol
from pytest_humanfix.models.specs import resolve_spec

CHUNK = 16
CONTEXT = 1024
# A repair round's shape: a conversation whose next prompt is the last one, its reply, and more.
CODE = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
FIRST = [{"role": "user", "content": f"{CODE}\nFix bugs in add and mul. Write both again."}]


def model(path: Path, **levers) -> decode.BatchedModel:
    return decode.BatchedModel(str(path), CONTEXT, threads=1, slots=2, batch=CHUNK,
                                        **levers)


@pytest.fixture(scope="module")
def plain(smollm2):
    return model(smollm2, prefix_cache=False)


@pytest.fixture(scope="module")
def reuse(smollm2):
    return model(smollm2, prefix_cache=True)


@pytest.fixture(scope="module")
def drafting(smollm2):
    return model(smollm2, prefix_cache=False, draft=4, draft_ngram=3)


def job(engine: decode.BatchedModel, messages: list[dict[str, str]],
        max_tokens: int = 48) -> jobs.Job:
    prompt, stop = engine.prompts.chat_prompt(messages)
    return protocol.new_job(engine, {"temperature": 0, "max_tokens": max_tokens},
                            prompt, stop, 0)


def serve_together(engine: decode.BatchedModel,
                   *jobs: jobs.Job) -> list[str]:
    """Admits the jobs at once, each to the slot the engine picks, and decodes them together
    to their ends; their replies."""
    for each in jobs:
        engine.place(each)
        engine.start(each)
    while engine.active:
        engine.step()
    assert all(each.done.is_set() and not each.error for each in jobs)
    return [engine.reply_text(each) for each in jobs]


def next_round(messages: list[dict[str, str]], reply: str) -> list[dict[str, str]]:
    return [*messages, {"role": "assistant", "content": reply},
            {"role": "user", "content": "The tests failed: add(2, 3) gave -1. Fix it."}]


def test_a_round_reuses_its_conversations_chunks_and_replies_as_a_fresh_evaluation(plain,
                                                                                   reuse):
    rounds: list[list[dict[str, str]]] = [FIRST]
    reused_jobs = []
    for _ in range(3):
        (fresh,) = serve_together(plain, job(plain, rounds[-1]))
        reused = job(reuse, rounds[-1])
        assert serve_together(reuse, reused) == [fresh]
        reused_jobs.append(reused)
        rounds.append(next_round(rounds[-1], fresh))
    assert reused_jobs[0].cached == 0
    for before, after in zip(reused_jobs, reused_jobs[1:], strict=False):
        # The whole chunks of the last round's prompt, short of its chat template's last
        # tokens (the generation prompt, which the next round writes otherwise).
        assert 0 < after.cached < len(after.prompt) and after.cached % CHUNK == 0
        assert after.cached > len(before.prompt) - 2 * CHUNK


def test_a_prefix_held_by_a_busy_slot_is_evaluated_afresh_to_the_same_reply(plain, reuse):
    (fresh,) = serve_together(plain, job(plain, FIRST))
    follow_up = next_round(FIRST, fresh)
    (expected,) = serve_together(plain, job(plain, follow_up))

    serve_together(reuse, job(reuse, FIRST))  # one slot now holds FIRST
    # FIRST again takes that slot and keeps it busy while the follow-up arrives.
    holder, asker = job(reuse, FIRST), job(reuse, follow_up)
    assert serve_together(reuse, holder, asker) == [fresh, expected]
    assert holder.cached > 0 and asker.cached == 0 and asker.slot != holder.slot
    # Once that slot is free, the follow-up is given it and reuses the prefix.
    again = job(reuse, follow_up)
    assert serve_together(reuse, again) == [expected] and again.cached > 0


PROMPTS = [FIRST, [{"role": "user", "content": f"Repeat this code:\n{CODE}"}],
           [{"role": "user", "content": "Count from 1 to 30, separated by commas."}]]


def test_drafts_are_accepted_and_rejected_and_leave_the_reply_a_function_of_its_prompt(
        drafting):
    """SmolLM2 copies code from its prompt: drafts are accepted, several to a step, and some
    rejected; their cells are dropped, so a reply is the same whatever the slot decoded
    before or beside it."""
    alone = [job(drafting, messages, max_tokens=64) for messages in PROMPTS]
    replies = [serve_together(drafting, each)[0] for each in alone]
    accepted = sum(each.accepted for each in alone)
    assert 0 < accepted < sum(each.drafted for each in alone)
    assert all(len(each.tokens) - each.accepted < len(each.tokens) for each in alone)
    # In the other order, two at a time: a step's batch holds several tokens of each slot, and
    # each slot's cells were left by another prompt's rejected drafts.
    together = [job(drafting, messages, max_tokens=64) for messages in PROMPTS[::-1]]
    assert (serve_together(drafting, *together[:2]) + serve_together(drafting, together[2])
            == replies[::-1])


def test_a_sampled_reply_is_never_drafted(drafting):
    prompt, stop = drafting.prompts.chat_prompt(FIRST)
    sampled = protocol.new_job(drafting, {"temperature": 0.7, "max_tokens": 24,
                                          "seed": 3}, prompt, stop, 0)
    serve_together(drafting, sampled)
    assert sampled.lookup is None and sampled.drafted == 0 and len(sampled.tokens) > 1


@pytest.mark.slow
def test_qwen_coder_replies_the_same_to_a_round_with_its_prefix_reused():
    """On the real coder model (its Q4_K_M matrices take llamafile's sgemm for a chunk and
    another path for one token): a repair round reuses the first round's chunks and replies as
    a fresh evaluation does."""
    path = resolve_spec("qwen-coder").gguf_path
    assert path is not None, "qwen-coder's GGUF is not installed (see README, Models)"
    plain, reuse = (model(path, prefix_cache=cache) for cache in (False, True))
    tokens = 32  # the follow-up reuses the same 4 chunks (its first prompt's) as at 48
    (first,) = serve_together(plain, job(plain, FIRST, tokens))
    assert serve_together(reuse, job(reuse, FIRST, tokens)) == [first]
    follow_up = job(reuse, next_round(FIRST, first), tokens)
    assert serve_together(reuse, follow_up) == serve_together(plain, job(plain, next_round(
        FIRST, first), tokens))
    assert follow_up.cached > 0
