"""The one Wilson interval and the sign test (`jaxgames.evaluation.stats`) against values worked by hand."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from jaxgames.evaluation.stats import sign_test, wilson_interval


def _wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927): (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), z the 97.5% normal quantile."""
    z = NormalDist().inv_cdf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_eight_of_ten_matches_the_formula_and_the_textbook_value():
    low, high = wilson_interval(8, 10)
    # 8/10: z^2 = 3.8415, centre = (0.8 + 0.19207) / 1.38415 = 0.71674,
    # half = 1.96 sqrt(0.016 + 0.0096037) / 1.38415 = 0.22658 -> [0.4902, 0.9433]
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert np.allclose((low, high), _wilson_by_hand(8, 10), rtol=0, atol=1e-12)


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), (1, 3), (37, 100), (512, 1000)])
def test_matches_the_formula_and_contains_the_rate(k, n):
    low, high = wilson_interval(k, n)
    want_low, want_high = _wilson_by_hand(k, n)
    assert math.isclose(low, max(want_low, 0.0), abs_tol=1e-12) and math.isclose(high, min(want_high, 1.0), abs_tol=1e-12)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_whole_counts_of_any_numeric_type_and_no_trials():
    assert wilson_interval(np.int64(3), np.int32(7)) == wilson_interval(3.0, 7)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


@pytest.mark.parametrize("k,n,match", [(2.5, 10, "successes must be a whole count"), (-1, 10, "successes"),
                                      (11, 10, "at most trials"), (1, -2, "trials"), (True, 2, "successes")])
def test_refuses_what_is_not_a_binomial_count(k, n, match):
    with pytest.raises(ValueError, match=match):
        wilson_interval(k, n)


def test_sign_test_by_hand():
    # Two-sided, each discordant game a fair coin: 5 of 5 one way has p = 2 / 2^5; 3 of 4 has
    # p = 2 (C(4,3) + C(4,4)) / 2^4 = 10/16; 4 against 2 of 6: 2 (C(6,4) + C(6,5) + C(6,6)) / 64 = 44/64.
    assert math.isclose(sign_test(5, 0), 2 / 32) and math.isclose(sign_test(0, 5), 2 / 32)
    assert math.isclose(sign_test(3, 1), 10 / 16) and math.isclose(sign_test(4, 2), 44 / 64)
    assert sign_test(0, 0) == 1.0 and sign_test(2, 2) == 1.0
    with pytest.raises(ValueError, match="only_b must be a whole count"):
        sign_test(1, -1)
