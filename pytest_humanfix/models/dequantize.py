"""Writes a GGUF model as a folder that `transformers serve` can load (fp32 safetensors beside
the tokenizer), for `--humanfix-serve --humanfix-engine transformers` on a GGUF file.

It runs as its own process (`python -m pytest_humanfix.models.dequantize GGUF FOLDER`), started
by `serve.dequantized_folder`: the controller only schedules, and should not hold torch and a
copy of the weights for the whole run.
"""

from __future__ import annotations

import sys
from pathlib import Path


def dequantize(gguf: Path, folder: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                 dtype=torch.float32)
    # Loading dequantized every tensor to fp32; what is left of the GGUF quantizer only stops
    # save_pretrained, which refuses to write a model it takes for quantized.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


if __name__ == "__main__":
    dequantize(Path(sys.argv[1]), Path(sys.argv[2]))
