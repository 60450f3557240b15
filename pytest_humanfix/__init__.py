"""pytest-humanfix: HumanEvalFix code repair as pytest items."""

__version__ = "0.1.0"
