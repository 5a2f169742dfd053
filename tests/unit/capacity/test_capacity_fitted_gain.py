"""The gain of two fitted capacities: the ratio of the crossings, its interval from both fits' log
standard errors and the between-start term, and when that term is most of the width."""

from __future__ import annotations

import math

import pytest

from llama4spec.capacity import fit as cf

from llama4spec.capacity import curve as curve
from llama4spec.capacity.gain import Between, fitted_gain


def _answer(rate: float, half: float, df: int = 20, shape_fits: bool = True) -> cf.Answer:
    """A fitted capacity at ``rate`` whose interval is ``rate`` x exp(+-half)."""
    fit = curve.Fit(0.0, -5.0, math.log(rate), (0.01, 0.0, 0.01), 1.0, df, 1.0)
    return cf.Answer(rate, rate * math.exp(-half), rate * math.exp(half), None, fit, shape_fits, "", None, "", None)


def test_with_no_between_start_term_the_two_fits_widths_add_in_quadrature() -> None:
    from scipy import stats

    t, z = float(stats.t.ppf(0.975, 20)), float(stats.norm.ppf(0.975))
    g = fitted_gain(_answer(16.0, 0.1), _answer(10.0, 0.1), Between(0.0, "none"))
    assert g.ratio == pytest.approx(1.6) and g.starts_share == 0.0
    half = z * math.sqrt(2) * 0.1 / t
    assert g.low == pytest.approx(1.6 * math.exp(-half)) and g.high == pytest.approx(1.6 * math.exp(half))


def test_the_between_start_term_widens_the_gain_and_is_said_when_it_dominates() -> None:
    narrow = fitted_gain(_answer(16.0, 0.05), _answer(10.0, 0.05), Between(0.0, "none"))
    wide = fitted_gain(_answer(16.0, 0.05), _answer(10.0, 0.05), Between(0.13, "test"))
    assert wide.low < narrow.low < narrow.ratio == wide.ratio < narrow.high < wide.high
    assert wide.starts_share > 0.5 > fitted_gain(_answer(16.0, 0.5), _answer(10.0, 0.5), Between(0.05, "t")).starts_share


def test_an_open_interval_or_a_shape_that_does_not_fit_leaves_the_gain_open() -> None:
    open_one = cf.Answer(16.0, None, 20.0, None, None, True, "", None, "", None)
    g = fitted_gain(open_one, _answer(10.0, 0.1), Between(0.1, "t"))
    assert g.ratio == pytest.approx(1.6) and g.low == 0.0 and g.high is None
    bad = fitted_gain(_answer(16.0, 0.1, shape_fits=False), _answer(10.0, 0.1), Between(0.1, "t"))
    assert bad.ratio is None and bad.low == 0.0 and bad.high is None
