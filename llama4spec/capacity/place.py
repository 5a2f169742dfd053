"""Where the fitted capacity search measures next: the rate at which one more run narrows the
crossing's estimate most (a sequential c-optimal design; pure, no I/O).

The search fits ``logit attainment = b0 + b1 u`` (``u`` the log rate less the runs' mean) and its
answer is the crossing ``u* = (logit target - b0) / b1``. Its variance by the delta method is
``g' M^-1 g`` with ``g = -(1, u*) / b1`` (the crossing's gradient in ``(b0, b1)``) and ``M`` the
fit's information, ``sum n p (1 - p) (1, u)(1, u)'`` over its runs (the dispersion, one factor
for every run, does not move the choice). A run of ``n`` requests at ``u`` adds
``n p(u) (1 - p(u)) (1, u)(1, u)'``; the next rate is the candidate that leaves the least variance
(Wu, "Efficient sequential designs with binary data", JASA 1985; Neyer's D-optimal search,
Technometrics 1994, is the same idea for both parameters at once).

Why not the crossing itself. A run at the crossing narrows ``b0`` but says nothing about the slope,
and the crossing's interval is as much the slope's as the level's (Fieller's interval stays open
until the slope is shown to be non-zero). Runs bunched at one rate, as a search placing each run at
the current crossing does on a server whose attainment is noisy and flat there, leave the slope
unknown run after run: on the real tiny server its no-speculation search spent 18 of 24 runs
between 7.6 and 8.8 req/s and ended with its interval open (docs/capacity.md). The variance above
weighs both: while the slope is uncertain the next run goes wide of the crossing (where a run still
carries information, ``p (1 - p)`` not near zero, and no deeper into overload than a fitted
attainment of ``LOWEST``), and once it is known runs gather near the crossing.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.special import expit

EPS = 1e-9  # the fitted attainment's distance from 0 and 1 in a run's information
# No run goes where the fitted attainment is below this. Under the model a run deep in overload (many
# requests, attainment 0.01) still carries the slope, but there the logistic shape is an
# extrapolation (a real server's tail is a queue's, not a logit's) and the run costs the most wall
# time, its queue draining long after the run's last request. The floor sits by the lower point of
# the logistic's D-optimal pair (attainment 0.18 and 0.82; Neyer 1994), so a run still goes as low as
# a design for the slope would send it.
LOWEST = 0.2


def _weight(n: float, eta: float) -> float:
    p = min(max(float(expit(eta)), EPS), 1.0 - EPS)
    return n * p * (1.0 - p)


def crossing_variance(info: np.ndarray, b1: float, u_star: float) -> float:
    """The delta-method variance of the crossing ``u*`` given the information ``info`` (2 x 2, binomial
    units); infinite where ``info`` is singular."""
    g = np.array([-1.0 / b1, -u_star / b1])
    try:
        return float(g @ np.linalg.solve(info, g))
    except np.linalg.LinAlgError:
        return math.inf


def information(b0: float, b1: float, us: Sequence[float], ns: Sequence[float]) -> np.ndarray:
    """The binomial information of runs of ``ns`` requests at centred log rates ``us``."""
    m = np.zeros((2, 2))
    for u, n in zip(us, ns):
        w = _weight(n, b0 + b1 * u)
        m += w * np.array([[1.0, u], [u, u * u]])
    return m


def best_rate(b0: float, b1: float, center: float, target_logit: float, runs: Sequence[tuple[float, float]],
              candidates: Sequence[float]) -> tuple[float, float]:
    """(the candidate rate whose run leaves the crossing's least variance, that variance). ``runs``:
    (rate, requests) of the runs fitted; a candidate's run sends requests in proportion to its rate, as
    the runs so far did (their median requests per unit rate). Ties go to the candidate nearest the
    crossing. Candidates where the fitted attainment is below ``LOWEST`` are not taken (where every one
    is, the lowest is). ``b1`` must be negative."""
    if not candidates:
        raise ValueError("no candidate rate")
    allowed = [r for r in candidates if b0 + b1 * (math.log(r) - center) >= math.log(LOWEST / (1 - LOWEST))]
    if not allowed:
        return min(candidates), math.inf
    us = [math.log(r) - center for r, _ in runs]
    ns = [float(n) for _, n in runs]
    info = information(b0, b1, us, ns)
    per_rate = float(np.median([n / r for r, n in runs]))
    u_star = (target_logit - b0) / b1
    best: tuple[float, float, float] | None = None  # (variance, distance to the crossing, rate)
    for rate in allowed:
        u = math.log(rate) - center
        v = crossing_variance(info + information(b0, b1, [u], [per_rate * rate]), b1, u_star)
        key = (float(f"{v:.9g}"), abs(u - u_star), rate)  # equal to 9 digits: a tie
        if best is None or key < best:
            best = key
    assert best is not None
    return best[2], best[0]
