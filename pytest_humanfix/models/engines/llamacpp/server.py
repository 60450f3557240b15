"""The HTTP side of our llama.cpp engine: OpenAI's chat and completion paths, vLLM's /tokenize,
llama-server's /props, and /health, each request handed to the decode thread and answered when
its job is done. See docs/models.md, "llama.cpp on a CPU".
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from .decode import BatchedModel
from .jobs import RequestError
from .protocol import answer, chat_layout, new_job, offered_tools


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
                    layout = chat_layout(body)
                    prompt, stop = model.prompts.chat_prompt(
                        body.get("messages") or [], layout.generation_prompt,
                        layout.continue_final, tools)
                else:
                    if not isinstance(body.get("prompt"), str):
                        raise RequestError("`prompt` must be one string")
                    prompt, stop = model.prompts.completion_prompt(body["prompt"]), []
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
                    tokens = model.prompts.completion_prompt(body["prompt"])
                elif isinstance(body.get("messages"), list):
                    tokens = model.prompts.chat_prompt(body["messages"],
                                                       tools=offered_tools(body))[0]
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
