"""The OpenAI-compatible backend: `openai:<model>` against vLLM, SGLang, llama.cpp, Ollama,
`transformers serve` or a hosted API.

Built on the `openai` client (the `openai` extra), imported only when this backend is used. Its
retry policy is the one we want and is already battle-tested: exponential backoff with jitter
(0.5 s doubling, capped at 8 s), honouring `Retry-After`, on 408/409/429/5xx, connection errors
and timeouts. Writing that again over httpx would be a second, less tested copy.

Every failure here raises `ModelLoadError`: a server that cannot be reached, goes away mid-run or
answers with an error is a harness fault, an error outcome, never "unfixed".
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ..dataset import Task
from ..settings import Settings
from .base import Generation, ModelLoadError, settle_prompt

RETRIES = 3  # after the first try: about 3.5 s of backoff before a dead server is an error
PROBE_TIMEOUT = 10.0
PLACEHOLDER_KEY = "EMPTY"  # local servers (vLLM, transformers serve) accept any key


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
        self.base_url = settings.base_url.rstrip("/")
        # Chat through /v1/chat/completions unless asked for a completion (/v1/completions).
        self.prompt = settle_prompt(settings.prompt, has_chat_template=True)
        self.engine = settings.engine if settings.engine != "auto" else "openai"
        self._openai = openai
        self.client = openai.OpenAI(
            base_url=self.base_url, api_key=os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY,
            timeout=settings.request_timeout, max_retries=RETRIES)
        self._probe()

    def _probe(self) -> None:
        """Fail at load, once, when nobody answers at the base URL: the runner then errors every
        task at once instead of each one waiting through its retries."""
        probe = self.client.with_options(timeout=min(PROBE_TIMEOUT, self.settings.request_timeout),
                                         max_retries=0)
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
                    f"the server at {self.base_url} refused the key ({exc.status_code}): set "
                    "OPENAI_API_KEY to a key it accepts.") from None
            except self._openai.APIStatusError:
                return  # it answered: not every server implements /models
        raise ModelLoadError(self._unreachable(error))

    def _unreachable(self, exc: Exception) -> str:
        return (f"cannot reach the OpenAI-compatible server at {self.base_url} "
                f"({type(exc).__name__}: {exc}). Start it, or point --humanfix-base-url at it.")

    def request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"model": self.model_name, "messages": messages, **self._decoding()}

    def _decoding(self) -> dict[str, Any]:
        return {"temperature": self.settings.temperature,
                "max_tokens": self.settings.max_new_tokens, "seed": self.settings.seed}

    def generate(self, messages: list[dict[str, str]], task: Task) -> Generation:
        return self._ask(self.client.chat.completions.create, self.request(messages),
                         lambda choice: choice.message.content)

    def complete(self, prompt: str, stop: list[str], task: Task) -> Generation:
        return self._ask(self.client.completions.create,
                         {"model": self.model_name, "prompt": prompt, "stop": stop,
                          **self._decoding()},
                         lambda choice: choice.text)

    def _ask(self, create: Callable[..., Any], request: dict[str, Any],
             text_of: Callable[[Any], str | None]) -> Generation:
        started = time.monotonic()
        try:
            response = create(**request)
        except self._openai.APITimeoutError:
            raise ModelLoadError(
                f"the server at {self.base_url} did not answer within "
                f"{self.settings.request_timeout:g} s ({RETRIES + 1} tries); raise "
                "--humanfix-request-timeout if it is just slow.") from None
        except self._openai.APIConnectionError as exc:
            raise ModelLoadError(self._unreachable(exc)) from None
        except self._openai.APIStatusError as exc:
            raise ModelLoadError(
                f"the server at {self.base_url} answered {exc.status_code} for model "
                f"{self.model_name!r}: {exc.message}") from None
        if not response.choices:
            raise ModelLoadError(f"the server at {self.base_url} returned no choices")
        choice = response.choices[0]
        usage = response.usage
        return Generation(
            text=text_of(choice) or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            seconds=time.monotonic() - started,
            # Servers also say "content_filter" or "tool_calls"; neither ran out of tokens.
            finish_reason="length" if choice.finish_reason == "length" else "stop",
            engine=self.engine)
