"""The decode side of our llama.cpp engine: one model, one context of `--parallel` slots, and the
single thread that admits waiting jobs and decodes every busy slot's next token in one batch
(with prompt-lookup drafts when asked). Each prompt is evaluated from its first token in the same
chunks, each slot has KV cells of its own, and slots share a step only on one thread, so a reply
is a function of its prompt alone: docs/models.md, "llama.cpp on a CPU".
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
from collections import deque
from typing import Any

from ...stopping import stop_point
from .chat import PromptText
from .jobs import Job
from .lookup import NgramIndex


class BatchedModel:
    """One model and one context of `slots` sequences; a single thread (`run`) evaluates."""

    def __init__(self, path: str, context: int, threads: int, slots: int, batch: int,
                 prefix_cache: bool = True, draft: int = 0, draft_ngram: int = 3) -> None:
        import llama_cpp

        self.lc = llama_cpp
        llama_cpp.llama_backend_init()
        self.model = llama_cpp.llama_model_load_from_file(
            path.encode(), llama_cpp.llama_model_default_params())
        if not self.model:
            raise SystemExit(f"llama.cpp engine: cannot load the model {path!r}")
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = context * slots  # without kv_unified, each slot gets an equal share
        # A batch holds a prompt chunk, every slot's token, or one slot's token and drafts.
        params.n_batch = params.n_ubatch = max(batch, slots, draft + 1)
        params.n_seq_max = slots
        params.kv_unified = False
        # As llama-cpp-python's Llama has it, so a reply here is the one it gives greedily.
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.n_threads = params.n_threads_batch = threads
        self.ctx = llama_cpp.llama_init_from_model(self.model, params)
        if not self.ctx:
            raise SystemExit(f"llama.cpp engine: cannot make a context of {context} tokens "
                             f"x {slots} slots for {path!r}")
        # Text in and out through llama-cpp-python's own tokenizer and chat template, so that a
        # prompt is tokenized as llama_cpp.server tokenized it.
        self.text = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        self.prompts = PromptText(self.text)
        self.context = context
        self.batch_size = batch
        self.batch = llama_cpp.llama_batch_init(params.n_batch, 0, 1)
        self.prefix_cache = prefix_cache
        self.draft = draft
        self.draft_ngram = draft_ngram
        self.kept: list[list[int]] = [[] for _ in range(slots)]  # each slot's last prompt
        self.free = list(range(slots))[::-1]
        self.active: list[Job] = []
        self.waiting: deque[Job] = deque()
        self.wake = threading.Condition()

    def description(self) -> str:
        """llama.cpp's description of the model: architecture, size and quantization
        ("qwen2 1B Q4_K - Medium")."""
        buffer = ctypes.create_string_buffer(256)
        self.lc.llama_model_desc(self.model, buffer, len(buffer))
        return buffer.value.decode(errors="replace")

    def submit(self, job: Job) -> None:
        with self.wake:
            self.waiting.append(job)
            self.wake.notify()

    def run(self) -> None:
        """The evaluation loop: admits waiting jobs to free slots, one prompt at a time, then
        decodes every busy slot's next token (and its drafts) in one batch."""
        while True:
            with self.wake:
                while not self.waiting and not self.active:
                    self.wake.wait()
                admitted = []
                while self.waiting and self.free:
                    job = self.waiting.popleft()
                    self.place(job)
                    admitted.append(job)
            try:
                for job in admitted:
                    self.start(job)
                if self.active:
                    self.step()
            except RuntimeError as exc:
                for job in [*admitted, *self.active]:
                    if not job.done.is_set():
                        job.error = str(exc)
                        self.finish(job, "error")
                self.active.clear()

    def place(self, job: Job) -> None:
        """Gives the job the free slot that holds the most of its prompt (the one freed last
        among equals). A prefix held by a busy slot is not copied over: across slots (streams,
        with `kv_unified` off) llama.cpp's `llama_memory_seq_cp` copies only a whole stream."""
        reuse = {slot: self.reusable(slot, job.prompt) for slot in self.free}
        job.slot = max(reversed(self.free), key=reuse.__getitem__)
        job.cached = reuse[job.slot]
        self.free.remove(job.slot)

    def reusable(self, slot: int, prompt: list[int]) -> int:
        """How many of `prompt`'s first tokens have in `slot` the cells a fresh evaluation would
        compute: the whole chunks of the prefix it shares with the prompt the slot evaluated
        last (a reply's cells were computed a token at a time, a prompt's a chunk at a time),
        and never the prompt's last token, whose logits are wanted."""
        if not self.prefix_cache:
            return 0
        kept = self.kept[slot]
        limit = min(len(kept), len(prompt) - 1)
        common = next((i for i in range(limit) if kept[i] != prompt[i]), limit)
        return common - common % self.batch_size

    def start(self, job: Job) -> None:
        """Evaluates the prompt in chunks counted from its first token, from the first chunk
        whose cells the slot does not already hold, and samples the reply's first token."""
        job.sampler = self.new_sampler(job)
        self.evaluate(job.slot, job.prompt, job.cached)
        if job.temperature <= 0 and self.draft:
            job.lookup = NgramIndex(self.draft_ngram, job.prompt)
        if self.accept(job, self.lc.llama_sampler_sample(job.sampler, self.ctx, -1)):
            self.active.append(job)

    def evaluate(self, slot: int, prompt: list[int], cached: int) -> None:
        """Evaluates `prompt` into `slot` in chunks counted from its first token, beginning
        after its first `cached` tokens (whole chunks whose cells the slot holds); logits of its
        last token only."""
        self.lc.llama_memory_seq_rm(self.lc.llama_get_memory(self.ctx), slot, cached, -1)
        self.kept[slot] = []  # until the prompt's cells are all there
        for first in range(cached, len(prompt), self.batch_size):
            chunk = prompt[first:first + self.batch_size]
            last = first + len(chunk) == len(prompt)
            self.decode([(token, first + offset, slot, last and offset == len(chunk) - 1)
                         for offset, token in enumerate(chunk)])
        self.kept[slot] = prompt

    def step(self) -> None:
        """Decodes every busy slot's last token in one batch; with drafting, each slot's last
        token and its drafts (greedy replies only) in a batch of their own, so that how a
        slot's tokens are split into llama.cpp's micro-batches (equal counts per sequence) does
        not depend on another slot's drafts. Then as many tokens per slot as the model's own
        argmax confirms."""
        if not self.draft:
            self.decode([(job.tokens[-1], len(job.prompt) + len(job.tokens) - 1, job.slot, True)
                         for job in self.active])
            for index, job in enumerate(list(self.active)):
                self.verify(job, index, [])
            return
        for job in list(self.active):
            position = len(job.prompt) + len(job.tokens) - 1
            drafts = job.lookup.draft(job.tokens, min(
                self.draft, job.max_tokens - len(job.tokens),
                self.context - 1 - position)) if job.lookup else []
            self.decode([(token, position + offset, job.slot, True)
                         for offset, token in enumerate([job.tokens[-1], *drafts])])
            self.verify(job, 0, drafts)

    def verify(self, job: Job, index: int, drafts: list[int]) -> None:
        """Takes the job's next token from the logits at `index` of the last decode, and the
        drafts after it while each is the token the model chose; drops the cells of the rest."""
        accepted = 0
        while True:
            token = self.lc.llama_sampler_sample(job.sampler, self.ctx, index + accepted)
            if not self.accept(job, token):
                self.active.remove(job)
                break
            if accepted == len(drafts) or token != drafts[accepted]:
                break
            accepted += 1
        job.drafted += len(drafts)
        job.accepted += accepted
        if accepted < len(drafts) and not job.done.is_set():
            # The next step writes its token where the first rejected draft was.
            first_rejected = len(job.prompt) + len(job.tokens) - 1
            self.lc.llama_memory_seq_rm(self.lc.llama_get_memory(self.ctx), job.slot,
                                        first_rejected, -1)

    def decode(self, entries: list[tuple[int, int, int, bool]]) -> None:
        batch = self.batch
        batch.n_tokens = len(entries)
        for index, (token, position, slot, logits) in enumerate(entries):
            batch.token[index] = token
            batch.pos[index] = position
            batch.n_seq_id[index] = 1
            batch.seq_id[index][0] = slot
            batch.logits[index] = logits
        status = self.lc.llama_decode(self.ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status}")

    def accept(self, job: Job, token: int) -> bool:
        """Adds a sampled token to the reply; False once the reply is finished."""
        if self.lc.llama_vocab_is_eog(self.vocab, token):
            self.finish(job, "stop")
            return False
        job.tokens.append(token)
        if job.scanner and job.scanner.feed(self.text.detokenize([token], special=job.special)):
            self.finish(job, "stop")
            return False
        if len(job.tokens) >= job.max_tokens or len(job.prompt) + len(job.tokens) >= self.context:
            self.finish(job, "length")
            return False
        return True

    def finish(self, job: Job, reason: str) -> None:
        """Ends the job; its slot keeps its prompt's cells for a later prompt that begins so
        (`reusable`), unless the job failed and they are not known to be whole."""
        job.finish_reason = reason
        if reason == "error":
            self.kept[job.slot] = []
        if job.sampler is not None:
            self.lc.llama_sampler_free(job.sampler)
            job.sampler = None
        print(json.dumps({"prompt_tokens": len(job.prompt), "cached_tokens": job.cached,
                          "completion_tokens": len(job.tokens), "drafted": job.drafted,
                          "accepted": job.accepted, "finish_reason": reason}),
              file=sys.stderr, flush=True)
        with self.wake:
            self.free.append(job.slot)
        job.done.set()

    def new_sampler(self, job: Job) -> Any:
        lc = self.lc
        chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
        if job.temperature <= 0:
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_greedy())
            return chain
        if job.top_p < 1:
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_top_p(job.top_p, 1))
        lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_temp(job.temperature))
        lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_dist(job.seed & 0xFFFFFFFF))
        return chain

    def reply_text(self, job: Job) -> str:
        # Detokenized whole, not from the pieces `accept` joined: a tokenizer may render a piece
        # otherwise at the start of a reply, and this is the text llama-cpp-python would give.
        # Cut before the first stop word only: the line that left the function stays, for the
        # client to cut as BigCode's remove_last_block cuts what its check_fn stopped.
        text = self.prompts.detokenize(job.tokens, job.special)
        cut = stop_point(text, job.stop)
        return text if cut is None else text[:cut]
