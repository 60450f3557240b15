"""The OpenAI-compatible backend: `openai:<model>` against vLLM, SGLang, llama.cpp, Ollama,
`transformers serve` or a hosted API.

Built on the `openai` client (the `openai` extra), imported only when this backend is used. Its
retry policy is the one we want and is already battle-tested: exponential backoff with jitter
(0.5 s doubling, capped at 8 s), honouring `Retry-After`, on 408/409/429/5xx, connection errors
and timeouts. Writing that again over httpx would be a second, less tested copy.

A primed answer (`--humanfix-prompt primed`) goes to `/v1/chat/completions` with the answer's start
as a final assistant message and vLLM's fields for continuing it, `continue_final_message: true`
and `add_generation_prompt: false` (our llama.cpp engine reads them too). OpenAI's API has no
such fields; a server that refuses them is an error that names `--humanfix-prompt chat`. A
server that ignores them answers anew after the start instead of continuing it, which nothing
in a reply can reliably tell apart: use primed with vLLM or our engine.

Stop strings: every reply is cut before its first stop string here too, whatever the server did,
so a server that ignores `stop` still gives the reply the harness asked for (its token count is
the server's, the tokens it did generate). Where the server is known to ignore `stop`
(`STOP_IGNORED_BY`), the reply is streamed instead, and the stream is closed at the first stop
(a stop string, or for a completion the function's end, `stopping.StopScanner` as our llama.cpp
engine applies it), so the server stops generating there and no token past it is paid for. A
server of unknown kind (`openai:` without --humanfix-serve) is not streamed: hosted APIs and
vLLM honour `stop`, and streaming every reply would cost each one its usage where a server
sends none in a stream.

The function-calling agent's requests carry OpenAI's `tools`, and the reply's `tool_calls` come
back as the generation's. vLLM serves them only when started with a tool parser (`--humanfix-serve`
starts it so); a server that refuses them is an error that names the fix.

Every failure here raises `ModelLoadError`: a server that cannot be reached, goes away mid-run or
answers with an error is a harness fault, an error outcome, never "unfixed".

A fleet: `--humanfix-base-url` may name several servers. They are spread per worker: worker gwN
starts at server N (mod their count) and goes round the others in order, so N workers over N
servers each keep one. (Least-loaded would need state shared between worker processes, and one
worker sends one request at a time anyway.) A server that does not answer the probe, or fails a
request after the client's retries (unreachable, timed out, a 5xx), is taken out of this worker's
rotation with its reason, which the records carry to the summary, and the request goes to the
next server. The last server left is never taken out: its failure is that task's harness error,
as with a single server, and the next task tries it again.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from .. import computed_by
from ..computed_by import UNKNOWN, ComputedBy
from ..dataset import Task
from ..languages import LANGUAGES
from ..settings import Settings
from .base import Generation, Message, ModelLoadError, sample_seed, settle_prompt
from .stopping import StopScanner, function_end_stops, stop_point
from .toolcalls import ToolCall

RETRIES = 3  # after the first try: about 3.5 s of backoff before a dead server is an error
PROBE_TIMEOUT = 10.0
PLACEHOLDER_KEY = "EMPTY"  # local servers (vLLM, transformers serve) accept any key
# VLLM_MAX_STOP_STRINGS for a vLLM server: more than our longest stop list (the completion
# prompt's function end has over 100 strings; vLLM's default is 4).
VLLM_STOP_STRINGS = "1024"
# vLLM's names (ChatCompletionRequest): the final message is left open for the model to continue.
CONTINUE_FIELDS = {"continue_final_message": True, "add_generation_prompt": False}
# `transformers serve --continuous-batching` maps `stop` to generate()'s stop_strings, but its
# batching manager is given only max_new_tokens and the end of sequence (cli/serving/utils.py,
# `add_request`, transformers 5.24): every reply ran to its token limit. Such a server's stream is
# closed at the stop; a closed stream cancels the request (`CBStreamer.cancel`).
STOP_IGNORED_BY = frozenset({"transformers"})


@dataclass(frozen=True)
class Refusal:
    """Advice added to a 4xx whose server message names one of `about` (case ignored): a
    refusal blames a field only when the server's words do."""

    about: tuple[str, ...]
    advice: str

    def explain(self, message: str) -> str:
        lowered = message.lower()
        return f"{message}; {self.advice}." if any(w in lowered for w in self.about) else message


TOOLS_REFUSED = Refusal(("tool",),
                        "the server may not serve tool calls (`tools` in a chat request), which "
                        "--humanfix-agent tools needs; start it with tool calling (vLLM: "
                        "--enable-auto-tool-choice --tool-call-parser hermes), or use "
                        "--humanfix-agent repair")
