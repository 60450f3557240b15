"""The six languages of HumanEvalPack, by the names BigCode gives them (`--humanfix-language`):
python, js, java, go, cpp, rust. Each module holds one; `base` says what each one knows
(docs/languages.md)."""

from __future__ import annotations

from ..dataset import id_language
from .base import Language
from .cpp import Cpp
from .go import Go
from .java import Java
from .javascript import JavaScript
from .python import Python
from .rust import Rust

LANGUAGES: dict[str, Language] = {language.name: language for language in (
    Python(), JavaScript(), Java(), Go(), Cpp(), Rust())}
NAMES = tuple(LANGUAGES)


def language(name: str) -> Language:
    return LANGUAGES[name]


def of_task_id(task_id: str) -> Language | None:
    """The language a task id names (`Rust/3`: rust), None for an id of no known prefix."""
    name = id_language(task_id)
    return None if name is None else LANGUAGES[name]


def parse_languages(text: str) -> tuple[str, ...]:
    """`--humanfix-language`: one name, a comma list, or all (ValueError names the choices)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if names == ["all"]:
        return NAMES
    unknown = [name for name in names if name not in LANGUAGES]
    if unknown or not names:
        raise ValueError(f"must be all or one or more of {', '.join(NAMES)} "
                         f"(comma-separated), not {', '.join(unknown) or 'nothing'}")
    return tuple(dict.fromkeys(names))
