"""An OpenAI-compatible server on loopback whose engine answers a batch in fixed time, as a GPU
engine nearly does for a small model: every `batch_seconds` it answers all the requests that were
waiting when the batch began, however many; a request arriving meanwhile waits for the next one.
So the run's wall time falls as its clients keep more requests waiting together.

`reply(request)` makes each reply's text from the request's JSON body (by default a fenced
comment holding the request's hash, so that records compare requests); `GET` answers what the
probes ask. `requests` holds one `Served` per completion asked: when it arrived, and when it was
answered or its client went away (a client that closes its connection while its request waits
is noticed within `POLL` s, as vLLM notices it and aborts the request). `in_flight(step)` is the
number waiting at each step of the run, `most_in_flight()` the most at once; `batches` the size
of each batch. `batch_seconds` may be changed while it serves: the next batch takes the new time.
"""

from __future__ import annotations

import hashlib
import json
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai_stub import completion

from pytest_humanfix.models.engines.llamacpp.server import send_json

POLL = 0.05


def request_hash(request: dict) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]


def hashed_reply(request: dict) -> str:
    return f"```python\n# request {request_hash(request)}\n```"


@dataclass
class Served:
    arrived: float
    body: dict
    answered: float | None = None
    dropped: float | None = None  # its client went away before the answer
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def ended(self) -> float | None:
        return self.answered if self.answered is not None else self.dropped


class BatchServer:
    def __init__(self, batch_seconds: float = 0.5,
                 reply: Callable[[dict], str] = hashed_reply, lifetime: float = 600.0) -> None:
        self.batch_seconds = batch_seconds
        self.reply = reply
        self.started = time.monotonic()
        self.requests: list[Served] = []
        self.batches: list[int] = []
        self.gets: list[str] = []
        self._waiting: list[Served] = []
        self._lock = threading.Condition()
        self._closed = False
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                stub.gets.append(self.path)
                send_json(self, 200, {"object": "list", "data": []})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                served = Served(stub.now(), body)
                with stub._lock:
                    stub.requests.append(served)
                    stub._waiting.append(served)
                    stub._lock.notify_all()
                while not served.done.wait(POLL):
                    if stub.gone(self.connection):
                        with stub._lock:
                            if not served.done.is_set():
                                served.dropped = stub.now()
                                if served in stub._waiting:
                                    stub._waiting.remove(served)
                                served.done.set()
                if served.dropped is not None:
                    return
                text = stub.reply(body)
                try:
                    send_json(self, 200, completion(self.path, body, text, len(text) // 4,
                                                    "stop"))
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._threads = [threading.Thread(target=self.httpd.serve_forever, daemon=True),
                         threading.Thread(target=self._engine, daemon=True)]
        for thread in self._threads:
            thread.start()
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True
        self._timer.start()

    def now(self) -> float:
        return time.monotonic() - self.started

    @staticmethod
    def gone(connection: socket.socket) -> bool:
        """The client closed its connection: it is readable, and reads as the end."""
        try:
            readable, _, _ = select.select([connection], [], [], 0)
            return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _engine(self) -> None:
        while True:
            with self._lock:
                while not self._waiting and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                batch, self._waiting = self._waiting, []
            self.batches.append(len(batch))
            time.sleep(self.batch_seconds)
            with self._lock:
                for served in batch:
                    if not served.done.is_set():
                        served.answered = self.now()
                        served.done.set()

    def posts(self) -> list[dict]:
        return [served.body for served in self.requests]

    def open_requests(self) -> int:
        """Requests neither answered nor given up by their client."""
        return sum(served.ended is None for served in self.requests)

    def most_in_flight(self) -> int:
        """The most requests waiting at once."""
        events = sorted([(s.arrived, 1) for s in self.requests]
                        + [(s.ended, -1) for s in self.requests if s.ended is not None])
        most = now = 0
        for _, step in events:
            now += step
            most = max(most, now)
        return most

    def in_flight(self, step: float = 0.5) -> list[int]:
        """How many requests were waiting at each `step` s from the first arrival on."""
        if not self.requests:
            return []
        first = min(s.arrived for s in self.requests)
        last = max(s.ended or self.now() for s in self.requests)
        counts, at = [], first
        while at <= last:
            counts.append(sum(s.arrived <= at < (s.ended or float("inf"))
                              for s in self.requests))
            at += step
        return counts

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._lock.notify_all()
        self._timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> BatchServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
