"""The transformers backend: a chat model from the Hub or a local folder, run in this process.

torch and transformers are imported inside these functions only, when a spec asks for this
backend, so runs on a server or a control model never pay for them.
"""

from __future__ import annotations

import os
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from .. import computed_by
from ..dataset import Task
from ..languages import LANGUAGES
from .base import Generation, Message, ModelLoadError, ReplySeeds, settle_prompt
from .generation import GenerationConfig
from .specs import TOOLS_UNSERVED, ResolvedSpec, gguf_unavailable
from .stopping import stop_point
from .toolcalls import Tool

if TYPE_CHECKING:
    from transformers import BatchEncoding


def decoding_kwargs(config: GenerationConfig, temperature: float | None = None) -> dict[str, Any]:
    """generate() arguments that make the protocol's temperature the whole decoding rule.

    Model folders ship their own sampling defaults (Qwen: top_k 20, top_p 0.8, repetition
    penalty 1.05), which generate() would otherwise apply; they are overridden so that a score
    means the same decoding whatever model produced it.
    """
    temperature = config.temperature if temperature is None else temperature
    kwargs: dict[str, Any] = {"max_new_tokens": config.max_new_tokens,
                              "repetition_penalty": 1.0}
    if temperature == 0:
        kwargs["do_sample"] = False
    else:
        kwargs.update(do_sample=True, temperature=temperature, top_p=1.0, top_k=0)
    return kwargs


def torch_dtype(torch: ModuleType, device: str) -> Any:
    # bf16 halves memory and is what these models were trained in; CPUs run it slowly or not at all.
    return torch.bfloat16 if device == "cuda" else torch.float32


