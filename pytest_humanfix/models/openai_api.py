"""The OpenAI-compatible backend: `openai:<model>` against vLLM, SGLang, llama.cpp, Ollama,
`transformers serve` or a hosted API, on the `openai` client (its retries, imported only when
this backend is used). It asks a fleet of servers in rotation, continues a primed answer with
vLLM's fields, offers tools, and ends every reply at its stop, streaming it from a server known
to ignore `stop`. Every failure raises `ModelLoadError`: a harness fault, never "unfixed".
See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ..dataset import Task
from ..languages import LANGUAGES
from .base import Generation, Message, ModelLoadError, ReplySeeds, settle_prompt
from .generation import GenerationConfig
from .openai_refusals import (
    CONTINUE_REFUSED,
    STOPS_REFUSED,
    TOOLS_REFUSED,
    Refusal,
    fitted_stops,
    stop_limit,
)
from .openai_servers import (
    PROBE_TIMEOUT,
    Request,
    api_key,
    counted_prompt_tokens,
    server_computed_by,
    worker_index,
)
from .stopping import StopScanner, function_end_stops, stop_point
from .toolcalls import Tool, ToolCall

RETRIES = 3  # after the first try: about 3.5 s of backoff before a dead server is an error
# vLLM's names (ChatCompletionRequest): the final message is left open for the model to continue.
CONTINUE_FIELDS = {"continue_final_message": True, "add_generation_prompt": False}
# `transformers serve --continuous-batching` maps `stop` to generate()'s stop_strings, but its
# batching manager is given only max_new_tokens and the end of sequence (cli/serving/utils.py,
# `add_request`, transformers 5.24): every reply ran to its token limit. Such a server's stream is
# closed at the stop; a closed stream cancels the request (`CBStreamer.cancel`).
STOP_IGNORED_BY = frozenset({"transformers"})
# Asked too of a server sent fewer stop strings than a request has (vLLM's names; others ignore
# them): the stop string kept in the text, so that vLLM holds no text back in case it begins one
# (its stop buffer) and the stream shows each stop with the token that completes it; and the
# tokens so far on every chunk, which count a reply closed at its stop.
LIMITED_FIELDS = {"include_stop_str_in_output": True}
LIMITED_STREAM = {"include_usage": True, "continuous_usage_stats": True}


class Decoding(TypedDict):
    """How a request is decoded: OpenAI's sampling fields."""

    temperature: float
    max_tokens: int
    seed: int


class ServerFailed(Exception):
    """One server failed a request after its retries; the message says how."""


