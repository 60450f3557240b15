"""A scripted OpenAI-compatible server on loopback, for faults a real server will not stage on cue.

`POST /v1/chat/completions` and `POST /v1/completions` answer, in order, the statuses of `script`
(an int is that error status, a (status, message) pair that status with that error message, "ok"
a completion, a float a delay of that many seconds before the completion), then completions:
`reply` (a chat message, or the text a completion continues with) ending for `finish_reason`.
`keys` scripts statuses per API key the same way, before `script`: `{"key1": [401]}` answers a
request made with key1 401 once. `raw` maps a text to the bytes sent in its place wherever an
answer holds it (its JSON as written), as a server that sends invalid UTF-8 does: `{"@": b"\\xff"}`
sends a reply holding "@" with the byte 0xff there. `die_after=N` closes the server after its N-th completion: later
connections are refused, as when a server process goes away.
It closes itself after `lifetime` seconds in any case, so a broken test cannot leave it running.

A request with `"stream": true` is answered as transformers serve streams: a chunk per piece of
`pieces` (a token each; default the whole reply in one), `piece_delay` seconds apart (a None
piece: the server breaks off there), then a chunk with `finish_reason` and, unless
`stream_usage` is false, the usage. `sent` holds, per stream, the pieces written before it ended
or the client closed it (`disconnected` counts those closed early): a write after the client's
close fails within a piece or two.

`vllm=True` answers as vLLM does: the reply is `pieces` (a token each) ended at the piece that
completes a stop string of the request, the stop dropped unless `include_stop_str_in_output`, a
streamed chunk carries the usage so far under `continuous_usage_stats`; `max_stops=N` refuses a
request with more than N stop strings as vLLM 0.32 under VLLM_MAX_STOP_STRINGS=N does.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_humanfix.models.engines.llamacpp.server import send_json

REPLY = "```python\ndef f():\n    return 1\n```"


def too_many_stops(limit: int, sent: int) -> str:
    """vLLM 0.32's message for a stop list over VLLM_MAX_STOP_STRINGS, as its 400 says it."""
    return ("2 validation errors:\n  {'type': 'string_type', 'loc': 'body.stop', "
            f"'msg': 'Input should be a valid string', 'input': '<list of {sent} items>'}}\n"
            "  {'type': 'too_long', 'loc': 'body.stop', 'msg': 'List should have at "
            f"most {limit} items after validation, not {sent}', 'input': '<list of {sent} "
            f"items>', 'ctx': {{'field_type': 'List', 'max_length': {limit}, "
            f"'actual_length': {sent}}}}}")


def vllm_stopped(pieces: list[str], request: dict) -> tuple[list[str], str | None]:
    """The pieces vLLM sends for `request`, a token each: up to the one that completes a stop
    string (checked per token, in the request's order), the text cut before the stop (or after
    it, under include_stop_str_in_output); and the finish reason, None while no stop fired."""
    stops = request.get("stop") or []
    reach = max(map(len, stops), default=1)
    text = ""
    for count, piece in enumerate(pieces, 1):
        start = max(len(text) - reach + 1, 0)
        text += piece
        for stop in stops:
            at = text.find(stop, start)
            if at != -1:
                end = at + len(stop) if request.get("include_stop_str_in_output") else at
                kept, done = [], 0
                for sent in pieces[:count]:
                    kept.append(sent[:max(end - done, 0)])
                    done += len(sent)
                return kept, "stop"
    return pieces, None