def deterministic_torch(torch: ModuleType, on: bool) -> dict[str, Any]:
    """Makes this process's GPU arithmetic repeatable when `on`, and says what is in force:
    torch's deterministic algorithms (warn_only: an op without a deterministic kernel warns
    rather than fails a task), cuBLAS's fixed workspace (read when its first handle is made,
    before any matrix product here) and cuDNN without autotuning."""
    if on:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.benchmark = False
    # Process-wide either way, so that what is recorded is what this run asked for.
    torch.use_deterministic_algorithms(on, warn_only=True)
    return {"deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cublas_workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark)}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else '(no message)'}"


def _share_cpus(torch: ModuleType) -> None:
    # Every xdist worker would otherwise start one thread per core, oversubscribing the CPU.
    if "OMP_NUM_THREADS" in os.environ:
        return
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // workers))


def continuation_text(tokenizer: Any, tokens: Any) -> str:
    """A completion's text as BigCode reads it: special tokens kept, spaces left as decoded
    (`utils.update_code_gens` once the end-of-sequence token is a stop word, as it always is
    for HumanEvalPack; `EndOfFunctionCriteria` decodes with special tokens kept too)."""
    return cast(str, tokenizer.decode(tokens, skip_special_tokens=False,
                                      clean_up_tokenization_spaces=False))


class StopWords:
    """A stopping criterion for generate(): true once the continuation holds a stop word or has
    left the function (`function_end`, a rule of `stopping`), as BigCode's
    `EndOfFunctionCriteria` with `check_fn` stops a completion; read on the text with special
    tokens kept."""

    def __init__(self, tokenizer: Any, prompt_length: int, stop: list[str],
                 function_end: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.prompt_length = prompt_length
        self.stop = stop
        self.function_end = function_end

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        text = continuation_text(self.tokenizer, input_ids[0, self.prompt_length:])
        done = stop_point(text, self.stop, self.function_end) is not None
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


class TransformersModel:
    def __init__(self, spec: str, source: str, config: GenerationConfig,
                 gguf_file: str | None = None) -> None:
        """`source` is a Hub id or a model folder; `gguf_file`, a GGUF file in that folder,
        holds weights, tokenizer and chat template together (dequantized on load)."""
        self.spec = spec
        self.source = os.path.join(source, gguf_file) if gguf_file else source
        self.config = config
        missing = gguf_unavailable(ResolvedSpec("transformers", source, gguf_file))
        if missing:
            raise ModelLoadError(missing)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        if self.device == "cpu":
            _share_cpus(torch)
        determinism = deterministic_torch(torch, config.determinism)
        files = {"gguf_file": gguf_file} if gguf_file else {}
        # transformers would otherwise pick what is installed (flash-attention kernels).
        attention = {"attn_implementation": "sdpa"} if config.determinism else {}
        dtype = torch_dtype(torch, self.device)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source, **files)
            self.model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **files,
                                                              **attention)
        except Exception as exc:  # transformers reports a bad folder or id in many types
            raise ModelLoadError(f"cannot load {self.source}: {_first_line(exc)}") from exc
        if config.prompt in ("chat", "primed") and not self.tokenizer.chat_template:
            raise ModelLoadError(
                f"{self.source} has no chat template, so it cannot be prompted as a chat "
                f"(--humanfix-prompt {config.prompt}); use --humanfix-prompt completion or auto.")
        self.prompt = settle_prompt(config.prompt, bool(self.tokenizer.chat_template))
        # transformers annotates `to` through a decorator whose signature mypy misreads.
        self.model.to(self.device).eval()  # type: ignore[arg-type]
        self.generate_kwargs = decoding_kwargs(config)
        gen_config = self.model.generation_config
        self.generate_kwargs["eos_token_id"] = gen_config.eos_token_id \
            if gen_config.eos_token_id is not None else self.tokenizer.eos_token_id
        self.generate_kwargs["pad_token_id"] = gen_config.pad_token_id \
            if gen_config.pad_token_id is not None else self.tokenizer.pad_token_id
        self.seeds = ReplySeeds(config.seed)
        import transformers

        self.computed_by = computed_by.transformers_in_process(
            torch, transformers.__version__, self.device, str(dtype).removeprefix("torch."),
            str(getattr(self.model.config, "_attn_implementation", None)), determinism,
            torch.get_num_threads())

    def prompt_ids(self, messages: list[Message],
                   start: str | None = None) -> BatchEncoding:
        """The conversation through the chat template, ready for the model's answer, or with
        the answer begun by `start`, left open for the model to continue (the template's
        `continue_final_message`, which drops what closes the final message)."""
        primed = start is not None
        if start is not None:
            messages = [*messages, {"role": "assistant", "content": start}]
        # enable_thinking is read by Qwen3's template (off: answer directly) and ignored by others.
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=not primed, continue_final_message=primed,
            enable_thinking=False, return_tensors="pt", return_dict=True)
        # return_dict=True gives a BatchEncoding; transformers' annotation does not narrow on it.
        return cast("BatchEncoding", encoded).to(self.device)

    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[Tool] | None = None,
                 stop: list[str] | None = None) -> Generation:
        if tools:
            raise ModelLoadError(TOOLS_UNSERVED)
        return self._run(self.prompt_ids(messages), task, stop or [], temperature)

    def complete(self, prompt: str, stop: list[str], task: Task,
                 temperature: float | None = None) -> Generation:
        return self._run(self.tokenizer(prompt, return_tensors="pt").to(self.device), task, stop,
                         temperature, function_end=LANGUAGES[task.language].function_end)

    def continue_answer(self, messages: list[Message], start: str, stop: list[str],
                        task: Task, temperature: float | None = None) -> Generation:
        return self._run(self.prompt_ids(messages, start), task, stop, temperature)

    def _run(self, inputs: Any, task: Task, stop: list[str], temperature: float | None,
             function_end: str | None = None) -> Generation:
        """A chat reply (`function_end` None) or a completion, which BigCode's rules end."""
        import torch
        from transformers import StoppingCriteriaList

        started = time.perf_counter()
        temperature = self.config.temperature if temperature is None else temperature
        kwargs = {**self.generate_kwargs, **decoding_kwargs(self.config, temperature)}
        # A greedy reply draws nothing: its seed, the run's, changes no reply.
        torch.manual_seed(self.seeds.next(task, temperature))
        prompt_length = inputs["input_ids"].shape[-1]
        room = self.room(prompt_length)
        if room < 1:
            return Generation(text="", prompt_tokens=prompt_length, completion_tokens=0,
                              seconds=time.perf_counter() - started, finish_reason="length",
                              engine="transformers")
        completion = function_end is not None
        if completion and stop and self.tokenizer.eos_token:
            # generation.py appends the tokenizer's end-of-sequence text to the stop words.
            stop = [*stop, self.tokenizer.eos_token]
        criteria = StoppingCriteriaList(
            [StopWords(self.tokenizer, prompt_length, stop, function_end)]
            if stop or completion else [])
        with torch.inference_mode():
            # The Auto class's annotated return type is not one generate() accepts as self.
            output = self.model.generate(  # type: ignore[misc]
                **inputs, **{**kwargs, "max_new_tokens": room}, stopping_criteria=criteria)
        new_tokens = output[0, prompt_length:].tolist()
        eos = self.generate_kwargs["eos_token_id"]
        ended_by_eos = bool(new_tokens) and new_tokens[-1] in (eos if isinstance(eos, list)
                                                               else [eos])
        if completion:
            # The end of sequence that ended generation is no text, as no server shows it.
            text = continuation_text(self.tokenizer,
                                     new_tokens[:-1] if ended_by_eos else new_tokens)
        else:
            # One sequence of ids decodes to one string; the annotation covers batches too.
            text = cast(str, self.tokenizer.decode(new_tokens, skip_special_tokens=True))
        # The reply ends before its first stop word, as a server's does; the line that left
        # the function stays, for the graded code to cut as BigCode's remove_last_block cuts
        # the generation its check_fn stopped (so the graded code is byte for byte the same
        # as when stop words alone ended the reply).
        cut = stop_point(text, stop)
        ended = len(new_tokens) < room or ended_by_eos \
            or stop_point(text, stop, function_end) is not None
        return Generation(text=text if cut is None else text[:cut], prompt_tokens=prompt_length,
                          completion_tokens=len(new_tokens),
                          seconds=time.perf_counter() - started,
                          finish_reason="stop" if ended else "length", engine="transformers")

    def room(self, prompt_length: int) -> int:
        """New tokens a reply may have: --humanfix-max-new-tokens, or what BigCode's
        --max_length_generation leaves after the prompt. BigCode left-truncates a longer
        prompt to that length (main.py's tokenizer, truncation_side="left"), which leaves no
        room, and its `complete_code` then keeps the prompt alone: the reply is empty."""
        if self.config.max_length is None:
            return self.config.max_new_tokens
        return self.config.max_length - prompt_length
