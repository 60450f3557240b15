"""The transformers backend: a chat model from the Hub or a local folder, run in this process.

torch and transformers are imported inside these functions only, when a spec asks for this
backend, so runs on a server or a control model never pay for them.
"""

from __future__ import annotations

import os
import time
import zlib
from collections import Counter
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from ..dataset import Task
from ..settings import Settings
from .base import Generation, ModelLoadError

if TYPE_CHECKING:
    from transformers import BatchEncoding


def decoding_kwargs(settings: Settings) -> dict[str, Any]:
    """generate() arguments that make the protocol's temperature the whole decoding rule.

    Model folders ship their own sampling defaults (Qwen: top_k 20, top_p 0.8, repetition
    penalty 1.05), which generate() would otherwise apply; they are overridden so that a score
    means the same decoding whatever model produced it.
    """
    kwargs: dict[str, Any] = {"max_new_tokens": settings.max_new_tokens,
                              "repetition_penalty": 1.0}
    if settings.temperature == 0:
        kwargs["do_sample"] = False
    else:
        kwargs.update(do_sample=True, temperature=settings.temperature, top_p=1.0, top_k=0)
    return kwargs


def sample_seed(seed: int, task_id: str, reply: int) -> int:
    """A task's n-th reply draws the same sample whichever worker runs it, in whatever order."""
    return zlib.crc32(f"{seed}:{task_id}:{reply}".encode())


def torch_dtype(torch: ModuleType, device: str) -> Any:
    # bf16 halves memory and is what these models were trained in; CPUs run it slowly or not at all.
    return torch.bfloat16 if device == "cuda" else torch.float32


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else '(no message)'}"


def _share_cpus(torch: ModuleType) -> None:
    # Every xdist worker would otherwise start one thread per core, oversubscribing the CPU.
    if "OMP_NUM_THREADS" in os.environ:
        return
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // workers))


class TransformersModel:
    def __init__(self, spec: str, source: str, settings: Settings) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.spec = spec
        self.source = source
        self.settings = settings
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        if self.device == "cpu":
            _share_cpus(torch)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source)
            self.model = AutoModelForCausalLM.from_pretrained(
                source, dtype=torch_dtype(torch, self.device))
        except Exception as exc:  # transformers reports a bad folder or id in many types
            raise ModelLoadError(f"cannot load {source}: {_first_line(exc)}") from exc
        if not self.tokenizer.chat_template:
            raise ModelLoadError(f"{source} has no chat template; use an instruct or chat "
                                 "model, whose tokenizer says how to lay out a conversation.")
        # transformers annotates `to` through a decorator whose signature mypy misreads.
        self.model.to(self.device).eval()  # type: ignore[arg-type]
        self.generate_kwargs = decoding_kwargs(settings)
        gen_config = self.model.generation_config
        self.generate_kwargs["eos_token_id"] = gen_config.eos_token_id \
            if gen_config.eos_token_id is not None else self.tokenizer.eos_token_id
        self.generate_kwargs["pad_token_id"] = gen_config.pad_token_id \
            if gen_config.pad_token_id is not None else self.tokenizer.pad_token_id
        self._replies: Counter[str] = Counter()

    def prompt_ids(self, messages: list[dict[str, str]]) -> BatchEncoding:
        # enable_thinking is read by Qwen3's template (off: answer directly) and ignored by others.
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, enable_thinking=False, return_tensors="pt",
            return_dict=True)
        # return_dict=True gives a BatchEncoding; transformers' annotation does not narrow on it.
        return cast("BatchEncoding", encoded).to(self.device)

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation:
        import torch

        started = time.perf_counter()
        inputs = self.prompt_ids(messages)
        if self.settings.temperature > 0:
            torch.manual_seed(sample_seed(self.settings.seed, task.task_id,
                                          self._replies[task.task_id]))
        self._replies[task.task_id] += 1
        with torch.inference_mode():
            # The Auto class's annotated return type is not one generate() accepts as self.
            output = self.model.generate(**inputs, **self.generate_kwargs)  # type: ignore[misc]
        prompt_length = inputs["input_ids"].shape[-1]
        new_tokens = output[0, prompt_length:].tolist()
        # One sequence of ids decodes to one string; the annotation covers batches too.
        text = cast(str, self.tokenizer.decode(new_tokens, skip_special_tokens=True))
        return Generation(text=text, prompt_tokens=prompt_length,
                          completion_tokens=len(new_tokens),
                          seconds=time.perf_counter() - started)
