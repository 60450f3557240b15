"""The converters of option values (pytest_humanfix/settings/converters.py), each on text a user
would write: the typed value it returns, and for text it refuses the ValueError whose message
says what the option takes (the caller puts the option's name in front)."""

from __future__ import annotations

import pytest

from pytest_humanfix.settings import OPTIONS, converters


@pytest.mark.parametrize(("convert", "text", "value"), [
    (converters.positive_int, "3", 3),
    (converters.positive_int, " 1 ", 1),
    (converters.non_negative_int, "0", 0),
    (converters.positive_float, "0.5", 0.5),
    (converters.positive_float, "2", 2.0),
    (converters.non_negative_float, "0", 0.0),
])
def test_numbers_in_range_are_taken(convert, text, value):
    converted = convert(text)
    assert converted == value and type(converted) is type(value)


@pytest.mark.parametrize(("convert", "text", "says"), [
    (converters.positive_int, "0", "must be 1 or more"),
    (converters.positive_int, "-2", "must be 1 or more"),
    (converters.non_negative_int, "-1", "must be 0 or more"),
    (converters.positive_float, "0", "must be more than 0"),
    (converters.positive_float, "-0.5", "must be more than 0"),
    # NaN compares false both ways: refused, not let through as "not below the bound".
    (converters.positive_float, "nan", "must be more than 0"),
    (converters.non_negative_float, "-0.1", "must be 0 or more"),
    (converters.non_negative_float, "nan", "must be 0 or more"),
])
def test_numbers_out_of_range_say_the_range(convert, text, says):
    with pytest.raises(ValueError) as raised:
        convert(text)
    assert str(raised.value) == says


@pytest.mark.parametrize(("convert", "says"), [
    (converters.positive_int, "must be a whole number of 1 or more"),
    (converters.non_negative_int, "must be a whole number of 0 or more"),
    (converters.integer, "must be a whole number, e.g. 0"),
])
@pytest.mark.parametrize("text", ["1.5", "two", ""])
def test_an_int_option_refuses_what_is_no_whole_number_saying_so(convert, says, text):
    with pytest.raises(ValueError) as raised:
        convert(text)
    assert str(raised.value) == says
    assert raised.value.__suppress_context__  # not Python's "invalid literal for int()"


@pytest.mark.parametrize(("convert", "says"), [
    (converters.positive_float, "must be a number more than 0, e.g. 2.5"),
    (converters.non_negative_float, "must be a number of 0 or more, e.g. 0.5"),
])
def test_a_number_option_refuses_text_saying_what_it_takes(convert, says):
    with pytest.raises(ValueError) as raised:
        convert("fast")
    assert str(raised.value) == says


def test_an_integer_takes_any_whole_number():
    assert converters.integer(" -3 ") == -3


@pytest.mark.parametrize(("convert", "text", "value"), [
    (converters.fraction, "0.35", 0.35),
    (converters.fraction, "35%", 0.35),
    (converters.fraction, " 35 % ", 0.35),
    (converters.fraction, "0", 0.0),
    (converters.fraction, "1", 1.0),
    (converters.fraction, "100%", 1.0),
    (converters.level, "0.05", 0.05),
    (converters.level, "5%", 0.05),
])
def test_a_fraction_is_taken_as_one_or_as_a_percentage(convert, text, value):
    assert convert(text) == pytest.approx(value)


@pytest.mark.parametrize(("convert", "text", "says"), [
    (converters.fraction, "35", "is not a fraction: write 0.35 or 35%"),
    (converters.level, "5", "is not a fraction: write 0.05 or 5%"),
    (converters.fraction, "150%", "must be a fraction from 0 to 1 (0% to 100%)"),
    (converters.fraction, "-0.1", "must be a fraction from 0 to 1 (0% to 100%)"),
    (converters.fraction, "nan", "must be a fraction from 0 to 1 (0% to 100%)"),
    (converters.level, "0", "must be a fraction more than 0 and less than 1 (0% < A < 100%)"),
    (converters.level, "1", "must be a fraction more than 0 and less than 1 (0% < A < 100%)"),
    (converters.fraction, "a third", "must be a fraction, e.g. 0.35, or a percentage, e.g. 35%"),
    (converters.level, "%", "must be a fraction, e.g. 0.35, or a percentage, e.g. 35%"),
])
def test_a_fraction_out_of_range_names_the_range_and_the_fix(convert, text, says):
    with pytest.raises(ValueError) as raised:
        convert(text)
    assert str(raised.value) == says


def test_how_a_fraction_was_read_is_told_in_both_units():
    assert converters.read_as("35%", 0.35) == "35% read as 0.35 (35%)"
    assert converters.read_as("0.05", 0.05) == "0.05 read as 0.05 (5%)"


@pytest.mark.parametrize(("text", "value"), [
    ("0.4,0.8", (0.4, 0.8)),
    (" 0.2 , ,1", (0.2, 1.0)),  # blanks between commas are skipped
    ("0", (0.0,)),
    ("none", ()),
    (" None ", ()),
])
def test_temperatures_are_a_comma_list_or_none(text, value):
    assert converters.temperatures(text) == value


