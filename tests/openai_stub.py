"""A scripted OpenAI-compatible server on loopback, for faults a real server will not stage on cue.

`POST /v1/chat/completions` and `POST /v1/completions` answer, in order, the statuses of `script`
(an int is that error status, a (status, message) pair that status with that error message, "ok"
a completion, a float a delay of that many seconds before the completion), then completions:
`reply` (a chat message, or the text a completion continues with) ending for `finish_reason`.
`keys` scripts statuses per API key the same way, before `script`: `{"key1": [401]}` answers a
request made with key1 401 once. `die_after=N` closes the server after its N-th completion: later
connections are refused, as when a server process goes away.
It closes itself after `lifetime` seconds in any case, so a broken test cannot leave it running.

A request with `"stream": true` is answered as transformers serve streams: a chunk per piece of
`pieces` (a token each; default the whole reply in one), `piece_delay` seconds apart (a None
piece: the server breaks off there), then a chunk with `finish_reason` and, unless
`stream_usage` is false, the usage. `sent` holds, per stream, the pieces written before it ended
or the client closed it (`disconnected` counts those closed early): a write after the client's
close fails within a piece or two.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_humanfix.models.engines.llamacpp.server import send_json

REPLY = "```python\ndef f():\n    return 1\n```"


class StubServer:
    def __init__(self, script: list[Any] = (), die_after: int | None = None,
                 lifetime: float = 120.0, reply: str = REPLY,
                 finish_reason: str = "stop", keys: dict[str, list[Any]] | None = None,
                 pieces: list[str | None] | None = None, piece_delay: float = 0.01,
                 stream_usage: bool = True) -> None:
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
                send_json(self, status, payload)

            def _stream(self, body: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chat = self.path.endswith("/chat/completions")
                sent = 0
                try:
                    if chat:
                        self._event(stub.chunk(body, {"delta": {"role": "assistant"}}))
                    for piece in stub.pieces:
                        if piece is None:
                            break
                        self._event(stub.chunk(body, {"delta": {"content": piece}} if chat
                                               else {"text": piece}))
                        sent += 1
                        time.sleep(stub.piece_delay)
                    else:
                        self._finish(body, chat)
                except (BrokenPipeError, ConnectionResetError):
                    with stub._lock:
                        stub.disconnected += 1
                with stub._lock:
                    stub.sent.append(sent)

            def _finish(self, body: dict, chat: bool) -> None:
                usage = {"prompt_tokens": 11, "completion_tokens": len(stub.pieces),
                         "total_tokens": 11 + len(stub.pieces)}
                self._event(stub.chunk(
                    body, {"delta": {}} if chat else {"text": ""},
                    stub.finish_reason, usage if stub.stream_usage else None))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, payload: dict) -> None:
                self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True
        self._timer.start()
        self._closed = False

    def answer(self, path: str, request: dict) -> dict:
        if path.endswith("/chat/completions"):
            kind, choice = "chat.completion", {"message": {"role": "assistant",
                                                           "content": self.reply}}
        else:
            kind, choice = "text_completion", {"text": self.reply, "logprobs": None}
        return {"id": "stub", "object": kind, "created": 0, "model": request["model"],
                "choices": [{"index": 0, "finish_reason": self.finish_reason, **choice}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}

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

