"""The pure statistics behind the gates and the reports, against values worked out by hand or
taken from the literature."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from pytest_humanfix.reporting.stats import mcnemar_exact, mean_pass_at_k, pass_at_k, wilson_interval


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (1, 1, 1, 1.0),
    (1, 0, 1, 0.0),
    (5, 2, 1, 2 / 5),                 # pass@1 is c/n
    (5, 2, 2, 1 - 3 / 10),            # 1 - C(3,2)/C(5,2)
    (10, 3, 5, 1 - 21 / 252),         # 1 - C(7,5)/C(10,5)
    (10, 0, 10, 0.0),
    (4, 1, 4, 1.0),                   # n - c < k: some draw of k always holds the pass
    (3, 2, 2, 1.0),
    (3, 1, 2, 1 - 1 / 3),             # 1 - C(2,2)/C(3,2)
])
def test_pass_at_k_matches_hand_computed_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_product_form_is_exact_where_binomials_are_huge():
    n, c, k = 200, 37, 100
    exact = 1 - Fraction(comb(n - c, k), comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1)])
def test_pass_at_k_refuses_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_mean_pass_at_k_averages_tasks_and_needs_k_samples_everywhere():
    counts = [(3, 2), (3, 1)]
    assert mean_pass_at_k(counts, 1) == pytest.approx(0.5)
    assert mean_pass_at_k(counts, 2) == pytest.approx((1 + 2 / 3) / 2)
    assert mean_pass_at_k(counts, 3) == pytest.approx(1.0)
    assert mean_pass_at_k([(3, 1), (2, 1)], 3) is None


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    # Newcombe (1998), Statistics in Medicine 17:857-872, Table I, method 3 (Wilson score).
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_interval_matches_newcombe_1998(successes, n, low, high):
    got = wilson_interval(successes, n)
    assert got == pytest.approx((low, high), abs=5e-5)


def test_wilson_interval_of_nothing_is_everything():
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("regressions", "improvements", "expected"), [
    (10, 0, 1 / 1024),    # every discordant task went the bad way: 0.5**10
    (3, 2, 16 / 32),      # P[X >= 3], X ~ Bin(5, 1/2) = (10 + 5 + 1) / 32
    (5, 0, 1 / 32),
    (0, 10, 1.0),         # only improvements: no evidence of a drop at all
    (0, 0, 1.0),
])
def test_mcnemar_one_sided_drop(regressions, improvements, expected):
    assert mcnemar_exact(regressions, improvements) == pytest.approx(expected)


def test_mcnemar_significance_at_five_percent():
    assert mcnemar_exact(10, 0) < 0.05
    assert mcnemar_exact(3, 2) >= 0.05
    # One-sided: 7 vs 1 is a significant drop (p = 9/256); two-sided it would not be.
    assert mcnemar_exact(7, 1) == pytest.approx(9 / 256)
    assert mcnemar_exact(7, 1, "two-sided") == pytest.approx(18 / 256)
    assert mcnemar_exact(7, 1, "two-sided") >= 0.05


def test_mcnemar_refuses_unknown_alternative():
    with pytest.raises(ValueError):
        mcnemar_exact(1, 1, "greater")


@pytest.mark.parametrize("n", [1, 3, 7, 164])
def test_wilson_interval_holds_the_estimate_at_the_edges(n):
    low, high = wilson_interval(n, n)
    assert low <= 1.0 == high
    low, high = wilson_interval(0, n)
    assert low == 0.0 <= high
