"""The run's protocol (what changes the meaning of a score) and the fingerprint built on it:
two records compare, resume or stand as a baseline only when their fingerprints agree.

`RunProtocol` is the one place that knows how the protocol is written into a record and how a
record written by an earlier version reads: fields added later are left out at their old value
when written, or filled in with it when read, so old records keep their fingerprint; two
protocols are compared field by field, every field of either (docs/schema.md, "protocol").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, cast

from .variants.impossible import VARIANT as IMPOSSIBLE

if TYPE_CHECKING:
    from .settings import Settings


class RecordedProtocol(TypedDict, total=False):
    """A record's `protocol` as JSON (docs/schema.md). Not total: one of the two budgets is
    written, and the late fields only away from their old value. A run of several languages
    (the summary's `run.protocol`) joins their names in `language` and maps each to its
    `timeout`."""

    variant: str
    iters: int
    samples: int
    temperature: float
    max_new_tokens: int
    max_length: int
    timeout: float | dict[str, float]
    prompt: str
    strict: bool
    language: str
    tests: str
    agent: str
    chat_stop: str
    round_temperature: list[float]
    ask_again_temperature: list[float]
    mutation: str


class Fingerprint(TypedDict, total=False):
    """What must agree for two records to be compared or one to stand for the other; a
    baseline's lacks the model (`without_model`)."""

    model: str | None
    protocol: RecordedProtocol | None
    dataset_hash: str | None


class Fingerprinted(TypedDict, total=False):
    """The fields of a record (`records.Record`) that its fingerprint is made of: named here, so
    that records.py, which types the whole line, is what imports this module."""

    language: str
    model: str | None
    protocol: RecordedProtocol
    dataset_hash: str


# Missing from records made before the field existed: the value they were made under (a missing
# prompt: the chat template, which auto chose then; strict: flagged fixes were not looked for;
# language: only Python was evaluated; tests: the hidden tests alone; agent: the built-in repair
# loop; chat_stop: no stop asked for). The last three are still left out at that value when
# written, so a missing one means that value in a record of any version. A field with no such
# value (round_temperature) is compared as absent: a record lacking it where the run has it is
# refused, as it cannot tell what it was made under; `mutation`, too, is written only where it
# decides something (the impossible variant, which came with it).
FILLED_WHEN_READ = RecordedProtocol(prompt="auto", strict=False, language="python",
                                    tests="hidden", agent="repair", chat_stop="none")
# The built-in agents whose round 0 is `repair`'s first attempt, request for request: without
# repair rounds they ask the same, so a run of any of them is recorded, and read, as `repair`'s
# (a pass@1 run keeps its fingerprint whichever is the default).
FIRST_ATTEMPT_OF_REPAIR = ("repair", "resample", "rewrite")
# Fields renamed since records were first written: the earlier key, read as the field.
RENAMED = {"resample_temperature": "ask_again_temperature"}


def decided_agent(agent: str, iters: int) -> str:
    """The agent as far as it decides what the run asks."""
    return FILLED_WHEN_READ["agent"] if not iters and agent in FIRST_ATTEMPT_OF_REPAIR else agent


@dataclass(frozen=True)
class RunProtocol:
    """One language's protocol, as the options set it."""

    variant: str
    iters: int
    samples: int
    temperature: float
    max_new_tokens: int
    max_length: int | None  # BigCode's budget; max_new_tokens is not part of it when set
    timeout: float
    prompt: str
    strict: bool
    language: str
    tests: str
    agent: str
    chat_stop: str
    round_temperature: tuple[float, ...]
    ask_again_temperature: tuple[float, ...]
    mutation: str  # the impossible variant's; it decides nothing in another

    @classmethod
    def of(cls, settings: Settings, language: str) -> RunProtocol:
        # Each field is the Settings field of its name, as in RepairConfig.of, but for the two
        # that are the language's: its limit and its name.
        given = {field.name: getattr(settings, field.name) for field in dataclasses.fields(cls)
                 if field.name not in ("timeout", "language")}
        return cls(**given, timeout=settings.timeout_for(language), language=language)

    def to_json(self) -> RecordedProtocol:
        """The record's `protocol`, key for key as every earlier version wrote it."""
        protocol = RecordedProtocol(variant=self.variant, iters=self.iters,
                                    samples=self.samples, temperature=self.temperature)
        if self.max_length is None:
            protocol["max_new_tokens"] = self.max_new_tokens
        else:
            protocol["max_length"] = self.max_length
        protocol["timeout"] = self.timeout
        protocol["prompt"] = self.prompt
        protocol["strict"] = self.strict
        protocol["language"] = self.language
        # Fields added later are written only away from the value every record before them
        # was made under (FILLED_WHEN_READ), so old records keep their fingerprint.
        if self.tests != FILLED_WHEN_READ["tests"]:
            protocol["tests"] = self.tests
        if decided_agent(self.agent, self.iters) != FILLED_WHEN_READ["agent"]:
            protocol["agent"] = self.agent
        if self.chat_stop != FILLED_WHEN_READ["chat_stop"]:
            protocol["chat_stop"] = self.chat_stop
        if self.iters:  # without repair rounds they decide nothing
            protocol["round_temperature"] = list(self.round_temperature)
            protocol["ask_again_temperature"] = list(self.ask_again_temperature)
        if self.variant == IMPOSSIBLE:
            protocol["mutation"] = self.mutation
        return protocol

    @classmethod
    def of_run(cls, settings: Settings, languages: Sequence[str]) -> RecordedProtocol:
        """The run's protocol: its language's, or with several, their names and each one's
        timeout."""
        protocol = cls.of(settings, languages[0]).to_json()
        if len(languages) > 1:
            protocol["language"] = ",".join(languages)
            protocol["timeout"] = {name: settings.timeout_for(name) for name in languages}
        return protocol

    @staticmethod
    def read(protocol: RecordedProtocol) -> RecordedProtocol:
        """A record's protocol as this version compares it: the fields written since it was
        made filled with the value it was made under, a field renamed since under its name
        now (`RENAMED`), and a pass@1 run's agent as `decided_agent` records it."""
        read = cast(RecordedProtocol, {**FILLED_WHEN_READ, **{RENAMED.get(key, key): value
                                                             for key, value in protocol.items()}})
        iters = read.get("iters")
        if isinstance(iters, int):
            read["agent"] = decided_agent(read["agent"], iters)
        return read


def run_fingerprint(model: str | None, protocol: RecordedProtocol | None,
                    dataset_hash: str | None) -> Fingerprint:
    return Fingerprint(model=model, protocol=protocol, dataset_hash=dataset_hash)


def without_model(fingerprint: Fingerprint) -> Fingerprint:
    """What a baseline must share with a run: all of the fingerprint but what is evaluated,
    the model and the agent (the protocol's `agent`), so that two of either compare."""
    protocol = fingerprint.get("protocol")
    if isinstance(protocol, dict):
        protocol = protocol.copy()
        protocol.pop("agent", None)
    return Fingerprint(protocol=protocol, dataset_hash=fingerprint.get("dataset_hash"))


def record_language(record: Fingerprinted) -> str:
    protocol = record.get("protocol")
    in_protocol = protocol.get("language") if isinstance(protocol, dict) else None
    return str(record.get("language") or in_protocol or FILLED_WHEN_READ["language"])


def record_fingerprint(record: Fingerprinted) -> Fingerprint:
    protocol = record.get("protocol")
    return run_fingerprint(record.get("model"),
                           RunProtocol.read(protocol) if isinstance(protocol, dict) else protocol,
                           record.get("dataset_hash"))


def fingerprint_differences(found: Fingerprint, wanted: Fingerprint) -> list[str]:
    """`name: found there, wanted here` for each key of `wanted` that differs, the protocol
    field by field over the fields of both, each read as this version reads a record
    (`RunProtocol.read`): a field only one side wrote differs unless it is the other's
    default."""
    # Key by key, whatever the record holds: a record of an earlier version may lack any.
    there: Mapping[str, object] = found
    here: Mapping[str, object] = wanted
    lines = []
    for key, value in here.items():
        found_value = there.get(key)
        if key == "protocol" and isinstance(found_value, dict) and isinstance(value, dict):
            ours: Mapping[str, object] = RunProtocol.read(cast(RecordedProtocol, value))
            theirs: Mapping[str, object] = RunProtocol.read(cast(RecordedProtocol, found_value))
            for name in [*ours, *(name for name in theirs if name not in ours)]:
                mine, other = ours.get(name), theirs.get(name)
                if mine != other:
                    lines.append(f"{name}: {other!r} there, {mine!r} here")
        elif found_value != value:
            lines.append(f"{key}: {found_value!r} there, {value!r} here")
    return lines


def options_of(differences: list[str]) -> str:
    """The options that set the fields `fingerprint_differences` names, for a refusal's fix:
    `--humanfix-agent, --humanfix-tests`."""
    protocol = {field.name for field in dataclasses.fields(RunProtocol)}
    named = {"model": "--humanfix-model", "dataset_hash": "--humanfix-dataset",
             "max_new_tokens": "--humanfix-max-new-tokens or --humanfix-max-length"}
    options = []
    for line in differences:
        name = line.split(":", 1)[0]
        option = named.get(name) or (f"--humanfix-{name.replace('_', '-')}"
                                     if name in protocol else name)
        if option not in options:
            options.append(option)
    return ", ".join(options)


def language_differences(record: Fingerprinted, wanted: Mapping[str, Fingerprint],
                         baseline: bool = False) -> tuple[str | None, list[str]]:
    """`fingerprint_differences` against the fingerprint of the record's language in
    `wanted` (by language); first, the record's language when the run has none of it. As a
    `baseline`, the record's model and agent are left out, as `wanted`'s are."""
    language = record_language(record)
    if language not in wanted:
        return language, []
    found = record_fingerprint(record)
    return None, fingerprint_differences(without_model(found) if baseline else found,
                                         wanted[language])
