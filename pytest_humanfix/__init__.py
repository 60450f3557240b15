"""pytest-humanfix: HumanEvalFix code repair as pytest items (docs/index.md).

PYTEST_DONT_REWRITE: the package's asserts are invariants, not test assertions, so pytest need not
rewrite it; and in-process pytester runs (the project's own tests) find it already imported.
"""

__version__ = "0.1.0"