@pytest.mark.parametrize(("text", "says"), [
    ("hot", "must be temperatures separated by commas, e.g. 0.4,0.8, or none"),
    ("0.4;0.8", "must be temperatures separated by commas, e.g. 0.4,0.8, or none"),
    ("", "must be one or more temperatures of 0 or more, or none"),
    (" , ", "must be one or more temperatures of 0 or more, or none"),
    ("0.4,-1", "must be one or more temperatures of 0 or more, or none"),
    ("nan", "must be one or more temperatures of 0 or more, or none"),
])
def test_temperatures_refused_say_what_is_taken(text, says):
    with pytest.raises(ValueError) as raised:
        converters.temperatures(text)
    assert str(raised.value) == says
    # float()'s own error is not chained beside the message that says what is taken.
    assert raised.value.__cause__ is None and raised.value.__context__ is None \
        or raised.value.__suppress_context__


def test_an_id_list_drops_blanks_and_must_name_one():
    assert converters.id_list(" Python/0, ,Python/2,") == ("Python/0", "Python/2")
    with pytest.raises(ValueError, match="^names no task id$"):
        converters.id_list(" , ")


@pytest.mark.parametrize(("text", "value"), [("1/4", (1, 4)), ("4/4", (4, 4)),
                                              (" 2 / 3 ", (2, 3))])
def test_a_shard_is_k_of_n(text, value):
    assert converters.shard(text) == value


@pytest.mark.parametrize(("text", "says"), [
    ("1", "must be K/N, e.g. 1/4 (shard K of N)"),
    ("1-4", "must be K/N, e.g. 1/4 (shard K of N)"),
    ("a/4", "must be K/N, e.g. 1/4 (shard K of N)"),
    ("1/", "must be K/N, e.g. 1/4 (shard K of N)"),
    ("-1/4", "must be K/N, e.g. 1/4 (shard K of N)"),
    ("0/4", "must have 1 <= K <= N"),
    ("5/4", "must have 1 <= K <= N"),
])
def test_a_shard_refused_says_its_form(text, says):
    with pytest.raises(ValueError) as raised:
        converters.shard(text)
    assert str(raised.value) == says


def test_arguments_are_split_as_a_shell_splits_them():
    assert converters.arguments("--dtype float32  --name 'a b'") == \
        ("--dtype", "float32", "--name", "a b")
    assert converters.arguments("") == ()
    with pytest.raises(ValueError) as raised:
        converters.arguments("--name 'a b")
    assert str(raised.value) == "cannot be split into arguments (No closing quotation)"


def test_a_url_list_is_http_urls_joined_by_commas():
    assert converters.url_list(" http://a:8000/v1 , ,https://b/v1") == \
        "http://a:8000/v1,https://b/v1"
    with pytest.raises(ValueError, match="^names no URL$"):
        converters.url_list(",")
    with pytest.raises(ValueError) as raised:
        converters.url_list("http://a/v1,localhost:8000/v1")
    assert str(raised.value) == "has 'localhost:8000/v1', which is not an http(s) URL"


def test_a_choice_takes_its_choices_only_and_as_written():
    convert = converters.choice("per-device", "tensor-parallel")
    assert convert("tensor-parallel") == "tensor-parallel"
    for text in ("Per-Device", "other", ""):
        with pytest.raises(ValueError) as raised:
            convert(text)
        assert str(raised.value) == "must be one of per-device, tensor-parallel"


@pytest.mark.parametrize("text", ["repair", "tools", "my_agents:make", "agents/mine.py:make",
                                  "pkg.mod:factory"])
def test_an_agent_is_built_in_or_names_a_callable(text):
    assert converters.agent(text) == text


@pytest.mark.parametrize("text", ["", "other", "mine.py", ":make", "agents.py:", " :make"])
def test_an_agent_refused_says_the_forms_taken(text):
    with pytest.raises(ValueError) as raised:
        converters.agent(text)
    assert str(raised.value) == \
        "must be repair, tools, resample, rewrite, module:callable or path/to/file.py:callable"


def test_the_built_in_agents_are_repair_tools_resample_and_rewrite():
    assert converters.BUILT_IN_AGENTS == ("repair", "tools", "resample", "rewrite")


@pytest.mark.parametrize(("text", "value"), [
    (True, True), (False, False), ("1", True), ("True", True), (" yes ", True), ("ON", True),
    ("0", False), ("false", False), ("No", False), ("off", False), ("", False),
])
def test_a_flag_reads_the_usual_words_and_bools_as_they_are(text, value):
    assert converters.flag(text) is value


@pytest.mark.parametrize("text", ["maybe", "2", "y"])
def test_a_flag_refused_says_true_or_false(text):
    with pytest.raises(ValueError, match="^must be true or false$"):
        converters.flag(text)



PYTHON_SAYS = ("invalid literal", "could not convert", "object has no attribute")
# Free-form options (ids, arguments) take "@@ nonsense"; these are what they refuse.
NONSENSE = {"task": " , ", "devices": " , ", "engine-args": "--name 'unclosed"}


@pytest.mark.parametrize("declared", [o for o in OPTIONS if o.convert is not str],
                         ids=lambda o: o.name)
def test_every_option_refuses_nonsense_saying_what_it_takes(declared):
    # What the user sees is "--humanfix-<name> / humanfix_<name>: '<text>' <message>": the
    # message must read after the text and say what is taken, never Python's own words.
    with pytest.raises(ValueError) as raised:
        declared.convert(NONSENSE.get(declared.name, "@@ nonsense"))
    message = str(raised.value)
    assert message.split()[0] in ("must", "is", "has", "names", "cannot"), message
    assert not any(words in message for words in PYTHON_SAYS), message
