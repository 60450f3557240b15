"""The program an execution runs, assembled as the BigCode harness assembles it: its imports, the
candidate, then the task's test (docs/sandbox.md)."""

from __future__ import annotations

from .inside import source

# The imports the BigCode evaluation harness puts before every Python candidate (IMPORT_HELPER).
PRELUDE = source("prelude.py").rstrip("\n")


def build_program(code: str, test: str, test_setup: str = "") -> str:
    """The program the BigCode harness runs: prelude, candidate, then the task's test."""
    candidate = (PRELUDE + "\n" + code).strip()
    return candidate + "\n" + (test_setup + "\n" if test_setup else "") + test + "\n"

