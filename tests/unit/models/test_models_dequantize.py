"""Writing a GGUF model as a folder `transformers serve` loads
(pytest_humanfix/models/dequantize.py), on the tiny random model's fp32 GGUF file: the folder's
weights are the model's own, in fp32, with no quantization left in its config, and its tokenizer
encodes as the model's does. Run through `kinds.dequantized_folder` and its cache:
runs/test_serve.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_humanfix.models.dequantize import dequantize

TEXT = "def add(a, b):\n    return a - b\n<|im_end|>"


@pytest.fixture(scope="module")
def folder(tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dequantized") / "model"
    dequantize(tiny_gguf, folder)
    return folder


def test_the_config_keeps_no_quantization(folder):
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["model_type"] == "qwen2" and config["num_hidden_layers"] == 2


def test_the_weights_are_the_models_own_in_fp32(folder, tiny_model):
    import torch
    from safetensors.torch import load_file

    written: dict[str, torch.Tensor] = {}
    for path in sorted(folder.glob("*.safetensors")):
        written.update(load_file(path))
    original = load_file(tiny_model / "model.safetensors")
    # A tied output layer is the embedding, written once.
    assert set(original) - {"lm_head.weight"} <= set(written)
    for name, tensor in original.items():
        if name in written:
            assert written[name].dtype == torch.float32, name
            assert torch.equal(written[name], tensor.float()), name


def test_the_tokenizer_encodes_as_the_models_does(folder, tiny_model):
    from transformers import AutoTokenizer

    ours, theirs = AutoTokenizer.from_pretrained(folder), AutoTokenizer.from_pretrained(tiny_model)
    assert ours.encode(TEXT) == theirs.encode(TEXT)
    assert ours.eos_token == theirs.eos_token == "<|im_end|>"


def test_transformers_loads_the_folder_without_the_gguf(folder, tiny_model):
    import torch
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(folder)
    original = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    tokens = torch.tensor([[5, 17, 42, 99]])
    with torch.no_grad():
        assert torch.allclose(loaded(tokens).logits, original(tokens).logits, atol=1e-5)
    assert getattr(loaded, "hf_quantizer", None) is None
