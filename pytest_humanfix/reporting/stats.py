"""Pure statistics for scoring runs: pass@k, the Wilson interval, McNemar's exact test and its
power. No numpy or scipy: these run in the controller and in `humanfix-report` on a few hundred
numbers and must give the same answer everywhere (docs/reports.md, docs/trust.md).
"""

from __future__ import annotations

import math


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal, as every view prints it."""
    return "n/a" if value is None else f"{100 * value:.1f}%"

Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k from n samples of which c passed (Chen et al. 2021).

    1 - C(n-c, k) / C(n, k), in the product form the Codex paper and BigCode's harness use,
    which never forms the (huge) binomial coefficients.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def mean_pass_at_k(counts: list[tuple[int, int]], k: int) -> float | None:
    """pass@k over tasks given (n, c) per task; None when some task has fewer than k samples."""
    if not counts or any(n < k for n, _ in counts):
        return None
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)


def wilson_interval(successes: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (successes may be fractional when the
    proportion is an average estimate over n tasks)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # Mathematically p lies inside; clamping keeps rounding at p = 0 or 1 from putting it out.
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


def mcnemar_exact(regressions: int, improvements: int, alternative: str = "drop") -> float:
    """Exact McNemar p-value on the discordant pairs.

    Under "no change" each discordant task is a regression or an improvement with probability
    1/2, so regressions ~ Binomial(regressions + improvements, 1/2). alternative="drop" is the
    one-sided test for "the new run is worse" (P[X >= regressions]); "two-sided" doubles the
    smaller tail, capped at 1.
    """
    if regressions < 0 or improvements < 0:
        raise ValueError("counts must be 0 or more")
    n = regressions + improvements
    if n == 0:
        return 1.0

    outcomes: int = 2 ** n

    def upper_tail(x: int) -> float:
        return sum(math.comb(n, i) for i in range(x, n + 1)) / outcomes

    if alternative == "drop":
        return upper_tail(regressions)
    if alternative == "two-sided":
        return min(1.0, 2 * upper_tail(max(regressions, improvements)))
    raise ValueError(f"alternative must be 'drop' or 'two-sided', not {alternative!r}")


def _critical_regressions(discordant: int, alpha: float) -> int:
    """The fewest regressions among `discordant` tasks that the one-sided exact McNemar test
    calls a drop at `alpha` (discordant + 1 when none does)."""
    outcomes = 2 ** discordant
    tail = 0
    for regressions in range(discordant, -1, -1):
        tail += math.comb(discordant, regressions)
        if tail / outcomes >= alpha:
            return regressions + 1
    return 0


def mcnemar_power(tasks: int, flip_rate: float, drop: int, alpha: float) -> float:
    """The chance that the paired gate (one-sided exact McNemar at `alpha`) fails a run in which
    `drop` of `tasks` tasks truly regressed, when each other task's outcome also flips between
    two runs with probability `flip_rate`, either way alike (the noise a repeat check measures).

    Exact: noise flips M ~ Binomial(tasks - drop, flip_rate), of which the regressions are
    Binomial(M, 1/2); the gate fails when drop + those regressions reach the critical count for
    drop + M discordant tasks.
    """
    if not 0 <= drop <= tasks or not 0 <= flip_rate <= 1:
        raise ValueError(f"power needs 0 <= drop <= tasks and 0 <= flip_rate <= 1 "
                         f"(tasks={tasks}, drop={drop}, flip_rate={flip_rate})")
    others = tasks - drop
    power = 0.0
    for flips in range(others + 1):
        weight = math.comb(others, flips) * flip_rate ** flips * (1 - flip_rate) ** (others - flips)
        if weight == 0:
            continue
        needed = max(0, _critical_regressions(drop + flips, alpha) - drop)
        power += weight * sum(math.comb(flips, r) for r in range(needed, flips + 1)) / 2 ** flips
    return min(1.0, power)


def detectable_drop(tasks: int, flip_rate: float, alpha: float,
                    power: float = 0.8) -> int | None:
    """The smallest drop, in tasks, that the paired gate catches with at least `power` at this
    flip rate; None when no drop within `tasks` is."""
    for drop in range(tasks + 1):
        if mcnemar_power(tasks, flip_rate, drop, alpha) >= power:
            return drop
    return None
