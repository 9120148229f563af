"""Statistics for the leaderboard: binomial confidence intervals, pass@k / pass^k estimators, macro averages.

Pure functions on counts, no I/O and no numpy. ``n`` is a number of graded trials, ``c`` (or
``successes``) how many of them succeeded, ``k`` a number of attempts.

- :func:`wilson_interval` — the Wilson score interval for a binomial proportion; unlike the normal
  approximation it stays inside [0, 1] and is sensible at 0/n and n/n.
- :func:`pass_at_k` — the unbiased estimator of the chance that *at least one* of ``k`` attempts drawn
  without replacement from the ``n`` succeeds (Chen et al. 2021, "Evaluating Large Language Models
  Trained on Code"): ``1 - C(n-c, k) / C(n, k)``.
- :func:`pass_hat_k` — τ-bench's pass^k, the chance that *all* ``k`` attempts succeed (Yao et al. 2024):
  ``C(c, k) / C(n, k)``. It measures consistency; pass^1 equals pass@1.

Both estimators are per task; a benchmark score is their mean over tasks.

:func:`macro_interval` gives the mean of per-suite rates with an interval combined from theirs.
"""

from __future__ import annotations

import math

Z_95 = 1.959964
"""The two-sided 95% quantile of the standard normal distribution."""


def _check_counts(n: int, c: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval ``(low, high)`` for ``successes`` out of ``n`` trials.

    ``n == 0`` carries no information and gives ``(0.0, 1.0)``. At 0/n the low bound is exactly 0 and
    at n/n the high bound exactly 1 (the formula gives them up to rounding).
    """
    _check_counts(n, successes)
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _check_k(n: int, c: int, k: int) -> None:
    _check_counts(n, c)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` attempts with ``c`` successes: ``1 - C(n-c, k) / C(n, k)``.

    Raises ``ValueError`` unless ``1 <= k <= n`` and ``0 <= c <= n``.
    """
    _check_k(n, c, k)
    # Exact integer binomials, one division: no overflow and no cancellation for large n.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """τ-bench's pass^k from ``n`` attempts with ``c`` successes: ``C(c, k) / C(n, k)``.

    Raises ``ValueError`` unless ``1 <= k <= n`` and ``0 <= c <= n``.
    """
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def macro_interval(intervals: list[tuple[float, float, float]], z: float = Z_95) -> tuple[float, float, float]:
    """The macro average of per-suite rates and its 95% interval: ``(mean, low, high)``.

    ``intervals`` holds ``(rate, low, high)`` per suite (each a Wilson interval). Suites are independent
    samples, so each suite's error is read off its Wilson interval as a normal one (sigma = half the
    interval's width / z) and the mean's sigma is ``sqrt(sum sigma_s^2) / S``; the interval is the mean
    +- z sigma, clipped to [0, 1]. Wilson widths stay positive at 0/n and n/n, so the interval does too.
    """
    if not intervals:
        raise ValueError("need at least one suite")
    count = len(intervals)
    mean = sum(rate for rate, _, _ in intervals) / count
    sigma = math.sqrt(sum(((high - low) / (2 * z)) ** 2 for _, low, high in intervals)) / count
    return mean, max(0.0, mean - z * sigma), min(1.0, mean + z * sigma)
