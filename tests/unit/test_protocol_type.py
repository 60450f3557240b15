"""RunProtocol writes the protocol every earlier version wrote, key for key, and reads the
records they wrote as the protocol they were made under. The expectations are literal dicts, as
the records on disk hold them, not computed by the code under test."""

import json

import pytest

from pytest_humanfix.protocol import (
    RunProtocol,
    fingerprint_differences,
    options_of,
    record_fingerprint,
    record_language,
    run_fingerprint,
    without_model,
)
from pytest_humanfix.settings import Settings

# What a default Python run wrote before the protocol had a type of its own: the repair
# agent's, the only one then, so the runs below name it where they have rounds.
REPAIR = Settings(agent="repair")
DEFAULT = {"variant": "tests", "iters": 0, "samples": 1, "temperature": 0.0,
           "max_new_tokens": 512, "timeout": 10.0, "prompt": "auto", "strict": False,
           "language": "python", "chat_stop": "code"}
ROUNDS = {**DEFAULT, "iters": 1, "round_temperature": [1.0], "ask_again_temperature": [1.2]}


def naming(agent: str, protocol: dict) -> dict:
    """`protocol` with its agent written where a record writes it, before `chat_stop`."""
    keys = list(protocol)
    at = keys.index("chat_stop")
    return {**{k: protocol[k] for k in keys[:at]}, "agent": agent,
            **{k: protocol[k] for k in keys[at:]}}


@pytest.mark.parametrize("settings, language, expected", [
    # Without rounds, the agents whose round 0 is repair's write what repair always wrote.
    (Settings(), "python", DEFAULT),
    (REPAIR, "python", DEFAULT),
    (Settings(agent="resample"), "python", DEFAULT),
    (Settings(agent="tools"), "python", naming("tools", DEFAULT)),
    # With rounds, the default agent is rewrite, and says so.
    (Settings(iters=1), "python", naming("rewrite", ROUNDS)),
    (Settings(iters=1, agent="repair"), "python", ROUNDS),
    (Settings(agent="repair", chat_stop="none"), "python",
     {k: v for k, v in DEFAULT.items() if k != "chat_stop"}),
    (Settings(agent="repair", max_length=600, timeout=3.0, strict=True, prompt="primed"),
     "python",
     {"variant": "tests", "iters": 0, "samples": 1, "temperature": 0.0, "max_length": 600,
      "timeout": 3.0, "prompt": "primed", "strict": True, "language": "python",
      "chat_stop": "code"}),
    (Settings(iters=2, tests="plus", agent="tools", variant="docs"), "python",
     {"variant": "docs", "iters": 2, "samples": 1, "temperature": 0.0, "max_new_tokens": 512,
      "timeout": 10.0, "prompt": "auto", "strict": False, "language": "python",
      "tests": "plus", "agent": "tools", "chat_stop": "code",
      "round_temperature": [1.0], "ask_again_temperature": [1.2]}),
    (Settings(agent="repair", iters=1, round_temperature=(0.5, 0.7), ask_again_temperature=()),
     "go",
     {"variant": "tests", "iters": 1, "samples": 1, "temperature": 0.0, "max_new_tokens": 512,
      "timeout": 20.0, "prompt": "auto", "strict": False, "language": "go",
      "chat_stop": "code", "round_temperature": [0.5, 0.7], "ask_again_temperature": []}),
])
def test_written_protocol_is_todays_byte_for_byte(settings, language, expected):
    written = RunProtocol.of(settings, language).to_json()
    # Byte for byte: the same keys in the same order, so the JSONL line is unchanged.
    assert json.dumps(written) == json.dumps(expected)


def test_a_record_from_before_prompt_strict_and_language_reads_as_made():
    # A record of an early version: none of prompt, strict or language, nor the later fields.
    old = {"task_id": "Python/0", "model": "m", "dataset_hash": "h",
           "protocol": {"variant": "tests", "iters": 0, "samples": 1, "temperature": 0.0,
                        "max_new_tokens": 512, "timeout": 10.0}}
    made = Settings(agent="repair", chat_stop="none")
    today = run_fingerprint("m", RunProtocol.of(made, "python").to_json(), "h")
    assert record_fingerprint(old)["protocol"] == {
        "variant": "tests", "iters": 0, "samples": 1, "temperature": 0.0,
        "max_new_tokens": 512, "timeout": 10.0, "prompt": "auto", "strict": False,
        "language": "python", "tests": "hidden", "agent": "repair", "chat_stop": "none"}
    assert fingerprint_differences(record_fingerprint(old), today) == []
    assert record_language(old) == "python"


def test_an_old_record_still_differs_where_it_was_made_otherwise():
    old = {"model": "m", "dataset_hash": "h",
           "protocol": {"variant": "tests", "iters": 0, "samples": 1, "temperature": 0.0,
                        "max_new_tokens": 512, "timeout": 10.0}}
    made = Settings(agent="repair", strict=True, chat_stop="none")
    strict = run_fingerprint("m", RunProtocol.of(made, "python").to_json(), "h")
    assert fingerprint_differences(record_fingerprint(old), strict) == \
        ["strict: False there, True here"]


