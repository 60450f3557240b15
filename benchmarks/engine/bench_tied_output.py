"""Whether qwen-coder's dequantized folder could tie its output layer to its embeddings (the
original Qwen2.5-Coder-0.5B ties them; the folder written from the GGUF does not, 272 MB more in
bf16) without changing a greedy reply. The GGUF holds its own output layer, quantized apart from
the embeddings, and transformers unties the two when the file has one. Each task's first prompt
and a recorded greedy reply (the H200's, benchmarks/records/gpu-h200-2026-12-04) are read in one
forward pass of the model dequantized to fp32; the final hidden states are the same either way,
so the untied (the GGUF's own output layer) and tied (the embeddings as output layer) greedy
choices are compared at every position of the reply. Where the untied choice still follows the
recorded reply, the replies of both are the same up to there, and a position where the tied
choice differs first is where their greedy replies part. Method and figures: docs/benchmarks.md,
"Carrying vLLM to the machine".

    python benchmarks/engine/bench_tied_output.py --records RECORDS.jsonl.gz [--gguf FILE]
        [--tasks N] [--json PATH]
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, benchmark_parser, write_json

RECORDS = REPO / "benchmarks" / "records" / "gpu-h200-2026-12-04" / "warm.jsonl.gz"


def first_differing(left: Any, right: Any) -> int | None:
    """The first position where two equal-length token tensors differ, or None."""
    where = (left != right).nonzero()
    return int(where[0]) if len(where) else None


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--records", type=Path, default=RECORDS,
                        help="a run's JSONL (or .jsonl.gz) whose first replies are greedy")
    parser.add_argument("--gguf", type=Path, help="the GGUF file (default: qwen-coder's)")
    parser.add_argument("--tasks", type=int, default=8, help="the first N Python tasks")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pytest_humanfix.agent import prompts
    from pytest_humanfix.datafiles import PACKAGED
    from pytest_humanfix.dataset import load_tasks
    from pytest_humanfix.models.specs import local_gguf, resolve_spec

    torch.set_grad_enabled(False)
    gguf = args.gguf or Path(local_gguf(resolve_spec("qwen-coder")).gguf_path or "")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                 dtype=torch.float32)
    untied_out, embeddings = model.lm_head.weight, model.model.embed_tokens.weight
    opener = gzip.open if args.records.suffix == ".gz" else open
    with opener(args.records, "rt", encoding="utf-8") as handle:
        records = {r["task_id"]: r for r in map(json.loads, handle)}
    tasks = {task.task_id: task for task in load_tasks(PACKAGED)}
    rows = []
    for task_id in [f"Python/{n}" for n in range(args.tasks)]:
        began = time.perf_counter()
        record = records[task_id]
        attempt = record["attempts"][0]
        prompt = tokenizer.apply_chat_template(
            prompts.first_messages(tasks[task_id], record["protocol"]["variant"]),
            add_generation_prompt=True, tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        reply_ids = tokenizer(attempt["reply"], add_special_tokens=False)["input_ids"]
        hidden = model.model(input_ids=torch.tensor([prompt_ids + reply_ids])) \
            .last_hidden_state[0, len(prompt_ids) - 1:-1]
        untied = (hidden @ untied_out.T).argmax(-1)
        tied = (hidden @ embeddings.T).argmax(-1)
        leaves = first_differing(untied, torch.tensor(reply_ids))
        parts = first_differing(untied, tied)
        rows.append({"task": task_id, "reply_tokens": len(reply_ids),
                     "prompt_tokens": len(prompt_ids),
                     "recorded_prompt_tokens": attempt["prompt_tokens"],
                     "untied_leaves_record_at": leaves, "tied_differs_at": parts,
                     "positions_differing": int((untied != tied).sum()),
                     "replies_part": parts is not None and (leaves is None or parts < leaves),
                     "seconds": round(time.perf_counter() - began, 1)})
        print(json.dumps(rows[-1]), flush=True)
    difference = (untied_out - embeddings).float()
    figures = {
        "tasks": len(rows), "positions": sum(r["reply_tokens"] for r in rows),
        "positions_differing": sum(r["positions_differing"] for r in rows),
        "replies_part": sum(r["replies_part"] for r in rows),
        "output_minus_embeddings_rms": float(difference.pow(2).mean().sqrt()),
        "embeddings_rms": float(embeddings.float().pow(2).mean().sqrt()),
        "rows": rows}
    print(json.dumps({k: v for k, v in figures.items() if k != "rows"}))
    write_json(args.json, figures, {"engine": "transformers", "dtype": "float32",
                                    "device": "cpu", "model": gguf.name})


if __name__ == "__main__":
    main()
