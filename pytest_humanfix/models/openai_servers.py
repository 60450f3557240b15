"""The servers behind the OpenAI client, asked directly: where a worker starts in a fleet, what a
server says of what computes its replies (/props, /version), and how it counts a prompt's tokens
(vLLM's /tokenize). Requests and answers are JSON objects: plain dicts at this HTTP boundary.
See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any, TypedDict, cast

from .. import computed_by
from ..computed_by import UNKNOWN, ComputedBy
from .base import ModelLoadError

PROBE_TIMEOUT = 10.0
PLACEHOLDER_KEY = "EMPTY"  # local servers (vLLM, transformers serve) accept any key
# A completion or chat request as the openai client's create() takes it, and as its JSON body
# is sent: OpenAI's fields and the servers' own (`extra_body`).
Request = dict[str, Any]


class ServerProbe(TypedDict):
    """What the controller found once at a server of the fleet, which every worker takes
    instead of asking again: why it is out of rotation ("" while it answers), and what computes
    its replies (`server_computed_by`)."""

    out: str
    computed_by: ComputedBy


def api_key() -> str:
    return os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY


def get_json(url: str) -> dict[str, Any]:
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
    props = get_json(root + "/props")
    described = props.get("computed_by")
    if isinstance(described, dict):
        return cast(ComputedBy, described)  # our engine's own, as JSON
    if "build_info" in props:  # its /props names its build and the model's type, no kernels
        return {"engine": "llama-server", "version": str(props["build_info"]),
                "kernels": UNKNOWN, "device": UNKNOWN,
                "dtype": str(props.get("model_ftype", UNKNOWN))}
    version = get_json(root + "/version").get("version")
    if isinstance(version, str):
        return {"engine": engine, "version": version, "device": UNKNOWN}
    return computed_by.unknown(engine, f"the server at {base_url} says nothing of what it runs")


def worker_index(worker: str) -> int:
    """gw3: 3; the controller or a process outside xdist: 0."""
    number = worker.removeprefix("gw")
    return int(number) if number.isdigit() else 0


def tokenize_body(request: Request) -> dict[str, Any]:
    """vLLM's /tokenize body for a completion or chat request: the prompt as it is sent, the
    messages with the generation prompt and any tools (they are laid out in the prompt too)."""
    body: dict[str, Any] = {"model": request["model"]}
    if "prompt" in request:
        body["prompt"] = request["prompt"]
    else:
        body.update(messages=request["messages"], add_generation_prompt=True)
        if "tools" in request:
            body["tools"] = request["tools"]
    return body


def counted_prompt_tokens(base_url: str, request: Request, timeout: float) -> int:
    """The prompt's tokens as the server at `base_url` counts them, from vLLM's POST /tokenize
    (which our llama.cpp engine serves too), beside the server's /v1."""
    root = base_url.removesuffix("/v1")
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key()}"}
    asked = urllib.request.Request(root + "/tokenize", json.dumps(tokenize_body(request)).encode(),
                                   headers)
    try:
        with urllib.request.urlopen(asked, timeout=timeout) as answer:
            counted = json.load(answer)
    except (OSError, ValueError) as exc:  # HTTPError and URLError are OSErrors
        count, why = None, f"{type(exc).__name__}: {exc}"
    else:
        count = counted.get("count") if isinstance(counted, dict) else None
        why = "the answer had no count"
    if not isinstance(count, int):
        raise ModelLoadError(
            f"--humanfix-max-length counts each prompt's tokens, and the server at "
            f"{base_url} did not count them (POST {root}/tokenize: {why}). vLLM and "
            "the llama.cpp engine of --humanfix-serve answer it; for another server, give "
            "--humanfix-max-new-tokens instead.")
    return count