def test_several_languages_join_their_names_and_timeouts():
    protocol = RunProtocol.of_run(Settings(), ("python", "go"))
    assert protocol["language"] == "python,go"
    assert protocol["timeout"] == {"python": 10.0, "go": 20.0}


def test_a_baseline_leaves_out_the_model_and_the_agent():
    fingerprint = run_fingerprint("m", RunProtocol.of(Settings(agent="tools"), "python")
                                  .to_json(), "h")
    kept = without_model(fingerprint)
    assert "model" not in kept and kept["dataset_hash"] == "h"
    assert kept["protocol"] is not None and "agent" not in kept["protocol"]
    assert fingerprint["protocol"] is not None and fingerprint["protocol"]["agent"] == "tools"


def fingerprint(settings: Settings) -> dict:
    return run_fingerprint("m", RunProtocol.of(settings, "python").to_json(), "h")


@pytest.mark.parametrize("there, here, line", [
    # A field the run leaves out at its old value still meets the record's other value...
    (Settings(agent="tools"), REPAIR, "agent: 'tools' there, 'repair' here"),
    (Settings(tests="plus"), Settings(), "tests: 'plus' there, 'hidden' here"),
    (Settings(chat_stop="none"), Settings(), "chat_stop: 'none' there, 'code' here"),
    # ...and the other way round: the record leaves it out, the run writes it.
    (REPAIR, Settings(agent="tools"), "agent: 'repair' there, 'tools' here"),
    (Settings(), Settings(tests="plus"), "tests: 'hidden' there, 'plus' here"),
    (Settings(), Settings(chat_stop="none"), "chat_stop: 'code' there, 'none' here"),
])
def test_every_field_of_either_side_is_compared(there, here, line):
    found = record_fingerprint({"model": "m", "dataset_hash": "h",
                                "protocol": RunProtocol.of(there, "python").to_json()})
    assert fingerprint_differences(found, fingerprint(here)) == [line]
    assert fingerprint_differences(found, fingerprint(there)) == []


def test_a_late_field_with_no_old_value_is_refused_when_missing():
    # Repair rounds without their temperatures: a record cannot tell what it was made under.
    protocol = RunProtocol.of(Settings(iters=1), "python").to_json()
    older = {key: value for key, value in protocol.items() if key != "round_temperature"}
    found = record_fingerprint({"model": "m", "dataset_hash": "h", "protocol": older})
    assert fingerprint_differences(found, fingerprint(Settings(iters=1))) == \
        ["round_temperature: None there, [1.0] here"]


def test_the_fix_names_the_option_of_each_differing_field():
    lines = ["agent: 'tools' there, 'repair' here", "chat_stop: 'none' there, 'code' here",
             "model: 'a' there, 'b' here", "max_new_tokens: 512 there, None here"]
    assert options_of(lines) == ("--humanfix-agent, --humanfix-chat-stop, --humanfix-model, "
                                 "--humanfix-max-new-tokens or --humanfix-max-length")


def test_a_pass_at_1_record_of_any_agent_with_repairs_round_0_reads_as_repairs():
    """A run without rounds of resample or rewrite asked what repair's asks: its record, as
    an earlier version wrote it (agent named), stands for a default run of today, and the
    other way round; with rounds it does not."""
    for agent in ("resample", "rewrite"):
        old = {"model": "m", "dataset_hash": "h",
               "protocol": {**DEFAULT, "agent": agent}}
        assert fingerprint_differences(record_fingerprint(old), fingerprint(REPAIR)) == []
        assert fingerprint_differences(record_fingerprint(old), fingerprint(Settings())) == []
    rounds = {"model": "m", "dataset_hash": "h", "protocol": {**ROUNDS, "agent": "rewrite"}}
    assert fingerprint_differences(record_fingerprint(rounds),
                                   fingerprint(Settings(iters=1, agent="repair"))) == \
        ["agent: 'rewrite' there, 'repair' here"]
    assert fingerprint_differences(record_fingerprint(rounds), fingerprint(Settings(iters=1))) == []


def test_a_record_that_named_the_ask_again_schedule_resample_temperature_reads_as_made():
    """Records written before 2026-12-05 name the ask-again schedule `resample_temperature`:
    read under today's name, they resume, compare and merge with today's records."""
    def old_record(schedule: list[float]) -> dict:
        protocol = {**{k: v for k, v in ROUNDS.items() if k != "ask_again_temperature"},
                    "resample_temperature": schedule}
        return {"model": "m", "dataset_hash": "h", "protocol": protocol}

    today = fingerprint(Settings(iters=1, agent="repair"))
    assert fingerprint_differences(record_fingerprint(old_record([1.2])), today) == []
    differences = fingerprint_differences(record_fingerprint(old_record([0.9])), today)
    assert differences == ["ask_again_temperature: [0.9] there, [1.2] here"]
    assert options_of(differences) == "--humanfix-ask-again-temperature"
