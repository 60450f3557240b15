"""llama.cpp's engine: an OpenAI-compatible server whose parallel slots are decoded together,
and whose every reply is a function of its prompt alone.

llama-cpp-python's own server takes one request at a time, so `-n N` workers on a CPU could only
run at once with an engine each. Yet a decode step of a small model on one thread is mostly fixed
cost: SmolLM2-135M decodes 48 tokens/s alone and 68 as two sequences in one batch, 88 as four. So
one engine here holds `--parallel` slots, one per worker it serves, and decodes every busy slot
in each step, on llama-cpp-python's bindings.

A reply must not depend on what else the engine serves, or on what it served before (a worker's
tasks come in xdist's order). Three rules keep it so:
- Each prompt is evaluated alone, from its first token, in the same chunks (`--n_batch`). A
  slot keeps the cells of the prompt it evaluated last, and a prompt that begins as that one did
  (a repair round's prompt is the last round's, its reply, and feedback) reuses only the whole
  chunks of the common prefix, counted from the first token: those cells are the ones a fresh
  evaluation computes, in the same batch shape, and the rest is evaluated in the chunks it would
  have had. (llama_cpp.server keeps a prefix to the token and evaluates the rest as a batch of
  its own, whose sums round otherwise: the same prompt sent twice in a row got another reply
  for 8 of 40 tasks.)
- Each slot has its own KV cells (`kv_unified` off), so attention never sees another sequence.
- Slots share a step only on one thread: on two threads the work is split by batch shape, and a
  sequence decoded beside another gave other tokens than alone for 5 of 6 prompts here; on one
  thread, 6 of 6 were the same. `serve.cpu_layout` gives an engine several slots only so.

An answer can be begun by the client and continued by the model (vLLM's request fields
`continue_final_message: true`, `add_generation_prompt: false`, which `--humanfix-prompt primed`
sends): the conversation before the final assistant message is laid out with the generation
prompt, and that message's content follows verbatim. Done here, with the GGUF's own template, the
client sends every engine the same request; and the content is never looked for again in the
rendered text, as transformers' `continue_final_message` looks for it, so a template that rewrites
an assistant turn (trims it, drops a thinking block) cannot move where the answer begins. For
templates whose assistant turn is the generation prompt followed by the content (ChatML: SmolLM2,
Qwen2.5) the two give the same text.

Greedy replies can be drafted (`--draft K`, `lookup.py`): up to K tokens guessed from where the
reply's last n-gram occurred earlier in the prompt or reply, checked in one decode of the slot
alone. The reply is still a function of its prompt, but llama.cpp's CPU matrix product sums a
batch of two or more tokens in another order (llamafile's sgemm) than one token, so it is not
always plain greedy's reply. It is off by default: on a CPU, drafts did not pay (measured in
`--draft`'s comment).

A chat request may offer `tools` (OpenAI's declarations): they are laid out by the GGUF's chat
template, which says how to call them (Qwen2.5's asks for Hermes `<tool_call>` blocks), and the
calls in the reply come back as OpenAI's `message.tool_calls` with `finish_reason: "tool_calls"`
(`toolcalls`; a malformed call stays in the reply's text). The conversation may hold the calls
(an assistant message's `tool_calls`, their arguments as OpenAI's JSON text, which the template
is given as the object they write, as vLLM gives it) and their results (`tool` messages). A
template without a place for tools is a 400 that says so.

Greedy (temperature 0) is the argmax. llama_cpp.server applied a repeat penalty of 1.1 to every
request that did not name one, which neither the transformers engines nor vLLM do.

    python -m pytest_humanfix.models.llamacpp_server --model FILE.gguf [--parallel N]
        [--n_threads T] [--n_ctx C] [--n_batch B] [--prefix_cache on|off] [--draft K]
        [--draft_ngram N] [--host H] [--port P] [--model_alias NAME] [--seed S]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .. import computed_by
from .lookup import NgramIndex
from .stopping import StopScanner, stop_point, valid_rule
from .toolcalls import parse_tool_calls

# A request field of ours, beside OpenAI's: the rule of `stopping` that ends a completion where
# it leaves the function, as BigCode's `check_fn` ends it ("indent" or "braces:N").
FUNCTION_END_FIELD = "humanfix_function_end"


class RequestError(Exception):
    """A request the engine cannot serve: answered 400 with this message."""


@dataclass
class Job:
    """One request, from its prompt's tokens to its reply."""

    prompt: list[int]
    max_tokens: int
    stop: list[str]
    temperature: float
    top_p: float
    seed: int
    special: bool = False  # special tokens rendered in the text (completions, as BigCode's)
    tokens: list[int] = field(default_factory=list)
    # Its stop words and where it leaves the function (a completion's `FUNCTION_END_FIELD`),
    # looked for as the reply grows; None when there are neither.
    scanner: StopScanner | None = None
    finish_reason: str = ""
    error: str = ""
    slot: int = -1
    sampler: Any = None
    cached: int = 0  # prompt tokens whose cells the slot held already
    lookup: NgramIndex | None = None  # where drafts come from; None: not drafted
    drafted: int = 0
    accepted: int = 0  # drafts the model's own argmax confirmed
    done: threading.Event = field(default_factory=threading.Event)


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
            raise SystemExit(f"llamacpp_server: cannot load the model {path!r}")
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
            raise SystemExit(f"llamacpp_server: cannot make a context of {context} tokens "
                             f"x {slots} slots for {path!r}")
        # Text in and out through llama-cpp-python's own tokenizer and chat template, so that a
        # prompt is tokenized as llama_cpp.server tokenized it.
        self.text = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
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

    # -- text ---------------------------------------------------------------------------------

    def chat_text(self, messages: list[dict[str, Any]], generation_prompt: bool = True,
                  continue_final: bool = False, tools: list[dict[str, Any]] | None = None
                  ) -> tuple[str, list[str], bool]:
        """The prompt's text through the chat template stored in the file, its stop strings,
        and whether the template wrote the special tokens itself. `continue_final` leaves the
        final (assistant) message open: the messages before it, the generation prompt, then
        its content as it is. `tools` are laid out where the template puts them."""
        from llama_cpp import llama_chat_format

        template = self.text.metadata.get("tokenizer.chat_template")
        if not template:
            raise RequestError("the model has no chat template: ask /v1/completions instead "
                               "(--humanfix-prompt completion)")
        if tools and "tools" not in template:
            raise RequestError("the model's chat template has no place for tools: send the "
                               "request without `tools` (--humanfix-agent repair)")
        messages = [with_call_objects(message) for message in messages]
        begun = ""
        if continue_final:
            *messages, final = messages
            begun = final["content"]
        eos, bos = self.text.token_eos(), self.text.token_bos()
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template, stop_token_ids=[eos],
            eos_token=self.text._model.token_get_text(eos) if eos != -1 else "",
            bos_token=self.text._model.token_get_text(bos) if bos != -1 else "",
            add_generation_prompt=generation_prompt or continue_final)
        try:
            # Plain dicts, which llama-cpp-python annotates as its TypedDicts.
            formatted = formatter(messages=messages, tools=tools)  # type: ignore[arg-type]
        except Exception as exc:  # the template's own error, in its own words
            raise RequestError(f"the chat template cannot lay out these messages: {exc}") from None
        stop = formatted.stop if isinstance(formatted.stop, list) else [formatted.stop or ""]
        return formatted.prompt + begun, [s for s in stop if s], formatted.added_special

    def chat_prompt(self, messages: list[dict[str, Any]], generation_prompt: bool = True,
                    continue_final: bool = False, tools: list[dict[str, Any]] | None = None
                    ) -> tuple[list[int], list[str]]:
        """The prompt's tokens and stop strings (`chat_text`)."""
        text, stop, added_special = self.chat_text(messages, generation_prompt, continue_final,
                                                   tools)
        return self.text.tokenize(text.encode(), add_bos=not added_special, special=True), stop

    def completion_prompt(self, prompt: str) -> list[int]:
        return self.text.tokenize(prompt.encode(), special=True)

    def detokenize(self, tokens: list[int], special: bool = False) -> str:
        return self.text.detokenize(tokens, special=special).decode("utf-8", errors="ignore")

    # -- jobs ---------------------------------------------------------------------------------

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
        text = self.detokenize(job.tokens, job.special)
        cut = stop_point(text, job.stop)
        return text if cut is None else text[:cut]


