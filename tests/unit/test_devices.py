"""GPU assignment for xdist workers: the pure rules, then real runs with --humanfix-devices."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from pytest_humanfix.devices import (
    DeviceError,
    DevicePool,
    nvidia_smi_gpus,
    parse_visible,
    pin,
    resolve_requested,
    visible_gpus,
)
from pytest_humanfix.session.placement import (
    WORKERS_PER_ENGINE,
    Layout,
    auto_num_workers,
    choose_layout,
    run_devices,
)
from pytest_humanfix.settings import Settings


def no_gpu_listing() -> list[str]:
    raise AssertionError("GPUs must not be looked for here")


@pytest.mark.parametrize("value, devices", [
    ("0,1", ["0", "1"]), (" 2 , 3 ", ["2", "3"]), ("", []), ("-1", []), ("2,-1,3", ["2"]),
    ("GPU-8f2c,MIG-1a", ["GPU-8f2c", "MIG-1a"]),
])
def test_cuda_visible_devices_read_as_cuda_reads_it(value: str, devices: list[str]) -> None:
    assert parse_visible(value) == devices


def test_outer_cuda_visible_devices_wins_over_the_gpu_listing() -> None:
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "5,7"}, no_gpu_listing) == ["5", "7"]
    assert visible_gpus({}, lambda: ["0", "1", "2"]) == ["0", "1", "2"]


def test_nvidia_smi_listing_is_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: GPU-a)'\n"
                    "echo '  MIG 1g.10gb Device 0: (UUID: MIG-b)'\n"
                    "echo 'GPU 1: NVIDIA H100 (UUID: GPU-c)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert nvidia_smi_gpus() == ["0", "1"]
    fake.unlink()
    assert nvidia_smi_gpus() == []


def test_requested_devices_pass_through_without_an_outer_restriction() -> None:
    assert resolve_requested(("0", "1"), None) == ["0", "1"]


def test_requested_devices_count_within_an_outer_restriction() -> None:
    # As torch numbers them: under CUDA_VISIBLE_DEVICES=2,3, device 1 is physical GPU 3.
    assert resolve_requested(("1", "0"), ["2", "3"]) == ["3", "2"]
    assert resolve_requested(("GPU-b",), ["GPU-a", "GPU-b"]) == ["GPU-b"]
    with pytest.raises(DeviceError, match="leaves 2 GPU\\(s\\), numbered 0 to 1"):
        resolve_requested(("2",), ["2", "3"])


def test_a_device_named_twice_is_refused() -> None:
    with pytest.raises(DeviceError, match="names 0 more than once"):
        resolve_requested(("0", "1", "0"), None)


def test_run_devices_for_each_kind_of_model() -> None:
    given = Settings(model="canonical", devices=("0", "1"))
    assert run_devices(given, {}, no_gpu_listing) == ["0", "1"]
    # A control or a server needs no GPU in the workers, so none is looked for.
    assert run_devices(Settings(model="canonical"), {}, no_gpu_listing) == []
    assert run_devices(Settings(model="openai:m"), {}, no_gpu_listing) == []
    copies = Settings(model="qwen", in_process=True)
    assert run_devices(copies, {}, lambda: ["0", "1"]) == ["0", "1"]
    assert run_devices(copies, {"CUDA_VISIBLE_DEVICES": "3"}, no_gpu_listing) == ["3"]
    assert run_devices(Settings(model="qwen"), {}, lambda: []) == []
    # Where GPUs are present, a transformers model runs in shared engines, which hold them.
    assert run_devices(Settings(model="qwen"), {}, lambda: ["0", "1"]) == []


def test_gpus_present_mean_a_shared_engine_unless_copies_are_asked_for() -> None:
    two = lambda: ["0", "1"]  # noqa: E731
    layout = choose_layout(Settings(model="qwen"), {}, two)
    assert layout.serve and "2 GPU(s) present" in layout.why
    assert "--humanfix-in-process" in layout.why
    # The GPUs the run may use are those counted: CUDA_VISIBLE_DEVICES and --humanfix-devices.
    assert "1 GPU(s)" in choose_layout(Settings(model="qwen"),
                                       {"CUDA_VISIBLE_DEVICES": "1"}, two).why
    assert "1 GPU(s)" in choose_layout(Settings(model="qwen", devices=("0",)), {}, two).why
    assert choose_layout(Settings(model="qwen", in_process=True), {}, two) == \
        Layout(False, "as --humanfix-in-process asks")
    # A CUDA_VISIBLE_DEVICES on a machine without GPUs (nvidia-smi lists none) is no GPU.
    cpu = choose_layout(Settings(model="qwen"), {"CUDA_VISIBLE_DEVICES": "0"}, lambda: [])
    assert not cpu.serve and cpu.why.startswith("no GPU present")
    assert choose_layout(Settings(model="qwen", serve=True), {}, no_gpu_listing).serve
    # Servers, replays and controls run nowhere of ours: nothing to choose, nothing said.
    for model in ("openai:m", "canonical"):
        assert choose_layout(Settings(model=model), {}, no_gpu_listing) == Layout(False, "")


def test_auto_workers_is_one_per_gpu_for_copies_and_enough_to_feed_shared_engines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    four = lambda: ["0", "1", "2", "3"]  # noqa: E731
    assert auto_num_workers(Settings(model="qwen", in_process=True), {}, four) == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert auto_num_workers(Settings(model="qwen"), {}, four) == 4 * WORKERS_PER_ENGINE
    # At least a worker per core, for the sandbox.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(128)))
    assert auto_num_workers(Settings(model="qwen"), {}, four) == 128
    # No GPU, or a bad option (reported when the run starts): xdist picks, one per CPU.
    assert auto_num_workers(Settings(model="qwen"), {}, lambda: []) is None
    assert auto_num_workers(Settings(model="qwen", devices=("0", "0")), {}, four) is None


def test_pool_spreads_workers_and_reuses_a_crashed_workers_gpu() -> None:
    # Three GPUs for two workers, so that a GPU never given back would show: the replacement
    # would take the spare GPU 2 instead of the crashed worker's GPU 0.
    pool = DevicePool(["0", "1", "2"])
    assert pool.acquire("gw0") == "0"
    assert pool.acquire("gw1") == "1"
    assert pool.acquire("gw0") == "0"  # asking again changes nothing
    pool.release("gw0")  # gw0 crashed
    assert pool.acquire("gw2") == "0"  # its replacement takes the freed GPU
    assert pool.acquire("gw3") == "2"
    assert pool.acquire("gw4") == "0"  # more workers than GPUs: they share, evenly
    assert DevicePool([]).acquire("gw0") is None


def test_pin_sets_the_variable_before_cuda_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    environ: dict[str, str] = {}
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    pin("1", environ)
    assert environ == {"CUDA_VISIBLE_DEVICES": "1"}
    fake_torch.cuda.is_initialized = lambda: True
    with pytest.raises(DeviceError, match="CUDA was initialised"):
        pin("0", {})


CRASHING_CONFTEST = """
import os
from pathlib import Path

