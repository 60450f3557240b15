"""EvalPlus's time limits: each input under its own, from the reference's time on it, and the
whole program under a backstop (docs/trust.md#humanevalfix-humanfix-tests-plus)."""

from __future__ import annotations

from collections.abc import Sequence

# EvalPlus's defaults (evalplus/config.py: DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR;
# evalplus/eval/__init__.py, untrusted_check: EVALPLUS_TIMEOUT_PER_TASK); how each is used:
# docs/trust.md#humanevalfix-humanfix-tests-plus.
MIN_TIME_LIMIT = 4.0
GT_TIME_LIMIT_FACTOR = 4.0
TIMEOUT_PER_TASK = 60.0


def input_limits(reference_inputs: Sequence[float]) -> list[float]:
    """Each input's limit in CPU seconds, as EvalPlus sets it from its reference's time."""
    return [round(max(MIN_TIME_LIMIT, GT_TIME_LIMIT_FACTOR * t), 3) for t in reference_inputs]


def program_limit(limits: Sequence[float]) -> float:
    """EvalPlus's wall-clock limit of the whole check, a backstop behind the inputs' own."""
    return min(TIMEOUT_PER_TASK, sum(limits)) + 1.0