def new_job(model: BatchedModel, body: dict[str, Any], prompt: list[int], stop: list[str],
            default_seed: int, completion: bool = False) -> Job:
    if body.get("stream"):
        raise RequestError("streaming is not served: send the request without `stream`")
    if body.get("n", 1) != 1:
        raise RequestError("one choice per request: send the request with n=1")
    extra = body.get("stop") or []
    stop = [*stop, *([extra] if isinstance(extra, str) else extra)]
    room = model.context - len(prompt)
    if room < 1:
        raise RequestError(f"the prompt has {len(prompt)} tokens and a slot holds "
                           f"{model.context}: raise --n_ctx, or shorten the prompt")
    try:
        max_tokens = min(int(field_or(body, "max_tokens", room)), room)
        temperature = float(field_or(body, "temperature", 1.0))  # OpenAI's defaults
        top_p = float(field_or(body, "top_p", 1.0))
        seed = int(field_or(body, "seed", default_seed))
    except (TypeError, ValueError) as exc:
        raise RequestError(f"a sampling field is not a number: {exc}") from None
    if max_tokens < 1:
        raise RequestError("max_tokens must be at least 1")
    function_end = body.get(FUNCTION_END_FIELD)
    if function_end is not None and not (completion and isinstance(function_end, str)
                                         and valid_rule(function_end)):
        raise RequestError(f"`{FUNCTION_END_FIELD}` is \"indent\" or \"braces:N\", for "
                           f"/v1/completions only; got {function_end!r}")
    return Job(prompt, max_tokens, stop, temperature, top_p, seed, special=completion,
               scanner=StopScanner(stop, function_end) if stop or function_end else None)


