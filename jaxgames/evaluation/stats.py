"""Statistics of the evaluations: the one Wilson score interval of a win (or success) rate, and the sign test of paired games."""

from __future__ import annotations

import math
import numbers

from scipy.stats import binomtest


def wilson_interval(successes, trials, *, confidence_level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``successes / trials`` (Wilson 1927, JASA 22:209).

    scipy's ``binomtest(successes, trials).proportion_ci(method="wilson")``,
    widened where float rounding would leave the point estimate outside.

    Args:
        successes: a whole count in ``[0, trials]`` (int, numpy integer, or a
            float with no fractional part). A score that counts draws as 1/2
            is no binomial count: give the wins (and report the draws apart).
        trials: a whole count ``>= 0``.
        confidence_level: the interval's coverage, in ``(0, 1)``.

    Returns:
        ``(low, high)`` floats in ``[0, 1]``; ``(nan, nan)`` for no trials.

    Raises:
        ValueError: a fractional or negative count, ``successes > trials``, or
            a confidence level outside ``(0, 1)``.
    """
    k, n = _count("successes", successes), _count("trials", trials)
    if k > n:
        raise ValueError(f"successes must be at most trials; got {successes!r} of {trials!r}")
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"confidence_level must be in (0, 1); got {confidence_level!r}")
    if n == 0:
        return float("nan"), float("nan")
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence_level, method="wilson")
    p = k / n
    return max(0.0, min(p, float(ci.low))), min(1.0, max(p, float(ci.high)))


def sign_test(only_a, only_b) -> float:
    """Two-sided exact sign test of paired games (McNemar's exact test): the games only A won against those only B won.

    scipy's ``binomtest(only_a, only_a + only_b).pvalue``: under no difference
    each such game is A's with probability 1/2.

    Args:
        only_a, only_b: whole counts ``>= 0`` of the games one side alone won.

    Returns:
        The p-value in ``[0, 1]``; 1.0 when no game was won by one side alone.

    Raises:
        ValueError: a fractional or negative count.
    """
    a, b = _count("only_a", only_a), _count("only_b", only_b)
    return float(binomtest(a, a + b).pvalue) if a + b else 1.0


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or value != int(value) or value < 0:
        raise ValueError(f"{name} must be a whole count >= 0; got {value!r}")
    return int(value)
