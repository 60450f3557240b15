"""Library imports without pytest's assertion rewriting (session/imports.py): a module of a
package marked for rewriting is imported as it is inside the block, and rewritten after it."""

from __future__ import annotations

import sys

import pytest

from pytest_humanfix.session.imports import REWRITER, unrewritten


def loader_of(name: str) -> str:
    return type(sys.modules[name].__loader__).__name__


def test_a_marked_package_is_imported_unrewritten_in_the_block_only(tmp_path, monkeypatch):
    for name in ("plain_inside", "rewritten_after"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("def check(x):\n    assert x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pytest.register_assert_rewrite("plain_inside", "rewritten_after")
    before = list(sys.meta_path)
    assert any(type(finder).__name__ == REWRITER for finder in before)
    with unrewritten():
        assert not any(type(finder).__name__ == REWRITER for finder in sys.meta_path)
        import plain_inside  # noqa: F401
    assert sys.meta_path == before
    import rewritten_after  # noqa: F401
    assert loader_of("plain_inside") != REWRITER and loader_of("rewritten_after") == REWRITER
    for name in ("plain_inside", "rewritten_after"):
        monkeypatch.delitem(sys.modules, name)
