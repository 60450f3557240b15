"""The converters of option values: each takes the text the user wrote (command line, ini or
environment) and returns the typed value, or raises ValueError with what the option takes; the
caller puts the option's name in front (`Settings.from_config`, docs/options.md)."""

from __future__ import annotations

import shlex
from collections.abc import Callable

# The agents of agent/routing.py; any other --humanfix-agent names a brought one (agent/loader.py).
BUILT_IN_AGENTS = ("repair", "tools", "resample", "rewrite")


def _number(text: str, kind: type[int] | type[float], takes: str) -> float:
    """`text` as an int or a float, or ValueError saying what the option takes (Python's own
    "invalid literal" names neither the option nor the form)."""
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"must be {takes}") from None


def integer(text: str) -> int:
    return int(_number(text, int, "a whole number, e.g. 0"))


def positive_int(text: str) -> int:
    value = int(_number(text, int, "a whole number of 1 or more"))
    if value < 1:
        raise ValueError("must be 1 or more")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(text, int, "a whole number of 0 or more"))
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a number more than 0, e.g. 2.5")
    if not value > 0:
        raise ValueError("must be more than 0")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text, float, "a number of 0 or more, e.g. 0.5")
    if not value >= 0:
        raise ValueError("must be 0 or more")
    return value


def _fraction(text: str, low_open: bool) -> float:
    """A fraction written as one (0.35) or as a percentage (35%); a bare number above 1 is
    refused, as the user most likely meant a percentage and a gate read as 35 would never
    hold."""
    written = text.strip()
    percent = written.endswith("%")
    form = "a fraction, e.g. 0.35, or a percentage, e.g. 35%"
    value = _number(written.removesuffix("%").strip(), float, form)
    if percent:
        value /= 100
    elif value > 1:
        raise ValueError(f"is not a fraction: write {value / 100:g} or {written}%")
    if not ((0 < value < 1) if low_open else (0 <= value <= 1)):
        bounds = "more than 0 and less than 1 (0% < A < 100%)" if low_open else \
            "from 0 to 1 (0% to 100%)"
        raise ValueError(f"must be a fraction {bounds}")
    return value


def fraction(text: str) -> float:
    """A fraction from 0 to 1, e.g. a pass@1 floor: 0.35 or 35%."""
    return _fraction(text, low_open=False)


def level(text: str) -> float:
    """A significance level, strictly between 0 and 1: 0.05 or 5%."""
    return _fraction(text, low_open=True)


FRACTIONS = (fraction, level)


def read_as(text: str, value: float) -> str:
    """How a fraction option's text was read, for the run's header line."""
    return f"{text.strip()} read as {value:g} ({100 * value:g}%)"


def temperatures(text: str) -> tuple[float, ...]:
    if text.strip().lower() == "none":
        return ()
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError("must be temperatures separated by commas, e.g. 0.4,0.8, "
                         "or none") from None
    if not values or any(not value >= 0 for value in values):
        raise ValueError("must be one or more temperatures of 0 or more, or none")
    return values


def id_list(text: str) -> tuple[str, ...]:
    ids = tuple(part.strip() for part in text.split(",") if part.strip())
    if not ids:
        raise ValueError("names no task id")
    return ids


def shard(text: str) -> tuple[int, int]:
    index, slash, count = text.partition("/")
    if not slash or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError("must be K/N, e.g. 1/4 (shard K of N)")
    parsed = int(index), int(count)
    if not 1 <= parsed[0] <= parsed[1]:
        raise ValueError("must have 1 <= K <= N")
    return parsed


def arguments(text: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # an unclosed quote
        raise ValueError(f"cannot be split into arguments ({exc})") from None


def url_list(text: str) -> str:
    urls = [part.strip() for part in text.split(",") if part.strip()]
    if not urls:
        raise ValueError("names no URL")
    bad = [url for url in urls if not url.startswith(("http://", "https://"))]
    if bad:
        raise ValueError(f"has {bad[0]!r}, which is not an http(s) URL")
    return ",".join(urls)


def choice(*choices: str) -> Callable[[str], str]:
    def convert(text: str) -> str:
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return text

    return convert


def agent(text: str) -> str:
    target, colon, name = text.rpartition(":")
    if text in BUILT_IN_AGENTS or (colon and target.strip() and name.strip()):
        return text
    raise ValueError("must be repair, tools, resample, rewrite, module:callable or "
                     "path/to/file.py:callable")


def flag(text: str | bool) -> bool:
    if isinstance(text, bool):  # an ini key declared bool, or a flag given on the command line
        return text
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be true or false")
