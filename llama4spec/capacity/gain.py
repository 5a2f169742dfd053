"""Request capacity across server settings: each setting's gain over no speculation, and the
sentences that say it (pure).

The gain is the ratio of request capacities, L_k / L_0 (each L the largest rate a search showed to
hold). Its interval takes the extremes of both capacity intervals, [L_k / U_0, U_k / L_0]: it
contains the true ratio whenever both capacity intervals contain their capacities, so it misses
with probability at most the sum of their error bounds (conservative; no distribution assumed
between the bracketing rates).

From fitted searches (``fitted_gain``) the gain is the ratio of the fitted crossings, its interval
on the log scale: each capacity's standard error from its Fieller interval (its log width over
2 t), plus a between-start term for each server (``Between``: a server measured from one start
carries that start's offset, which no number of runs at that start averages away), so
``var log gain = se_k^2 + se_0^2 + 2 sd_between^2``, and the interval is the normal one at the
searches' confidence. Where the between-start term is most of that variance, another start of each
server (a second search) narrows the gain more than more runs would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from llama4spec.capacity.fit import Answer
from llama4spec.capacity.answer import Capacity
from llama4spec.capacity.probing import NAMES

STARTS_DOMINATE = 0.5  # the share of the log gain's variance from starts above which the report says so


@dataclass(frozen=True)
class Gain:
    ratio: float | None  # L_k / L_0 (None: either held at no rate probed)
    low: float  # L_k / U_0 (0 when the setting held nowhere or the baseline never failed)
    high: float | None  # U_k / L_0 (None: no upper bound: the setting never failed or the baseline held nowhere)
    starts_share: float | None = None  # fitted: the share of the log gain's variance that the starts make


@dataclass(frozen=True)
class Between:
    """The between-start noise a fitted gain carries: a log standard deviation and where it came from."""

    sd: float
    source: str


def _log_se(a: Answer) -> float | None:
    """A fitted capacity's standard error on the log scale, from its Fieller interval."""
    from scipy import stats

    if a.estimate is None or a.low is None or a.high is None or a.fit is None or not a.shape_fits:
        return None
    return (math.log(a.high) - math.log(a.low)) / (2 * float(stats.t.ppf(0.5 + a.confidence / 2, max(1, a.fit.df))))


def fitted_gain(setting: Answer, baseline: Answer, between: Between) -> Gain:
    """``setting``'s fitted capacity over ``baseline``'s, with the interval of the module docstring;
    open (0, None) where either capacity's interval is."""
    from scipy import stats

    ok = setting.shape_fits and baseline.shape_fits
    ck, c0 = (setting.estimate, baseline.estimate) if ok else (None, None)
    ratio = ck / c0 if ck is not None and c0 is not None else None
    sk, s0 = _log_se(setting), _log_se(baseline)
    if ratio is None or sk is None or s0 is None:
        return Gain(ratio, 0.0, None)
    starts = 2 * between.sd ** 2
    var = sk * sk + s0 * s0 + starts
    half = float(stats.norm.ppf(0.5 + setting.confidence / 2)) * math.sqrt(var)
    return Gain(ratio, ratio * math.exp(-half), ratio * math.exp(half), starts / var if var > 0 else 0.0)


def gain(setting: Capacity, baseline: Capacity) -> Gain:
    """``setting``'s request capacity over ``baseline``'s, with the conservative interval."""
    lk, uk, l0, u0 = setting.rate, setting.high, baseline.rate, baseline.high
    ratio = lk / l0 if lk is not None and l0 is not None else None
    low = lk / u0 if lk is not None and u0 is not None else 0.0
    high = uk / l0 if uk is not None and l0 is not None else None
    return Gain(ratio, low, high)


def _interval(g: Gain) -> str:
    high = f"{g.high:.2f}" if g.high is not None else "no upper bound"
    return f"[{g.low:.2f}, {high}]"


def _under(slo: str) -> str:
    """An SLO option's name as ``slo=NAME``; anything else (the thresholds in words) as given."""
    return f"slo={slo}" if slo.isidentifier() else slo


def gain_clause(name: str, g: Gain, baseline: str, slo: str) -> str:
    """``EAGLE k=3 carries 1.62x [1.41, 1.80] the requests of no speculation under slo=interactive``
    (``slo``: an SLO option's name, or the SLO in words)."""
    if g.ratio is None:
        return f"{name} carries an unknown multiple {_interval(g)} of the requests of {baseline} under {_under(slo)}"
    return f"{name} carries {g.ratio:.2f}x {_interval(g)} the requests of {baseline} under {_under(slo)}"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def binding_clauses(bindings: Mapping[str, str | None]) -> list[str]:
    """``TPOT binds for no speculation and k=1``, one clause per binding metric, in its first
    setting's order (``bindings``: setting -> the metric that binds)."""
    groups: dict[str, list[str]] = {}
    for name, binding in bindings.items():
        if binding is not None:
            groups.setdefault(binding, []).append(name)
    return [f"{NAMES[m]} binds for {_names(names)}" for m, names in groups.items()]


def headline(gains: Mapping[str, Gain], bindings: Mapping[str, str | None], baseline: str, slo: str) -> str | None:
    """The answer in one sentence: the setting with the largest gain (``gains``: setting -> its gain
    over ``baseline``), then the constraints that bind elsewhere (``bindings``: every setting's), e.g.
    ``EAGLE k=3 carries 1.62x [1.41, 1.80] the requests of no speculation under slo=interactive; TTFT
    binds for k=5``. None without a setting beside the baseline."""
    if not gains:
        return None
    best = max(gains, key=lambda n: (gains[n].ratio is not None, gains[n].ratio or 0.0, gains[n].low))
    others = {n: b for n, b in bindings.items() if b != bindings.get(best)}
    clauses = binding_clauses(others) if others else binding_clauses({best: bindings.get(best)})
    return "; ".join([gain_clause(best, gains[best], baseline, slo), *clauses])


def describe(name: str, cap: Capacity) -> str:
    """One server's request capacity in words: rate, interval, output throughput, what binds."""
    if cap.rate is None:
        text = f"{name}: the SLO held at no rate probed (below {cap.high:g} req/s)" if cap.high is not None \
            else f"{name}: no capacity measured yet"
    else:
        high = f"{cap.high:g}" if cap.high is not None else "no upper bound"
        text = f"{name}: request capacity {cap.rate:g} req/s [{cap.rate:g}, {high}]"
        if cap.output_throughput is not None:
            text += f", {cap.output_throughput:.0f} output tok/s"
    if cap.binding is not None:
        text += f"; {NAMES[cap.binding]} binds"
    if not cap.done:
        text += f" (so far; {cap.stopped})"
    return "; ".join([text, *cap.notes])
