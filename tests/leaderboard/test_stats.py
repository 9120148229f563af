"""envgym.leaderboard.stats: Wilson intervals against hand-computed values, pass@k / pass^k against enumeration."""

from __future__ import annotations

import itertools
import math

import pytest

from envgym.leaderboard.stats import pass_at_k, pass_hat_k, wilson_interval

# By hand, z = 1.959964, z^2 = 3.8414588; with n = 10 the denominator is 1 + z^2/10 = 1.38414588.
#   8/10:  centre (0.8 + 0.19207294)/1.38414588 = 0.71674016,
#          half   1.959964 * sqrt(0.016 + 0.00960365) / 1.38414588 = 0.22657769  ->  (0.490162, 0.943318)
#          (statsmodels' proportion_confint(8, 10, method="wilson") gives the same to 6 places)
#  10/10:  low = 1/1.38414588 = 0.722467, high = 1
#   0/10:  low = 0, high = 0.38414588/1.38414588 = 0.277533
#   1/2:   centre 0.5, half 1.959964 * sqrt(0.125 + 0.24009118) / 2.92072941 = 0.405469
HAND = [(8, 10, 0.490162, 0.943318), (10, 10, 0.722467, 1.0), (0, 10, 0.0, 0.277533),
        (1, 2, 0.094531, 0.905469)]


@pytest.mark.parametrize(("s", "n", "low", "high"), HAND)
def test_wilson_matches_hand_computed_values(s: int, n: int, low: float, high: float) -> None:
    got_low, got_high = wilson_interval(s, n)
    assert got_low == pytest.approx(low, abs=1e-6)
    assert got_high == pytest.approx(high, abs=1e-6)


def test_wilson_without_trials_is_uninformative() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 37, 200])
def test_wilson_properties(n: int) -> None:
    for s in range(n + 1):
        low, high = wilson_interval(s, n)
        assert 0.0 <= low <= s / n <= high <= 1.0
        mirror_low, mirror_high = wilson_interval(n - s, n)
        assert low == pytest.approx(1 - mirror_high) and high == pytest.approx(1 - mirror_low)
        # Four times the data at the same proportion gives a narrower interval.
        low4, high4 = wilson_interval(4 * s, 4 * n)
        assert high4 - low4 < high - low


def test_wilson_wider_at_higher_confidence() -> None:
    low95, high95 = wilson_interval(8, 10)
    low99, high99 = wilson_interval(8, 10, z=2.575829)
    assert low99 < low95 and high99 > high95


@pytest.mark.parametrize(("s", "n"), [(-1, 10), (11, 10), (0, -1)])
def test_wilson_rejects_impossible_counts(s: int, n: int) -> None:
    with pytest.raises(ValueError, match="0 <= c <= n"):
        wilson_interval(s, n)


def _enumerate(n: int, c: int, k: int) -> tuple[float, float]:
    """Over every k-subset of n attempts (the first c succeed): P(any succeeds), P(all succeed)."""
    subsets = list(itertools.combinations(range(n), k))
    any_success = sum(any(i < c for i in subset) for subset in subsets)
    all_success = sum(all(i < c for i in subset) for subset in subsets)
    return any_success / len(subsets), all_success / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_match_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            at, hat = _enumerate(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(at, abs=1e-12)
            assert pass_hat_k(n, c, k) == pytest.approx(hat, abs=1e-12)


def test_known_values() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - 21 / 45)  # C(7,2)/C(10,2)
    assert pass_hat_k(10, 3, 2) == pytest.approx(3 / 45)  # C(3,2)/C(10,2)
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_at_k(4, 0, 4) == 0.0
    assert pass_at_k(4, 1, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0


@pytest.mark.parametrize("n", [1, 3, 6, 20])
def test_estimator_properties(n: int) -> None:
    for c in range(n + 1):
        at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
        hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
        assert at[0] == pytest.approx(c / n) and hat[0] == pytest.approx(c / n)
        assert all(0.0 <= v <= 1.0 for v in at + hat)
        assert all(a <= b + 1e-12 for a, b in itertools.pairwise(at))  # more tries, more chance of one
        assert all(a + 1e-12 >= b for a, b in itertools.pairwise(hat))  # more tries, less chance of all
        assert all(h <= a + 1e-12 for h, a in zip(hat, at, strict=True))


def test_large_n_stays_finite_and_exact() -> None:
    # math.comb(2000, 1000) is far beyond float range; the ratio must still come out right.
    assert pass_hat_k(2000, 1999, 1000) == pytest.approx(0.5)
    assert pass_at_k(2000, 1, 1000) == pytest.approx(0.5)
    assert math.isfinite(pass_at_k(5000, 2500, 2500))


@pytest.mark.parametrize("fn", [pass_at_k, pass_hat_k])
@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 1, 0), (3, 4, 1), (0, 0, 1)])
def test_estimators_reject_bad_arguments(fn, n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="<="):
        fn(n, c, k)


def test_macro_interval_by_hand() -> None:
    """Two suites: (0.5 in [0.3, 0.7]) and (1.0 in [0.8, 1.0]). sigma_1 = 0.4/(2z) = 0.10204, sigma_2 =
    0.2/(2z) = 0.05102; the mean's sigma = sqrt(0.010412 + 0.002603)/2 = 0.057044; z sigma = 0.111805."""
    from envgym.leaderboard.stats import macro_interval

    mean, low, high = macro_interval([(0.5, 0.3, 0.7), (1.0, 0.8, 1.0)])
    assert (mean, low, high) == pytest.approx((0.75, 0.638195, 0.861805), abs=1e-5)
    assert macro_interval([(1.0, 0.9, 1.0)]) == pytest.approx((1.0, 0.95, 1.0))  # clipped at 1
    with pytest.raises(ValueError):
        macro_interval([])
