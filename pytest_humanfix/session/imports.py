"""A process's one-off imports of libraries (the model's client, LangGraph) without pytest's
assertion rewriting. pytest rewrites every module of each distribution that ships a pytest
plugin (langsmith, which langgraph imports; anyio, which httpx imports; this plugin's own), and
where compiled files are not written (PYTHONDONTWRITEBYTECODE, a read-only site-packages) it
does so again in every process, at several times the import's own cost (docs/benchmarks.md,
"Workers ready at once"). Their asserts are not the run's tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

REWRITER = "AssertionRewritingHook"  # pytest's import hook (_pytest.assertion.rewrite)


@contextmanager
def unrewritten() -> Iterator[None]:
    """Imports made in the block skip pytest's rewriting; its hook is back in its place after."""
    taken = [(at, finder) for at, finder in enumerate(sys.meta_path)
             if type(finder).__name__ == REWRITER]
    for _, finder in reversed(taken):
        sys.meta_path.remove(finder)
    try:
        yield
    finally:
        for at, finder in taken:
            sys.meta_path.insert(at, finder)
