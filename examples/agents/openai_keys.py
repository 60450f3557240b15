"""An agent that talks to an OpenAI-compatible API itself, with several keys, as one of the
designs this contract answers did (Llama-3.3-70B through a hosted API): `OPENAI_API_KEY=key1,key2`
is rotated per request, and a key that answers 429 (rate limited) or 401 (refused) is set aside
for COOLDOWN seconds. Its replies are recorded with `ctx.model.record`, so the trajectory, tokens
and seconds are in the report as a built-in agent's are.

    OPENAI_API_KEY=key1,key2 pytest --humanfix-model openai:<model> \
        --humanfix-base-url https://host/v1 --humanfix-agent examples/agents/openai_keys.py:fix

The model and server are the run's (`--humanfix-model openai:<model>`, `--humanfix-base-url`),
so the records name them; only the requests are the agent's own.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request

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


def fix(ctx):
    global RING
    if RING is None:
        RING = KeyRing(key.strip() for key in os.environ["OPENAI_API_KEY"].split(","))
    model = ctx.model.spec.removeprefix("openai:")
    base_url = ctx.settings.base_urls[0].rstrip("/")
    messages = [{"role": "user", "content": ctx.task.prompt}]
    code = None
    for _ in range(ctx.rounds + 1):
        began = time.monotonic()
        answer = ask(RING, base_url, model, messages, ctx.settings.temperature)
        reply = answer["choices"][0]["message"]["content"] or ""
        usage = answer.get("usage") or {}
        ctx.model.record(reply, prompt_tokens=usage.get("prompt_tokens", 0),
                         completion_tokens=usage.get("completion_tokens", 0),
                         seconds=time.monotonic() - began, engine="openai-keys")
        block = re.search(r"```\w*\n(.*?)(?:```|$)", reply, re.S)
        code = block.group(1) if block else reply
        result = ctx.run_tests(code)
        if result.passed:
            break
        messages += [{"role": "assistant", "content": reply},
                     {"role": "user", "content": result.feedback}]
    return code
