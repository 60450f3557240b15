"""The scheduling pieces of our llama.cpp engine that need no model: which free slot a job gets,
and how much of its prompt the slot's cells hold for it."""

from pytest_humanfix.models.engines.llamacpp.decode import BatchedModel
from pytest_humanfix.models.engines.llamacpp.jobs import Job
from pytest_humanfix.models.engines.llamacpp.lookup import NgramIndex


def slots(kept: list[list[int]], batch: int = 4, prefix_cache: bool = True) -> BatchedModel:
    model = object.__new__(BatchedModel)
    model.kept, model.batch_size, model.prefix_cache = kept, batch, prefix_cache
    model.free = list(range(len(kept)))[::-1]
    return model


def test_only_whole_chunks_of_the_shared_prefix_are_reused():
    model = slots([list(range(20))])
    assert model.reusable(0, list(range(10)) + [99] * 5) == 8  # 10 shared: two chunks of 4
    assert model.reusable(0, list(range(3)) + [99]) == 0  # less than a chunk
    # The prompt's last token is always evaluated, for its logits.
    assert model.reusable(0, list(range(9))) == 8
    assert model.reusable(0, list(range(8))) == 4


def test_without_the_prefix_cache_nothing_is_reused():
    assert slots([list(range(20))], prefix_cache=False).reusable(0, list(range(20))) == 0


def test_a_job_gets_the_free_slot_that_holds_most_of_its_prompt():
    model = slots([[], list(range(12)), list(range(6))])
    job = Job(list(range(16)), 10, [], 0.0, 1.0, 0)
    model.place(job)
    assert (job.slot, job.cached) == (1, 12)
    assert 1 not in model.free


def test_among_equals_the_slot_freed_last_is_taken():
    model = slots([[], [], []])
    model.free = [2, 0, 1]  # 1 was freed last
    job = Job([5, 6, 7], 10, [], 0.0, 1.0, 0)
    model.place(job)
    assert (job.slot, job.cached) == (1, 0)


def test_a_draft_follows_the_latest_earlier_occurrence_of_the_longest_suffix():
    index = NgramIndex(3, [1, 2, 3, 4, 9, 2, 3, 5, 6])
    assert index.draft([2, 3], 2) == [5, 6]  # (2, 3) last ended before 5
    assert index.draft([2, 3, 8], 2) == []  # 8 occurred nowhere before
