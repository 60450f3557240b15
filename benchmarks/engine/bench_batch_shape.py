"""What a llama.cpp decode costs by the shape of its batch, on the engine's own thread count, and
whether a token's logits depend on the batch it is decoded in. Method: docs/benchmarks.md, "How each
script measures"; figures: docs/benchmarks.md, "What a batch costs on a CPU thread".

    python benchmarks/engine/bench_batch_shape.py [--model qwen-coder] [--threads 1] [--repeats 5]
        [--json PATH]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, write_json

from pytest_humanfix import computed_by
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.engines.llamacpp.cli import parse_arguments
from pytest_humanfix.models.engines.llamacpp.decode import BatchedModel
from pytest_humanfix.models.specs import local_gguf, resolve_spec

PROMPT_TOKENS = 256
DRAFT_SHAPES = (2, 4, 9)  # the last token and 1, 3 or 8 drafts


class Probe:
    """One context of two slots on the model, decoding batches of a given shape."""

    def __init__(self, gguf: str, threads: int) -> None:
        # The engine's default chunk (--n_batch), read from its own parser.
        self.chunk = parse_arguments(["--model", gguf]).n_batch
        self.model = BatchedModel(gguf, 2048, threads, 2, self.chunk, prefix_cache=False)
        self.lc = self.model.lc
        self.memory = self.lc.llama_get_memory(self.model.ctx)
        self.vocab_size = self.lc.llama_vocab_n_tokens(self.model.vocab)

    def logits(self, index: int) -> np.ndarray:
        pointer = self.lc.llama_get_logits_ith(self.model.ctx, index)
        return np.ctypeslib.as_array(pointer, shape=(self.vocab_size,)).copy()

    def evaluate_prompt(self, slot: int, tokens: list[int]) -> float:
        """Seconds to evaluate `tokens` into `slot` as the engine evaluates a prompt."""
        began = time.perf_counter()
        self.model.evaluate(slot, tokens, 0)
        return time.perf_counter() - began

    def timed(self, entries: list[tuple[int, int, int, bool]], repeats: int) -> float:
        """Median seconds of decoding `entries` after the prompt, its cells dropped each time."""
        times = []
        for _ in range(repeats):
            for slot in {slot for _, _, slot, _ in entries}:
                self.lc.llama_memory_seq_rm(self.memory, slot, PROMPT_TOKENS, -1)
            began = time.perf_counter()
            self.model.decode(entries)
            times.append(time.perf_counter() - began)
        return statistics.median(times)


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--model", default="qwen-coder")
    parser.add_argument("--threads", type=int, default=1, help="the engine's --n_threads")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    gguf = local_gguf(resolve_spec(args.model)).gguf_path
    if gguf is None:
        parser.error(f"--model {args.model}: not a GGUF model; llama.cpp needs one")
    task = load_tasks(str(args.dataset))[0]
    probe = Probe(str(gguf), args.threads)
    text = task.prompt + task.buggy_solution + task.test
    tokens = probe.model.text.tokenize(text.encode(), special=True)
    if len(tokens) < PROMPT_TOKENS + max(DRAFT_SHAPES):
        parser.error(f"the first task of {args.dataset} has {len(tokens)} tokens; "
                     f"{PROMPT_TOKENS + max(DRAFT_SHAPES)} are needed")
    prompt = tokens[:PROMPT_TOKENS]
    following = tokens[PROMPT_TOKENS:PROMPT_TOKENS + max(DRAFT_SHAPES)]

    prompt_seconds = probe.evaluate_prompt(0, prompt)
    probe.evaluate_prompt(1, prompt)
    reference = []
    one_token = []
    for offset, token in enumerate(following):
        began = time.perf_counter()
        probe.model.decode([(token, PROMPT_TOKENS + offset, 0, True)])
        one_token.append(time.perf_counter() - began)
        reference.append(probe.logits(0))
    single = statistics.median(one_token)

    rows = []
    for size in DRAFT_SHAPES:
        seconds = probe.timed([(token, PROMPT_TOKENS + offset, 0, True)
                               for offset, token in enumerate(following[:size])], args.repeats)
        same = all(np.array_equal(probe.logits(i), reference[i]) for i in range(size))
        rows.append((f"{size} tokens of one slot", size, seconds, same))
    seconds = probe.timed([(following[0], PROMPT_TOKENS, 0, True),
                           (following[0], PROMPT_TOKENS, 1, True)], args.repeats)
    same = all(np.array_equal(probe.logits(i), reference[0]) for i in range(2))
    rows.append(("1 token in each of 2 slots", 2, seconds, same))

    print(f"{args.model} ({Path(gguf).name}), {args.threads} thread(s), median of "
          f"{args.repeats}; prompt of {PROMPT_TOKENS} tokens in chunks of {probe.chunk}: "
          f"{PROMPT_TOKENS / prompt_seconds:.1f} tokens/s, "
          f"{1000 * prompt_seconds / PROMPT_TOKENS:.1f} ms a token")
    print(f"{'decode':28} {'ms':>8} {'x one':>7} {'tokens per one-token cost':>26}  "
          "logits identical to one at a time")
    print(f"{'1 token of one slot':28} {1000 * single:8.1f} {1.0:7.2f} {1.0:26.2f}  "
          "(the reference)")
    for name, size, seconds, same in rows:
        ratio = seconds / single
        print(f"{name:28} {1000 * seconds:8.1f} {ratio:7.2f} {size / ratio:26.2f}  "
              f"{'yes' if same else 'no'}")
    write_json(args.json, {
        "model": args.model, "threads": args.threads, "repeats": args.repeats,
        "prompt_tokens": PROMPT_TOKENS, "chunk": probe.chunk,
        "prompt_tokens_per_s": PROMPT_TOKENS / prompt_seconds, "one_token_ms": 1000 * single,
        "shapes": [{"decode": name, "tokens": size, "ms": 1000 * seconds,
                    "x_one": seconds / single, "tokens_per_one_token_cost": size * single / seconds,
                    "logits_identical": same} for name, size, seconds, same in rows]},
        computed_by.llamacpp(probe.lc, args.threads, probe.model.description()))


if __name__ == "__main__":
    main()
