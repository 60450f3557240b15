"""Tree-sitter's parser of each brace language (tree-sitter-javascript, -java, -go, -cpp, -rust
from PyPI; the `languages` extra), imported on first use and never at plugin import: the check
before execution (agent/syntax.py) and the reading behind the flags (reading.py) parse with it;
nothing parsed runs. None where tree-sitter or the grammar is not installed
(docs/languages.md#prompts-and-programs).
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Parser

# The grammar module of each language.
GRAMMARS = {"js": "tree_sitter_javascript", "java": "tree_sitter_java", "go": "tree_sitter_go",
            "cpp": "tree_sitter_cpp", "rust": "tree_sitter_rust"}


@functools.cache
def parser(language: str) -> Parser | None:
    """The language's parser, None when tree-sitter or its grammar is not installed (or the
    language has none here: Python is read by its own `ast`)."""
    if language not in GRAMMARS:
        return None
    try:
        from tree_sitter import Language, Parser

        grammar: Any = importlib.import_module(GRAMMARS[language])
    except ImportError:
        return None
    return Parser(Language(grammar.language()))