class StubServer:
    def __init__(self, script: list[Any] = (), die_after: int | None = None,
                 lifetime: float = 120.0, reply: str = REPLY,
                 finish_reason: str = "stop", keys: dict[str, list[Any]] | None = None,
                 pieces: list[str | None] | None = None, piece_delay: float = 0.01,
                 stream_usage: bool = True, vllm: bool = False,
                 max_stops: int | None = None, raw: dict[str, bytes] | None = None) -> None:
        self.script = list(script)
        self.keys = {key: list(steps) for key, steps in (keys or {}).items()}
        self.reply = reply
        self.finish_reason = finish_reason
        self.die_after = die_after
        self.requests: list[tuple[str, str, dict]] = []
        self.auth: list[str | None] = []
        self.completions = 0
        self.pieces: list[str | None] = [reply] if pieces is None else pieces
        self.piece_delay = piece_delay
        self.stream_usage = stream_usage
        self.vllm = vllm
        self.max_stops = max_stops
        self.raw = raw or {}
        self.sent: list[int] = []
        self.disconnected = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stub.requests.append(("GET", self.path, {}))
                self._send(200, {"object": "list", "data": []})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub._lock:
                    stub.requests.append(("POST", self.path, body))
                    auth = self.headers.get("Authorization")
                    stub.auth.append(auth)
                    own = stub.keys.get((auth or "").removeprefix("Bearer "))
                    step = own.pop(0) if own else stub.script.pop(0) if stub.script else "ok"
                stops = len(body.get("stop") or [])
                if stub.max_stops is not None and stops > stub.max_stops:
                    step = (400, too_many_stops(stub.max_stops, stops))
                if isinstance(step, tuple):  # (status, the server's error message)
                    self._send(step[0], {"error": {"message": step[1]}})
                    return
                if isinstance(step, int):
                    self._send(step, {"error": {"message": f"scripted {step}"}})
                    return
                if isinstance(step, float):
                    time.sleep(step)
                if body.get("stream"):
                    self._stream(body)
                else:
                    self._send(200, stub.answer(self.path, body))
                with stub._lock:
                    stub.completions += 1
                    dying = stub.die_after is not None and stub.completions >= stub.die_after
                if dying:
                    threading.Thread(target=stub.close).start()

            def _send(self, status: int, payload: dict) -> None:
                if not stub.raw:
                    send_json(self, status, payload)
                    return
                data = stub.as_sent(payload)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chat = self.path.endswith("/chat/completions")
                pieces, stopped = stub.answered_pieces(body)
                counted = (body.get("stream_options") or {}).get("continuous_usage_stats")
                sent = 0
                try:
                    if chat:
                        self._event(stub.chunk(body, {"delta": {"role": "assistant"}}))
                    for piece in pieces:
                        if piece is None:
                            break
                        self._event(stub.chunk(body, {"delta": {"content": piece}} if chat
                                               else {"text": piece},
                                               usage=stub.usage(sent + 1) if counted else None))
                        sent += 1
                        time.sleep(stub.piece_delay)
                    else:
                        self._finish(body, chat, stopped, len(pieces))
                except (BrokenPipeError, ConnectionResetError):
                    with stub._lock:
                        stub.disconnected += 1
                with stub._lock:
                    stub.sent.append(sent)

            def _finish(self, body: dict, chat: bool, stopped: str | None, count: int) -> None:
                self._event(stub.chunk(
                    body, {"delta": {}} if chat else {"text": ""},
                    stopped or stub.finish_reason, stub.usage(count) if stub.stream_usage
                    else None))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, payload: dict) -> None:
                self.wfile.write(b"data: " + stub.as_sent(payload) + b"\n\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True
        self._timer.start()
        self._closed = False

    def as_sent(self, payload: dict) -> bytes:
        """An answer's bytes, each text of `raw` replaced by its bytes."""
        data = json.dumps(payload).encode()
        for text, raw in self.raw.items():
            data = data.replace(text.encode(), raw)
        return data

    def answered_pieces(self, request: dict) -> tuple[list[str | None], str | None]:
        """The pieces a stream sends, and the finish reason of a stop that ended them."""
        if not self.vllm:
            return self.pieces, None
        return vllm_stopped([p for p in self.pieces if p is not None], request)

    @staticmethod
    def usage(tokens: int) -> dict:
        return {"prompt_tokens": 11, "completion_tokens": tokens, "total_tokens": 11 + tokens}

    def answer(self, path: str, request: dict) -> dict:
        text, tokens, finish_reason = self.reply, 7, self.finish_reason
        if self.vllm:
            pieces, stopped = self.answered_pieces(request)
            text, tokens, finish_reason = "".join(pieces), len(pieces), \
                stopped or finish_reason
        if path.endswith("/chat/completions"):
            kind, choice = "chat.completion", {"message": {"role": "assistant",
                                                           "content": text}}
        else:
            kind, choice = "text_completion", {"text": text, "logprobs": None}
        return {"id": "stub", "object": kind, "created": 0, "model": request["model"],
                "choices": [{"index": 0, "finish_reason": finish_reason, **choice}],
                "usage": self.usage(tokens)}

    @staticmethod
    def chunk(request: dict, choice: dict, finish_reason: str | None = None,
              usage: dict | None = None) -> dict:
        chat = "messages" in request
        return {"id": "stub", "created": 0, "model": request["model"],
                "object": "chat.completion.chunk" if chat else "text_completion",
                "choices": [{"index": 0, "finish_reason": finish_reason, **choice}],
                **({"usage": usage} if usage else {})}

    def posts(self) -> list[dict]:
        return [body for method, _, body in self.requests if method == "POST"]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "StubServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

