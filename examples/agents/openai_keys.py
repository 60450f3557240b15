"""An agent that talks to an OpenAI-compatible API itself, with several keys, as one of the
designs this contract answers did (Llama-3.3-70B through a hosted API): `OPENAI_API_KEY=key1,key2`
is rotated per request, and a key that answers 429 (rate limited) or 401 (refused) is set aside
for COOLDOWN seconds. It runs the minimal agent (minimal.py) on the context with its model
replaced by those requests; each reply is recorded with `ctx.model.record`, so the trajectory,
tokens and seconds are in the report as a built-in agent's are.

    OPENAI_API_KEY=key1,key2 pytest --humanfix-model openai:<model> \
        --humanfix-base-url https://host/v1 --humanfix-agent examples/agents/openai_keys.py:fix

The model and server are the run's (`--humanfix-model openai:<model>`, `--humanfix-base-url`),
so the records name them; only the requests are the agent's own.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

import minimal  # the minimal agent, beside this file: its loop, over these keys

COOLDOWN = 60.0
SET_ASIDE = (401, 429)


class KeyRing:
    """The keys in turn, one per request, skipping those set aside until their time is up."""

    def __init__(self, keys, cooldown=COOLDOWN, clock=time.monotonic):
        self.keys = list(keys)
        self.cooldown = cooldown
        self.clock = clock
        self.back_at = {key: 0.0 for key in self.keys}
        self.turn = 0

    def next(self):
        now = self.clock()
        ready = [key for key in self.keys if self.back_at[key] <= now]
        if not ready:  # every key is set aside: wait for the first one back
            time.sleep(min(self.back_at.values()) - now)
            return self.next()
        # The next key in the ring's own order after the last one used.
        for offset in range(len(self.keys)):
            key = self.keys[(self.turn + offset) % len(self.keys)]
            if key in ready:
                self.turn = self.keys.index(key) + 1
                return key
        raise AssertionError("a ready key is in the ring")

    def set_aside(self, key):
        self.back_at[key] = self.clock() + self.cooldown


RING = None  # one per process (each xdist worker), built from OPENAI_API_KEY on first use


def ask(ring, base_url, model, messages, temperature):
    """The chat reply (OpenAI's JSON); a key answered 401 or 429 is set aside and the next is
    tried, each key at most once per request."""
    body = json.dumps({"model": model, "messages": messages,
                       "temperature": temperature}).encode()
    refused = []
    for _ in ring.keys:
        key = ring.next()
        request = urllib.request.Request(
            f"{base_url}/chat/completions", body,
            {"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as exc:
            if exc.code not in SET_ASIDE:
                raise
            ring.set_aside(key)
            refused.append(exc.code)
    raise RuntimeError(f"every key was refused ({refused}); check OPENAI_API_KEY")


class KeyedModel:
    """`ctx.model`'s chat over this file's own requests: each reply recorded as the run's."""

    def __init__(self, ctx):
        global RING
        if RING is None:
            RING = KeyRing(key.strip() for key in os.environ["OPENAI_API_KEY"].split(","))
        self.ctx = ctx
        self.model = ctx.model.spec.removeprefix("openai:")
        self.base_url = ctx.settings.base_urls[0].rstrip("/")

    def chat(self, messages, temperature=None, stop=None):
        began = time.monotonic()
        temperature = self.ctx.settings.temperature if temperature is None else temperature
        answer = ask(RING, self.base_url, self.model, messages, temperature)
        reply = answer["choices"][0]["message"]["content"] or ""
        usage = answer.get("usage") or {}
        self.ctx.model.record(reply, prompt_tokens=usage.get("prompt_tokens", 0),
                              completion_tokens=usage.get("completion_tokens", 0),
                              seconds=time.monotonic() - began, temperature=temperature,
                              engine="openai-keys")
        return reply


class OverKeys:
    """The context, its model replaced by the keyed one: any agent runs on it unchanged."""

    def __init__(self, ctx):
        self.task, self.rounds, self.settings = ctx.task, ctx.rounds, ctx.settings
        self.run_tests = ctx.run_tests
        self.model = KeyedModel(ctx)


def fix(ctx):
    return minimal.fix(OverKeys(ctx))