def chat_layout(body: dict[str, Any]) -> dict[str, bool]:
    """`chat_prompt`'s arguments from vLLM's request fields, checked as vLLM checks them (but
    `continue_final_message` alone means no generation prompt, as it can mean nothing else)."""
    continue_final = body.get("continue_final_message", False)
    generation_prompt = body.get("add_generation_prompt", not continue_final)
    if not isinstance(continue_final, bool) or not isinstance(generation_prompt, bool):
        raise RequestError("`continue_final_message` and `add_generation_prompt` are true or false")
    if continue_final and generation_prompt:
        raise RequestError("`continue_final_message` continues the final message, and "
                           "`add_generation_prompt` begins a new one: they cannot both be true")
    messages = body.get("messages") or []
    final = messages[-1] if messages else None
    if continue_final and not (isinstance(final, dict) and final.get("role") == "assistant"
                               and isinstance(final.get("content"), str)):
        raise RequestError("`continue_final_message` continues a final assistant message with "
                           "text `content`; the messages end otherwise")
    return {"generation_prompt": generation_prompt, "continue_final": continue_final}


def with_call_objects(message: Any) -> Any:
    """An assistant message's tool calls with their arguments as the object they write, not
    OpenAI's JSON text: templates write them with `tojson` (vLLM converts them the same way)."""
    if not isinstance(message, dict) or not isinstance(message.get("tool_calls"), list):
        return message
    calls = []
    for call in message["tool_calls"]:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise RequestError("each of `tool_calls` is {\"type\": \"function\", "
                               "\"function\": {\"name\": ..., \"arguments\": ...}}")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise RequestError("a tool call's `arguments` is not JSON text") from None
        calls.append({**call, "function": {**function, "arguments": arguments}})
    return {**message, "content": message.get("content") or "", "tool_calls": calls}