def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        # What the worker's CUDA sees, after pytest-humanfix pinned it.
        Path("seen-" + worker).write_text(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))

def pytest_runtest_setup(item):
    if os.environ.get("PYTEST_XDIST_WORKER") == "gw0":
        os._exit(1)
"""


@pytest.mark.usefixtures("no_outer_cuda")
def test_replacement_of_a_crashed_worker_takes_its_gpu(humanfix_pytester: pytest.Pytester,
                                                       read_records) -> None:
    humanfix_pytester.makeconftest(CRASHING_CONFTEST)
    # A spare third GPU: a replacement given a fresh GPU rather than the freed one would get 2.
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "4",
                                         "-n", "2", "--humanfix-devices", "0,1,2")
    result.stdout.fnmatch_lines(["*replacing crashed worker gw0*"])
    seen = {path.name.removeprefix("seen-"): path.read_text()
            for path in humanfix_pytester.path.glob("seen-gw*")}
    assert seen["gw0"] == "0" and seen["gw1"] == "1"
    assert seen["gw2"] == "0"
    records = read_records()
    assert {r["device"] for r in records if r["worker"] == "gw1"} <= {"1"}
    assert {r["device"] for r in records if r["worker"] == "gw2"} <= {"0"}
    # The item gw0 died on has the controller's error record; every task has one record.
    assert len({r["task_id"] for r in records}) == len(records) == 4
    assert all(r["outcome"] == "error" and "worker running this task died" in r["error"]
               for r in records if r["worker"] == "gw0")


@pytest.mark.usefixtures("no_outer_cuda")
def test_auto_starts_one_worker_per_device(humanfix_pytester: pytest.Pytester,
                                           read_records) -> None:
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "3",
                                         "-n", "auto", "--humanfix-devices", "0,1,2")
    result.stdout.fnmatch_lines(["*3 workers [[]3 items[]]*"])
    records = read_records()
    assert sorted(r["device"] for r in records) == ["0", "1", "2"]
    assert len({(r["worker"], r["device"]) for r in records}) == 3


def test_outer_restriction_is_respected(humanfix_pytester: pytest.Pytester, read_records,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "2",
                                         "-n", "2", "--humanfix-devices", "1,0")
    result.assert_outcomes(passed=2)
    assert {r["worker"]: r["device"] for r in read_records()} \
        == {"gw0": "6", "gw1": "4"}


def test_bad_device_is_a_short_usage_error(humanfix_pytester: pytest.Pytester,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "-n", "2",
                                         "--humanfix-devices", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--humanfix-devices 2 is not visible" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


@pytest.mark.usefixtures("no_outer_cuda")
def test_a_run_without_xdist_takes_the_first_device(run_on_a_device, cuda_initialised: bool,
                                                    read_records) -> None:
    result = run_on_a_device("--humanfix-model", "canonical", "--humanfix-max", "1",
                             "--humanfix-devices", "1,0")
    result.assert_outcomes(passed=1)
    assert [r["device"] for r in read_records()] == ["1"]
    if not cuda_initialised:  # the run was in this process: the variable is set here
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"  # undone by no_outer_cuda afterwards


def test_the_layout_line_names_the_engines_once_per_device() -> None:
    from pytest_humanfix.session.engine_start import layout_note

    def engine(device: str | None) -> types.SimpleNamespace:
        return types.SimpleNamespace(device=device, model=types.SimpleNamespace(engine="llamacpp"))

    asked = Layout(True, "as --humanfix-serve asks")
    cpu = types.SimpleNamespace(engines=[engine(None), engine(None)])
    assert layout_note(asked, cpu, 4) == ("layout: 2 shared llamacpp engine(s) on the CPU, asked "
                                          "by 4 worker(s), as --humanfix-serve asks")
    gpus = types.SimpleNamespace(engines=[engine("0"), engine("1")])
    assert "on GPU 0, GPU 1, asked by 32" in layout_note(asked, gpus, 32)
    copies = Layout(False, "as --humanfix-in-process asks")
    assert layout_note(copies, None, 2) == ("layout: a copy of the model in each of 2 worker(s), "
                                            "as --humanfix-in-process asks")


def test_the_engine_is_sized_for_the_longest_first_request_in_bytes(dataset: Path) -> None:
    """The first request is the first prompt plus the base a primed answer adds, counted in
    UTF-8 bytes (a token is at least one byte), and the run's longest one sizes the engine."""
    import dataclasses

    from pytest_humanfix.agent.prompts import first_prompt, prompt_base
    from pytest_humanfix.dataset import load_tasks
    from pytest_humanfix.session.engine_start import longest_prompt

    tasks = load_tasks(str(dataset))[:3]
    wide = dataclasses.replace(tasks[1], test=tasks[1].test + "# " + "é" * 5000)
    expected = len((first_prompt(wide, "tests") + prompt_base(wide, "tests")).encode())
    assert longest_prompt([tasks[0], wide, tasks[2]], "tests") == expected
    assert expected > len(first_prompt(wide, "tests")) + 5000  # é is two bytes
    assert longest_prompt([], "tests") == 0