CONTINUE_REFUSED = Refusal(("continue_final_message", "add_generation_prompt"),
                           "the server may not continue a final assistant message (vLLM's "
                           "continue_final_message), which --humanfix-prompt primed needs; use "
                           "--humanfix-prompt chat")
# vLLM validates `stop` as a list of at most VLLM_MAX_STOP_STRINGS (default 4) items; 0.32 says
# "List should have at most 4 items after validation, not 8" at 'loc': 'body.stop'.
STOPS_REFUSED = Refusal(("body.stop", "'stop'"),
                        "a vLLM server takes at most VLLM_MAX_STOP_STRINGS stop strings (4 by "
                        "default) and our stop lists are longer: restart it with "
                        f"VLLM_MAX_STOP_STRINGS={VLLM_STOP_STRINGS} in its environment "
                        "(--humanfix-serve does so)")


class ServerFailed(Exception):
    """One server failed a request after its retries; the message says how."""


@dataclass
class Reply:
    """What one server answered, before the client's cut at the stop strings."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    tool_calls: list[ToolCall]


@dataclass
class Server:
    base_url: str
    client: Any  # openai.OpenAI
    out: str = ""  # why it was taken out of rotation; "" while in it


def _get_json(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError):
        return {}
    return answer if isinstance(answer, dict) else {}


def server_computed_by(base_url: str, engine: str) -> ComputedBy:
    """What a server says of what computes its replies: our llama.cpp engine says all of it at
    `/props`, llama.cpp's llama-server its build and the model's type there, vLLM its version at
    `/version`; any other server nothing, and it is recorded as unknown."""
    root = base_url.removesuffix("/v1")
    props = _get_json(root + "/props")
    described = props.get("computed_by")
    if isinstance(described, dict):
        return cast(ComputedBy, described)  # our engine's own, as JSON
    if "build_info" in props:  # its /props names its build and the model's type, no kernels
        return {"engine": "llama-server", "version": str(props["build_info"]),
                "kernels": UNKNOWN, "device": UNKNOWN,
                "dtype": str(props.get("model_ftype", UNKNOWN))}
    version = _get_json(root + "/version").get("version")
    if isinstance(version, str):
        return {"engine": engine, "version": version, "device": UNKNOWN}
    return computed_by.unknown(engine, f"the server at {base_url} says nothing of what it runs")


def worker_index(worker: str) -> int:
    """gw3: 3; the controller or a process outside xdist: 0."""
    number = worker.removeprefix("gw")
    return int(number) if number.isdigit() else 0


class OpenAIModel:
    def __init__(self, spec: str, model_name: str, settings: Settings) -> None:
        try:
            import openai
        except ImportError:
            raise ModelLoadError(
                f"{spec} needs the openai package: pip install 'pytest-humanfix[openai]'") from None
        self.spec = spec
        self.model_name = model_name
        self.settings = settings
        # Chat through /v1/chat/completions unless asked for a completion (/v1/completions).
        self.prompt = settle_prompt(settings.prompt, has_chat_template=True)
        self.engine = settings.engine if settings.engine != "auto" else "openai"
        self._openai = openai
        self._replies: dict[str, int] = {}  # sampled replies asked for, per task
        self._tokenizer: Any = None  # the served model's, for a stream closed at its stop
        urls = [url.rstrip("/") for url in settings.base_urls]
        start = worker_index(os.environ.get("PYTEST_XDIST_WORKER", "")) % len(urls)
        key = os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY
        self.servers = [Server(url, openai.OpenAI(base_url=url, api_key=key,
                                                  timeout=settings.request_timeout,
                                                  max_retries=RETRIES))
                        for url in urls[start:] + urls[:start]]
        for server in self.servers:
            self._probe(server)
        if not self.in_rotation():
            raise ModelLoadError("; ".join(server.out for server in self.servers))
        self.computed_by = server_computed_by(self.in_rotation()[0].base_url, self.engine)

    def in_rotation(self) -> list[Server]:
        return [server for server in self.servers if not server.out]

    @property
    def servers_out(self) -> list[dict[str, str]]:
        """The servers this worker took out of rotation, and why."""
        return [{"base_url": s.base_url, "reason": s.out} for s in self.servers if s.out]

    def _probe(self, server: Server) -> None:
        """Fail at load, once, when nobody answers at a base URL: the server is out of
        rotation, and with none left the runner errors every task at once instead of each one
        waiting through its retries."""
        probe = server.client.with_options(
            timeout=min(PROBE_TIMEOUT, self.settings.request_timeout), max_retries=0)
        for attempt in range(RETRIES + 1):
            try:
                probe.models.list()
                return
            except self._openai.APIConnectionError as exc:
                error: Exception = exc
                if attempt < RETRIES:
                    time.sleep(0.5 * 2 ** attempt)
            except (self._openai.AuthenticationError, self._openai.PermissionDeniedError) as exc:
                raise ModelLoadError(
                    f"the server at {server.base_url} refused the key ({exc.status_code}): set "
                    "OPENAI_API_KEY to a key it accepts.") from None
            except self._openai.APIStatusError:
                return  # it answered: not every server implements /models
        server.out = self._unreachable(server.base_url, error)

    @staticmethod
    def _unreachable(base_url: str, exc: Exception) -> str:
        return (f"cannot reach the OpenAI-compatible server at {base_url} "
                f"({type(exc).__name__}: {exc}). Start it, or point --humanfix-base-url at it.")

    def request(self, messages: list[Message], task: Task, temperature: float | None = None,
                tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        offered = {"tools": tools} if tools else {}
        return {"model": self.model_name, "messages": messages, **offered,
                **self._decoding(task, temperature)}

    def _decoding(self, task: Task, temperature: float | None) -> dict[str, Any]:
        """A greedy request carries the run's seed, as it always has; a sampled one a seed of
        its own per task and reply, so that two samples of a task, or a reply asked for again
        hotter, are not one draw repeated, and a rerun draws them again."""
        temperature = self.settings.temperature if temperature is None else temperature
        seed = self.settings.seed
        if temperature > 0:
            seed = sample_seed(seed, task.task_id, self._replies.get(task.task_id, 0))
            self._replies[task.task_id] = self._replies.get(task.task_id, 0) + 1
        return {"temperature": temperature, "max_tokens": self.settings.max_new_tokens,
                "seed": seed}

    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[dict[str, Any]] | None = None,
                 stop: list[str] | None = None) -> Generation:
        return self._ask(lambda client: client.chat.completions.create,
                         {**self.request(messages, task, temperature, tools),
                          **({"stop": stop} if stop else {})},
                         refused=(TOOLS_REFUSED,) if tools else (), stop=stop or [])

    def complete(self, prompt: str, stop: list[str], task: Task,
                 temperature: float | None = None) -> Generation:
        return self._ask(lambda client: client.completions.create,
                         {"model": self.model_name, "prompt": prompt, "stop": stop,
                          **self._decoding(task, temperature),
                          **self.completion_stopping(stop, task)},
                         stop=stop, function_end=LANGUAGES[task.language].function_end)

    def completion_stopping(self, stop: list[str], task: Task) -> dict[str, Any]:
        """What makes an engine we know end a completion where BigCode's `check_fn` does, on
        text with special tokens kept: our llama.cpp engine applies the rule itself; vLLM gets
        it as stop strings where strings can say it (Python); transformers serve's stream is
        closed there (`STOP_IGNORED_BY`). Any other server is sent the stop words alone, and
        the reply is cut after it, as the graded code always is."""
        if self.engine not in ("llamacpp", "vllm"):
            return {}
        rule = LANGUAGES[task.language].function_end
        if self.engine == "llamacpp":
            return {"extra_body": {"humanfix_function_end": rule}}
        return {"stop": [*stop, *function_end_stops(rule)],
                "extra_body": {"skip_special_tokens": False}}

    def continue_answer(self, messages: list[Message], start: str, stop: list[str],
                        task: Task, temperature: float | None = None) -> Generation:
        request = self.request([*messages, {"role": "assistant", "content": start}], task,
                               temperature)
        return self._ask(lambda client: client.chat.completions.create,
                         {**request, "stop": stop, "extra_body": CONTINUE_FIELDS},
                         refused=(CONTINUE_REFUSED,), stop=stop)

    def _ask(self, create: Callable[[Any], Callable[..., Any]], request: dict[str, Any],
             refused: tuple[Refusal, ...] = (), stop: Sequence[str] = (),
             function_end: str | None = None
             ) -> Generation:
        """Asks the servers in rotation in turn until one answers; each that fails is taken
        out, except the last one left, whose failure is the error. `refused` explains a request
        the server refuses (a 4xx) when its message is about them; so does STOPS_REFUSED. The
        reply ends before its first stop word; a server that ignores `stop` is streamed and
        closed at the stop, or at `function_end` (a completion's rule,
        `stopping.function_end`)."""
        started = time.monotonic()
        if self.settings.max_length is not None:
            fitted = self._fit_length(self.in_rotation()[0], request)
            if isinstance(fitted, Generation):
                return fitted
            request = fitted
        # A tool call streams as fragments of JSON, which no stop string ends.
        streamed = self.engine in STOP_IGNORED_BY and bool(stop or function_end) \
            and "tools" not in request
        while True:
            server, *others = self.in_rotation()
            try:
                reply = self._stream_one(server, create, request, refused,
                                         StopScanner(stop, function_end)) \
                    if streamed else self._reply_one(server, create, request, refused)
                break
            except ServerFailed as exc:
                if not others:
                    raise ModelLoadError(str(exc)) from None
                server.out = str(exc)
        # The function's end keeps its line, for the graded code to cut as BigCode's
        # remove_last_block does (as our llama.cpp engine and in-process transformers keep it).
        cut = stop_point(reply.text, stop)
        return Generation(
            text=reply.text if cut is None else reply.text[:cut], tool_calls=reply.tool_calls,
            prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
            seconds=time.monotonic() - started,
            # Servers also say "content_filter" or "tool_calls"; neither ran out of tokens.
            finish_reason="length" if reply.finish_reason == "length" and cut is None
            else "stop",
            engine=self.engine, server=server.base_url)

    def _reply_one(self, server: Server, create: Callable[[Any], Callable[..., Any]],
                   request: dict[str, Any], refused: tuple[Refusal, ...]) -> Reply:
        response = self._ask_one(server, create, request, refused)
        if not response.choices:
            raise ModelLoadError(f"the server at {server.base_url} returned no choices")
        choice = response.choices[0]
        usage = response.usage
        message = getattr(choice, "message", None)
        return Reply(
            text=(message.content if message is not None else choice.text) or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason,
            tool_calls=[ToolCall(call.id, call.function.name, call.function.arguments or "{}")
                        for call in (getattr(message, "tool_calls", None) or [])])

    def _stream_one(self, server: Server, create: Callable[[Any], Callable[..., Any]],
                    request: dict[str, Any], refused: tuple[Refusal, ...],
                    scanner: StopScanner) -> Reply:
        """One server's reply, streamed and closed once `scanner` sees the stop. The tokens
        are the server's usage when the stream ran to its end. Closed early, the server sends
        none, and the served model's tokenizer counts the prompt and the text streamed, up to
        the piece that completed the stop. Counting pieces instead fell short: transformers
        serve sends a chunk only for a token that adds text it can render, 117 chunks for a
        reply of 141 tokens (llama.cpp's count of the identical reply), where the tokenizer
        counted 140. Tokens the server generated past the stop before it saw the stream close
        are not counted."""
        import httpx

        deadline = time.monotonic() + self.settings.request_timeout
        stream = self._ask_one(server, create, {**request, "stream": True,
                                                "stream_options": {"include_usage": True}},
                               refused)
        pieces: list[str] = []
        usage = finish_reason = None
        stopped = timed_out = False
        try:
            with stream:  # leaving it closes the connection, which cancels the request
                for chunk in stream:
                    usage = chunk.usage or usage
                    if not chunk.choices:
                        continue
                    choice = chunk.choices[0]
                    finish_reason = choice.finish_reason or finish_reason
                    delta = getattr(choice, "delta", None)
                    piece = delta.content if delta is not None else choice.text
                    if piece:
                        pieces.append(piece)
                        stopped = scanner.feed(piece.encode())
                    timed_out = time.monotonic() > deadline
                    if stopped or timed_out:
                        break
        except httpx.TimeoutException:
            timed_out = True
        except (httpx.HTTPError, self._openai.APIError) as exc:
            raise ServerFailed(self._broke_off(server, f"{type(exc).__name__}: {exc}")) from None
        if timed_out and not stopped:
            raise ServerFailed(self._too_slow(server, tries=1))
        if not stopped and finish_reason is None:
            raise ServerFailed(self._broke_off(server, "it ended without a finish reason"))
        text = "".join(pieces)
        if stopped or usage is None:
            # A piece is at least one token, and the text's tokens are those the server
            # generated but where the model wrote a text otherwise than its tokenizer would.
            generated = max(len(pieces), len(self.served_tokenizer()(
                text, add_special_tokens=False)["input_ids"]))
            return Reply(text, self.served_prompt_tokens(request), generated,
                         "stop" if stopped else finish_reason, [])
        return Reply(text, usage.prompt_tokens, usage.completion_tokens, finish_reason, [])

    def served_prompt_tokens(self, request: dict[str, Any]) -> int:
        """The prompt's tokens as transformers serve counts them (`ChatCompletionHandler`,
        `CompletionHandler`): that server has no /tokenize, and it names its usage only at the
        end of a stream."""
        tokenizer = self.served_tokenizer()
        if "prompt" in request:
            return len(tokenizer(request["prompt"])["input_ids"])
        return len(tokenizer.apply_chat_template(
            request["messages"], tools=request.get("tools"), add_generation_prompt=True,
            tokenize=True, return_dict=True)["input_ids"])

    def served_tokenizer(self) -> Any:
        """The served model's tokenizer, loaded once."""
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.model_name)
            except (OSError, ValueError) as exc:
                raise ModelLoadError(
                    f"a reply of transformers serve cut at its stop carries no usage, and its "
                    f"tokens are counted with the served model's tokenizer, which cannot be "
                    f"loaded from {self.model_name!r} ({type(exc).__name__}: {exc}); let "
                    "--humanfix-serve start the engine, or name the model as it was served."
                ) from None
        return self._tokenizer

    def _fit_length(self, server: Server, request: dict[str, Any]
                    ) -> dict[str, Any] | Generation:
        """The request with the room --humanfix-max-length leaves after its prompt, counted by
        the server; with no room, the empty reply BigCode's left truncation leaves (see
        `hf.TransformersModel.room`), and nothing is asked."""
        count = self.prompt_tokens(server, request)
        room = (self.settings.max_length or 0) - count
        if room < 1:
            return Generation(text="", prompt_tokens=count, finish_reason="length",
                              engine=self.engine, server=server.base_url)
        return {**request, "max_tokens": room}

    def prompt_tokens(self, server: Server, request: dict[str, Any]) -> int:
        """The prompt's tokens as the server counts them, from vLLM's POST /tokenize (which
        our llama.cpp engine serves too), beside the server's /v1."""
        body: dict[str, Any] = {"model": request["model"]}
        if "prompt" in request:
            body["prompt"] = request["prompt"]
        else:
            body.update(messages=request["messages"], add_generation_prompt=True)
            if "tools" in request:  # they are laid out in the prompt too
                body["tools"] = request["tools"]
        root = server.base_url.removesuffix("/v1")
        headers = {"Content-Type": "application/json",
                   "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY') or PLACEHOLDER_KEY}"}
        asked = urllib.request.Request(root + "/tokenize", json.dumps(body).encode(), headers)
        try:
            with urllib.request.urlopen(asked, timeout=self.settings.request_timeout) as answer:
                counted = json.load(answer)
        except (OSError, ValueError) as exc:  # HTTPError and URLError are OSErrors
            count, why = None, f"{type(exc).__name__}: {exc}"
        else:
            count = counted.get("count") if isinstance(counted, dict) else None
            why = "the answer had no count"
        if not isinstance(count, int):
            raise ModelLoadError(
                f"--humanfix-max-length counts each prompt's tokens, and the server at "
                f"{server.base_url} did not count them (POST {root}/tokenize: {why}). vLLM and "
                "the llama.cpp engine of --humanfix-serve answer it; for another server, give "
                "--humanfix-max-new-tokens instead.")
        return count

    def _too_slow(self, server: Server, tries: int = RETRIES + 1) -> str:
        return (f"the server at {server.base_url} did not answer within "
                f"{self.settings.request_timeout:g} s ({tries} {'try' if tries == 1 else 'tries'});"
                " raise --humanfix-request-timeout if it is just slow.")

    @staticmethod
    def _broke_off(server: Server, why: str) -> str:
        return f"the server at {server.base_url} broke off a streamed reply ({why})"

    def _ask_one(self, server: Server, create: Callable[[Any], Callable[..., Any]],
                 request: dict[str, Any], refused: tuple[Refusal, ...] = ()) -> Any:
        """One server's response (the client retries); ServerFailed when the server is at
        fault, ModelLoadError when the request is (a 4xx fails on every server alike)."""
        try:
            return create(server.client)(**request)
        except self._openai.APITimeoutError:
            raise ServerFailed(self._too_slow(server)) from None
        except self._openai.APIConnectionError as exc:
            raise ServerFailed(self._unreachable(server.base_url, exc)) from None
        except self._openai.APIStatusError as exc:
            message = (f"the server at {server.base_url} answered {exc.status_code} for model "
                       f"{self.model_name!r}: {exc.message}")
            if exc.status_code >= 500:
                raise ServerFailed(message) from None
            for refusal in (*refused, STOPS_REFUSED):
                message = refusal.explain(message)
            raise ModelLoadError(message) from None
