"""What nvidia-smi says of a GPU, and the GPUs a run takes (devices.py): the parts of GPU
assignment tests/unit/test_devices.py leaves to whole runs, here with a scripted nvidia-smi."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.devices import DeviceError, gpu_description, requested_or_visible
from pytest_humanfix.settings import Settings


def scripted_nvidia_smi(folder: Path, monkeypatch: pytest.MonkeyPatch, says: str) -> Path:
    """An nvidia-smi on PATH that prints `says` and keeps its arguments in `args`."""
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho \"$@\" > {folder / 'args'}\nprintf '{says}'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    return folder / "args"


def test_a_gpu_is_described_by_name_and_compute_capability(tmp_path, monkeypatch):
    args = scripted_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H100 80GB HBM3, 9.0\\n")
    assert gpu_description("1,2") == "NVIDIA H100 80GB HBM3 (sm_90)"
    assert args.read_text().split()[-2:] == ["-i", "1"]  # the first of a worker's devices


@pytest.mark.parametrize("says", ["", "no comma here\\n"])
def test_a_gpu_nvidia_smi_cannot_describe_is_unknown(tmp_path, monkeypatch, says):
    scripted_nvidia_smi(tmp_path, monkeypatch, says)
    assert gpu_description("0") == "unknown"


def test_without_nvidia_smi_a_gpu_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_description("0") == "unknown"


def test_devices_asked_for_count_within_the_outer_restriction():
    settings = Settings(devices=("1",))
    assert requested_or_visible(settings, {"CUDA_VISIBLE_DEVICES": "4,6"},
                                lambda: pytest.fail("listed")) == ["6"]
    assert requested_or_visible(settings, {}, lambda: pytest.fail("listed")) == ["1"]
    with pytest.raises(DeviceError, match="leaves 1 GPU"):
        requested_or_visible(settings, {"CUDA_VISIBLE_DEVICES": "4"})


def test_without_devices_asked_for_a_run_takes_every_visible_gpu():
    assert requested_or_visible(Settings(), {}, lambda: ["0", "1"]) == ["0", "1"]
    assert requested_or_visible(Settings(), {"CUDA_VISIBLE_DEVICES": "-1"},
                                lambda: ["0"]) == []