def offered_tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The request's `tools`, checked; None when it offers none. Only `tool_choice` auto (the
    default with tools) is served: the model decides whether it calls one."""
    tools = body.get("tools")
    if tools is None or tools == []:
        return None
    if not isinstance(tools, list) or not all(
            isinstance(tool, dict) and tool.get("type") == "function"
            and isinstance(tool.get("function"), dict)
            and isinstance(tool["function"].get("name"), str) for tool in tools):
        raise RequestError("`tools` is a list of {\"type\": \"function\", \"function\": "
                           "{\"name\": ..., \"parameters\": ...}}")
    if body.get("tool_choice", "auto") != "auto":
        raise RequestError("only `tool_choice` auto is served: send it so, or without it")
    return tools


def field_or(body: dict[str, Any], name: str, default: float) -> Any:
    value = body.get(name)
    return default if value is None else value


def answer(job: Job, model: BatchedModel, kind: str, name: str,
           tools: bool = False) -> dict[str, Any]:
    """The OpenAI answer to a finished job; offered `tools`, a chat reply's calls are parsed
    out of its text."""
    text = model.reply_text(job)
    choice: dict[str, Any] = {"index": 0, "finish_reason": job.finish_reason, "logprobs": None}
    content, calls = parse_tool_calls(text) if tools else (text, [])
    if kind == "chat" and calls:
        choice["message"] = {"role": "assistant", "content": content or None,
                             "tool_calls": [call.to_message() for call in calls]}
        choice["finish_reason"] = "tool_calls"
    elif kind == "chat":
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    return {"id": f"{kind}-{uuid.uuid4().hex}", "created": int(time.time()), "model": name,
            "object": "chat.completion" if kind == "chat" else "text_completion",
            "choices": [choice],
            "usage": {"prompt_tokens": len(job.prompt), "completion_tokens": len(job.tokens),
                      "total_tokens": len(job.prompt) + len(job.tokens),
                      # OpenAI's name for the prompt tokens a cache held.
                      "prompt_tokens_details": {"cached_tokens": job.cached}}}


def handler_for(model: BatchedModel, name: str, seed: int,
                props: dict[str, Any] | None = None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                send_json(self, 200, {"object": "list", "data": [
                    {"id": name, "object": "model", "owned_by": "pytest-humanfix"}]})
            elif self.path.rstrip("/") == "/props":
                # llama-server's path for what it runs; clients read `computed_by`.
                send_json(self, 200, props or {})
            elif self.path == "/health":
                send_json(self, 200, {"status": "ok"})
            else:
                send_json(self, 404, error(f"no such path: {self.path}", "not_found"))

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") in ("/tokenize", "/v1/tokenize"):
                self.tokenize()
                return
            kind = {"/v1/chat/completions": "chat", "/chat/completions": "chat",
                    "/v1/completions": "completion", "/completions": "completion"}.get(self.path)
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if kind is None:
                    send_json(self, 404, error(f"no such path: {self.path}", "not_found"))
                    return
                if not isinstance(body, dict):
                    raise RequestError("the body must be a JSON object")
                tools = offered_tools(body) if kind == "chat" else None
                if kind == "chat":
                    prompt, stop = model.chat_prompt(body.get("messages") or [],
                                                     **chat_layout(body), tools=tools)
                else:
                    if not isinstance(body.get("prompt"), str):
                        raise RequestError("`prompt` must be one string")
                    prompt, stop = model.completion_prompt(body["prompt"]), []
                job = new_job(model, body, prompt, stop, seed, completion=kind == "completion")
                model.submit(job)
            except (RequestError, ValueError) as exc:
                send_json(self, 400, error(str(exc), "invalid_request_error"))
                return
            job.done.wait()
            if job.error:
                send_json(self, 500, error(job.error, "server_error"))
            else:
                send_json(self, 200, answer(job, model, kind, name, tools=tools is not None))

        def tokenize(self) -> None:
            """vLLM's /tokenize: the tokens a prompt (or a chat's messages) is sent as, so a
            client can fit its request into a budget of prompt and reply together."""
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if not isinstance(body, dict):
                    raise RequestError("the body must be a JSON object")
                if isinstance(body.get("prompt"), str):
                    tokens = model.completion_prompt(body["prompt"])
                elif isinstance(body.get("messages"), list):
                    tokens = model.chat_prompt(body["messages"], tools=offered_tools(body))[0]
                else:
                    raise RequestError("give `prompt` (one string) or `messages`")
            except (RequestError, ValueError) as exc:
                send_json(self, 400, error(str(exc), "invalid_request_error"))
                return
            send_json(self, 200, {"count": len(tokens), "max_model_len": model.context,
                                  "tokens": tokens})

    return Handler


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    """One JSON answer, its length given, so an HTTP/1.1 connection stays open for the next."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pytest_humanfix.models.llamacpp_server",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the .gguf file")
    parser.add_argument("--model_alias", help="the name clients ask for (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--n_threads", type=int, default=1)
    parser.add_argument("--n_threads_batch", type=int,
                        help="accepted for llama_cpp.server's sake; must equal --n_threads, "
                             "since one step may decode one token or several")
    parser.add_argument("--n_ctx", type=int, default=8192, help="tokens per slot")
    # 64: a repair round's prompt shares the last one's conversation, and only whole chunks of it
    # are reused; on qwen-coder (2 cores), chunks of 64 evaluated a prompt as fast as 512 and
    # gave the same replies, and reused 79% of the prompt tokens of 3-round runs against 47%.
    parser.add_argument("--n_batch", type=int, default=64,
                        help="prompt tokens per step: the chunks a prompt is evaluated in")
    parser.add_argument("--parallel", type=int, default=1, help="slots decoded together")
    parser.add_argument("--prefix_cache", choices=("on", "off"), default="on",
                        help="reuse the whole chunks of a prompt's prefix that a free slot "
                             "evaluated last (the reply is the same either way)")
    # Off: on qwen-coder on a CPU thread a decode of 4 tokens costs about 1.6 of 1 and of 9 about
    # 3.5 (benchmarks/engine/bench_batch_shape.py); with 8 drafts (30% accepted) replies came at
    # half the speed, 1 of 6 of them otherwise, and with 3 a run took 1.14x plain's wall, 7
    # replies of 16 otherwise.
    parser.add_argument("--draft", type=int, default=0,
                        help="tokens drafted per step from the prompt and reply (greedy "
                             "requests only; 0: none)")
    parser.add_argument("--draft_ngram", type=int, default=3,
                        help="the longest n-gram a draft is looked up by")
    parser.add_argument("--seed", type=int, default=0, help="for requests that name none")
    arguments = parser.parse_args(argv)
    if arguments.n_threads_batch not in (None, arguments.n_threads):
        parser.error("--n_threads_batch must equal --n_threads: a step's thread count would "
                     "otherwise depend on how many slots are busy, and so would its sums")
    if arguments.parallel > 1 and arguments.n_threads > 1:
        parser.error(f"--parallel {arguments.parallel} with --n_threads {arguments.n_threads}: "
                     "slots share a step only on one thread, where a reply does not depend on "
                     "the others in its batch; run one engine per core instead")
    return arguments


def main(argv: list[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    model = BatchedModel(arguments.model, arguments.n_ctx, arguments.n_threads,
                         arguments.parallel, arguments.n_batch,
                         prefix_cache=arguments.prefix_cache == "on", draft=arguments.draft,
                         draft_ngram=arguments.draft_ngram)
    threading.Thread(target=model.run, name="llama.cpp", daemon=True).start()
    props = {"system_info": model.lc.llama_print_system_info().decode(errors="replace"),
             "computed_by": computed_by.llamacpp(model.lc, arguments.n_threads,
                                                 model.description())}
    server = ThreadingHTTPServer((arguments.host, arguments.port),
                                 handler_for(model, arguments.model_alias or arguments.model,
                                             arguments.seed, props))
    server.daemon_threads = True
    print(f"llamacpp_server: {arguments.model} on http://{arguments.host}:{arguments.port}/v1, "
          f"{arguments.parallel} slot(s) of {arguments.n_ctx} tokens, {arguments.n_threads} "
          "thread(s)", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