class StopsLimited(Exception):
    """A server refused a request's stop strings, naming the most it takes (`limit`)."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


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
    stop_limit: int | None = None  # the most stop strings it takes, once it refused more


class OpenAIModel:
    def __init__(self, spec: str, model_name: str, config: GenerationConfig) -> None:
        try:
            import openai
        except ImportError:
            raise ModelLoadError(
                f"{spec} needs the openai package: pip install 'pytest-humanfix[openai]'") from None
        self.spec = spec
        self.model_name = model_name
        self.config = config
        # Chat through /v1/chat/completions unless asked for a completion (/v1/completions).
        self.prompt = settle_prompt(config.prompt, has_chat_template=True)
        self.engine = config.engine if config.engine != "auto" else "openai"
        self._openai = openai
        self.seeds = ReplySeeds(config.seed)
        self._tokenizer: Any = None  # the served model's, for a stream closed at its stop
        urls = [url.rstrip("/") for url in config.base_urls]
        start = worker_index(os.environ.get("PYTEST_XDIST_WORKER", "")) % len(urls)
        key = api_key()
        self.servers = [Server(url, openai.OpenAI(base_url=url, api_key=key,
                                                  timeout=config.request_timeout,
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

    @property
    def server_limits(self) -> list[str]:
        """A line for each server that refused this worker's stop lists, naming its limit."""
        return [f"the server at {s.base_url} takes at most {s.stop_limit} stop strings: it is "
                f"sent {s.stop_limit} of a longer list, and the client cuts each reply at the "
                "first of them all while streaming, where it would have stopped"
                for s in self.servers if s.stop_limit is not None]

    def _probe(self, server: Server) -> None:
        """Fail at load, once, when nobody answers at a base URL: the server is out of
        rotation, and with none left the runner errors every task at once instead of each one
        waiting through its retries."""
        probe = server.client.with_options(
            timeout=min(PROBE_TIMEOUT, self.config.request_timeout), max_retries=0)
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
                tools: list[Tool] | None = None) -> Request:
        offered = {"tools": tools} if tools else {}
        return {"model": self.model_name, "messages": messages, **offered,
                **self._decoding(task, temperature)}

    def _decoding(self, task: Task, temperature: float | None) -> Decoding:
        """The request's temperature and its seed (`ReplySeeds`: two samples of a task, or a
        reply asked for again hotter, are not one draw repeated, and a rerun draws them again)."""
        temperature = self.config.temperature if temperature is None else temperature
        return Decoding(temperature=temperature, max_tokens=self.config.max_new_tokens,
                        seed=self.seeds.next(task, temperature))

    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[Tool] | None = None,
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

    def completion_stopping(self, stop: list[str], task: Task) -> Request:
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

    def _ask(self, create: Callable[[Any], Callable[..., Any]], request: Request,
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
        if self.config.max_length is not None:
            fitted = self._fit_length(self.in_rotation()[0], request)
            if isinstance(fitted, Generation):
                return fitted
            request = fitted
        while True:
            server, *others = self.in_rotation()
            sent, scanner = self._as_taken(server, request, stop, function_end)
            try:
                reply = self._stream_one(server, create, sent, refused, scanner) \
                    if scanner else self._reply_one(server, create, sent, refused)
                break
            except StopsLimited as limited:
                server.stop_limit = limited.limit  # and asked again, within it
            except ServerFailed as exc:
                if not others:
                    raise ModelLoadError(str(exc)) from None
                server.out = str(exc)
        # Every stop string asked for, the server's or the client's to apply; the function's end
        # keeps its line, for the graded code to cut as BigCode's remove_last_block does (as our
        # llama.cpp engine and in-process transformers keep it).
        cut = stop_point(reply.text, request.get("stop") or ())
        return Generation(
            text=reply.text if cut is None else reply.text[:cut], tool_calls=reply.tool_calls,
            prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
            seconds=time.monotonic() - started,
            # Servers also say "content_filter" or "tool_calls"; neither ran out of tokens.
            finish_reason="length" if reply.finish_reason == "length" and cut is None
            else "stop",
            engine=self.engine, server=server.base_url)

    def _as_taken(self, server: Server, request: Request, stop: Sequence[str],
                  function_end: str | None) -> tuple[Request, StopScanner | None]:
        """The request as `server` takes it, and the scanner that closes its stream at the stop
        (None: not streamed). A server known to ignore `stop` is streamed and closed at a stop
        word or the function's end. A server that takes fewer stop strings than the request
        has gets as many (`fitted_stops`), and its stream is closed at the first of them all,
        where it would have stopped had it taken them: the same reply, and its tokens. A tool
        call streams as fragments of JSON, which no stop string ends: never streamed."""
        every = list(request.get("stop") or ())
        tools = "tools" in request
        if self.engine in STOP_IGNORED_BY and (stop or function_end) and not tools:
            return request, StopScanner(stop, function_end)
        if server.stop_limit is None or len(every) <= server.stop_limit:
            return request, None
        fitted = {**request, "stop": fitted_stops(every, server.stop_limit)}
        if tools:
            return fitted, None
        return ({**fitted, "extra_body": {**request.get("extra_body", {}), **LIMITED_FIELDS},
                 "stream_options": LIMITED_STREAM}, StopScanner(every))

    def _reply_one(self, server: Server, create: Callable[[Any], Callable[..., Any]],
                   request: Request, refused: tuple[Refusal, ...]) -> Reply:
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
                    request: Request, refused: tuple[Refusal, ...],
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

        deadline = time.monotonic() + self.config.request_timeout
        stream = self._ask_one(server, create, {"stream_options": {"include_usage": True},
                                                **request, "stream": True}, refused)
        counted = bool(request.get("stream_options", {}).get("continuous_usage_stats"))
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
                        # A lone surrogate (an escape a server may send) passes, to be
                        # stored escaped (jsonl.storable_text).
                        stopped = scanner.feed(piece.encode("utf-8", "surrogatepass"))
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
        if stopped and counted and usage is not None:  # the tokens up to the stop's chunk
            return Reply(text, usage.prompt_tokens, usage.completion_tokens, "stop", [])
        if stopped or usage is None:
            # A piece is at least one token, and the text's tokens are those the server
            # generated but where the model wrote a text otherwise than its tokenizer would.
            generated = max(len(pieces), len(self.served_tokenizer()(
                text, add_special_tokens=False)["input_ids"]))
            return Reply(text, self.served_prompt_tokens(request), generated,
                         "stop" if stopped else finish_reason, [])
        return Reply(text, usage.prompt_tokens, usage.completion_tokens, finish_reason, [])

    def served_prompt_tokens(self, request: Request) -> int:
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

    def _fit_length(self, server: Server, request: Request
                    ) -> Request | Generation:
        """The request with the room --humanfix-max-length leaves after its prompt, counted by
        the server; with no room, the empty reply BigCode's left truncation leaves (see
        `hf.TransformersModel.room`), and nothing is asked."""
        count = self.prompt_tokens(server, request)
        room = (self.config.max_length or 0) - count
        if room < 1:
            return Generation(text="", prompt_tokens=count, finish_reason="length",
                              engine=self.engine, server=server.base_url)
        return {**request, "max_tokens": room}

    def prompt_tokens(self, server: Server, request: Request) -> int:
        """The prompt's tokens as the server counts them (`counted_prompt_tokens`)."""
        return counted_prompt_tokens(server.base_url, request, self.config.request_timeout)

    def _too_slow(self, server: Server, tries: int = RETRIES + 1) -> str:
        return (f"the server at {server.base_url} did not answer within "
                f"{self.config.request_timeout:g} s ({tries} {'try' if tries == 1 else 'tries'});"
                " raise --humanfix-request-timeout if it is just slow.")

    @staticmethod
    def _broke_off(server: Server, why: str) -> str:
        return f"the server at {server.base_url} broke off a streamed reply ({why})"

    def _ask_one(self, server: Server, create: Callable[[Any], Callable[..., Any]],
                 request: Request, refused: tuple[Refusal, ...] = ()) -> Any:
        """One server's response (the client retries); ServerFailed when the server is at
        fault, ModelLoadError when the request is (a 4xx fails on every server alike)."""
        try:
            return create(server.client)(**request)
        except UnicodeDecodeError as exc:  # JSON is UTF-8: this answer was not
            raise ModelLoadError(
                f"the server at {server.base_url} answered with bytes that are not UTF-8 "
                f"({exc.reason}, {exc.object[exc.start:exc.end]!r} at byte {exc.start}); "
                "the reply cannot be read. Fix the server's encoding (a model's text reaches "
                "a client as UTF-8, invalid bytes replaced)") from None
        except self._openai.APITimeoutError:
            raise ServerFailed(self._too_slow(server)) from None
        except self._openai.APIConnectionError as exc:
            raise ServerFailed(self._unreachable(server.base_url, exc)) from None
        except self._openai.APIStatusError as exc:
            message = (f"the server at {server.base_url} answered {exc.status_code} for model "
                       f"{self.model_name!r}: {exc.message}")
            if exc.status_code >= 500:
                raise ServerFailed(message) from None
            limit = stop_limit(exc.message, len(request.get("stop") or ()))
            if limit is not None:
                raise StopsLimited(limit) from None
            for refusal in (*refused, STOPS_REFUSED):
                message = refusal.explain(message)
            raise ModelLoadError(message) from None
