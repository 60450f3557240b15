"""The command lines and sizes `--humanfix-serve` gives its engines."""

import sys

import pytest

from pytest_humanfix.models.engines import commands
from pytest_humanfix.models.engines.commands import CpuLayout, cache_blocks, cpu_layout
from pytest_humanfix.models.engines.kinds import ServedModel


@pytest.mark.parametrize(("workers", "layout"), [
    (1, CpuLayout(1, 4, 1)), (2, CpuLayout(2, 2, 1)), (3, CpuLayout(3, 1, 1)),
    (4, CpuLayout(4, 1, 1)), (5, CpuLayout(4, 1, 2)), (8, CpuLayout(4, 1, 2)),
    (9, CpuLayout(4, 1, 3))])
def test_workers_are_laid_over_four_cores(monkeypatch, workers: int, layout: CpuLayout):
    monkeypatch.setattr(commands.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert cpu_layout(workers) == layout


def test_the_kv_cache_holds_every_request_with_the_free_share_left():
    # 2 requests of 257 tokens: 2 blocks each, 4 blocks, over 85% usable.
    assert cache_blocks(2, 257) == 5
    assert cache_blocks(1, 256) == 2  # 1 / 0.85, rounded up


def test_our_llama_cpp_engine_is_run_as_a_module_with_its_layout():
    command = commands.engine_command(ServedModel("llamacpp", "/m.gguf", "m"), 8123, None, 5,
                                      engine_args=("--n_batch", "128"),
                                      layout=CpuLayout(2, 1, 3))
    assert command[:3] == [sys.executable, "-m", "pytest_humanfix.models.engines.llamacpp"]
    flags = dict(zip(command[3::2], command[4::2]))
    assert flags["--model"] == "/m.gguf" and flags["--model_alias"] == "m"
    assert (flags["--n_threads"], flags["--parallel"], flags["--seed"]) == ("1", "3", "5")
    assert command[-2:] == ["--n_batch", "128"]  # the user's arguments come last, and win
