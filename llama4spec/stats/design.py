"""How many server starts and runs a comparison needs: Kalibera and Jones' allocation from costs,
and the precision a design is expected to reach (the words a dry run says)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from llama4spec.stats.checks import check_precision
from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.noise import CALIBRATE, Noise
from llama4spec.stats.ratio import comparison_variance
from llama4spec.stats.tdist import satterthwaite, t_quantile

MAX_RUNS_PER_START = 30  # the allocation's cap when the between-start component is 0


@dataclass(frozen=True)
class Design:
    starts: int  # per setting (or blocks)
    runs: int  # per start (or per block and side)
    why: str  # the design in one clause
    on: str = ""  # what it rests on (the noise), "" when ``why`` says it
    reached: bool = True  # False: even the most starts tried do not reach the precision asked for

    def text(self) -> str:
        """``why``, followed by what it rests on in brackets where that is apart."""
        return f"{self.why} ({self.on})" if self.on else self.why


def _kj(cost_ratio: float, low_var: float, high_var: float, cap: int) -> int:
    """Kalibera and Jones' optimal repetitions at the lower level (libkalibera ``optimalreps``):
    ceil(sqrt(cost_upper / cost_lower x T_lower^2 / T_upper^2)), at least 1, at most ``cap``."""
    if high_var <= 0:
        return cap
    reps = math.sqrt(cost_ratio * low_var / high_var)
    return cap if not reps < cap else max(1, math.ceil(reps))  # an infinite or NaN ratio: the cap


def runs_per_start(noise: Noise, start_s: float, run_s: float, cap: int = MAX_RUNS_PER_START) -> Design:
    """Runs per server start that buy the most precision per second: more runs while a start costs
    much against a run and the within-start part dominates, fewer where the between part does."""
    r = _kj(start_s / run_s, noise.within.var, noise.between.var, cap)
    why = (f"{r} runs a start: a start costs {start_s:.0f} s, a run {run_s:.0f} s; between-start sd "
           f"{noise.between.sd:.3f}, within {noise.within.sd:.3f}")
    if noise.between.var <= 0:
        why += f" (no between-start spread measured: runs alone shrink the noise, capped at {cap})"
    return Design(1, max(r, 2), why)


def runs_per_block(noise: Noise, pair_start_s: float, pair_run_s: float, cap: int = MAX_RUNS_PER_START) -> Design:
    """Back-to-back blocks: K* = ceil(sqrt((c_start_pair / c_run_pair) x paired / (2 between)))."""
    if noise.paired is None:
        raise ValueError("runs per block need the paired within-start component")
    k = _kj(pair_start_s / pair_run_s, noise.paired.var, 2 * noise.between.var, cap)
    return Design(1, max(k, 2), f"{max(k, 2)} runs a block: a start pair costs {pair_start_s:.0f} s, a run pair "
                                f"{pair_run_s:.0f} s; between-start sd {noise.between.sd:.3f}, paired within "
                                f"{noise.paired.sd:.3f}")


def starts_for(noise: Noise, precision: float, runs: int, confidence: float = CONFIDENCE, cap: int = 100) -> Design:
    """The starts per setting (each of ``runs`` runs) at which a comparison of two settings would
    reach a relative half-width ``precision`` (log(1 + precision)), the components as estimated:
    the smallest m with t(2(m - 1)) x sqrt(2 (between + within / runs) / m) <= log(1 + precision)."""
    check_precision(precision)
    target = math.log1p(precision)
    per = 2 * (noise.between.var + noise.within.var / runs)
    for m in range(2, cap + 1):
        if t_quantile(2 * (m - 1), 0.5 + confidence / 2) * math.sqrt(per / m) <= target:
            return Design(m, runs, f"{m} starts of {runs} runs a setting reach +-{100 * precision:g}% at "
                                   f"{100 * confidence:g}%", noise.text())
    return Design(cap, runs, f"even {cap} starts of {runs} runs do not reach +-{100 * precision:g}%", noise.text(),
                  reached=False)


def half_width(noise: Noise, runs: int, starts: int = 1, confidence: float = CONFIDENCE) -> float:
    """The expected relative half-width of a speedup between two settings, each measured from
    ``starts`` server starts of ``runs`` runs (the components as given, Satterthwaite's df)."""
    var, df = comparison_variance(noise, runs * starts, runs * starts, 1.0 / starts, 1.0 / starts)
    return math.expm1(t_quantile(df, 0.5 + confidence / 2) * math.sqrt(var))


def design_lines(noise: Noise, costs: tuple[float, float] | None, runs: tuple[int, int],
                 precision: float | None = None, confidence: float = CONFIDENCE,
                 max_repeats: int | None = None, starts: int | None = None) -> list[str]:
    """What a sweep on ``noise`` is expected to reach: with ``costs`` (seconds a server start, a
    run: a profile's), the runs a start that buy the most precision per second; the half-width of
    a speedup at one start a point with the sweep's fewest and most runs (``runs``); and the starts
    a comparison within ``precision`` needs (+-5% where none is asked for).

    With ``precision`` asked for (a sweep's ``precision`` key), also what those starts cost a
    setting where ``costs`` are known, and whether ``max_repeats`` (a ``repeats: auto`` rule's, the
    most runs a point gets over all its starts) caps a point below the runs they make, and whether
    ``starts`` (the server starts the sweep gives each setting) are fewer than the design's."""
    lo, hi = runs
    lines = []
    per_start = hi
    if costs is not None:
        best = runs_per_start(noise, *costs)
        lines.append(f"design: {best.why} (Kalibera and Jones' rule)")
        per_start = best.runs
    m = starts if isinstance(starts, int) and starts > 1 else 1  # the sweep's starts: N
    spans = ", ".join(f"+-{100 * half_width(noise, n, m, confidence):.1f}% at {n} runs" + ("" if m == 1 else " a start")
                      for n in dict.fromkeys((lo, hi)))
    each = "one server start each" if m == 1 else f"{m} server starts each"
    need = starts_for(noise, PRECISION if precision is None else precision, per_start, confidence)
    lines.append(f"expected precision: a speedup of two points, {each}: {spans} "
                 f"({100 * confidence:g}% interval); {need.why}")
    return lines if precision is None else lines + _asked(need, costs, precision, max_repeats, starts)


PRECISION = 0.05  # the relative half-width a design is stated for where none is asked for


def _block_parts(noise: Noise) -> tuple[float, float, str]:
    """A block's paired within-start variance and df: the noise's paired component, else twice the
    within-start variance (a pair's log ratio of two independent runs), and the words for which."""
    if noise.paired is not None:
        return noise.paired.var, noise.paired.df, "paired within-start"
    return 2 * noise.within.var, noise.within.df, "paired within-start taken as twice the within-start variance"


def block_half_width(noise: Noise, blocks: int, runs: int, confidence: float = CONFIDENCE) -> float:
    """The expected relative half-width of a speedup from ``blocks`` back-to-back blocks of ``runs``
    pairs each: a block mean's variance ``2 between + paired / runs``; t on blocks - 1 df from 3
    blocks on (the blocks' own spread), on the components' Satterthwaite df below."""
    paired, paired_df, _ = _block_parts(noise)
    b_term, p_term = 2 * noise.between.var / blocks, paired / (runs * blocks)
    df = blocks - 1 if blocks >= 3 else satterthwaite([(b_term, noise.between.df), (p_term, paired_df)])
    return math.expm1(t_quantile(df, 0.5 + confidence / 2) * math.sqrt(b_term + p_term))


def block_lines(noise: Noise, blocks: int, runs: int, confidence: float = CONFIDENCE,
                precision: float | None = None, cap: int = 100) -> list[str]:
    """What back-to-back blocks on ``noise`` are expected to reach (the dry run): the half-width at
    ``blocks`` blocks of ``runs`` pairs, and the blocks a speedup within ``precision`` needs (+-5%
    where none is asked for)."""
    _, _, which = _block_parts(noise)
    wanted = PRECISION if precision is None else precision
    target = math.log1p(wanted)
    need = next((j for j in range(3, cap + 1) if math.log1p(block_half_width(noise, j, runs, confidence)) <= target),
                None)
    reach = (f"{need} blocks of {runs} pairs reach +-{100 * wanted:g}%" if need is not None else
             f"even {cap} blocks of {runs} pairs do not reach +-{100 * wanted:g}%")
    return [f"expected precision: a speedup against no speculation from {blocks} blocks of {runs} pairs: "
            f"+-{100 * block_half_width(noise, blocks, runs, confidence):.1f}% ({100 * confidence:g}% interval; a block "
            f"mean's variance 2 x between-start + {which} / {runs}); {reach}"]


def _asked(need: Design, costs: tuple[float, float] | None, precision: float, max_repeats: int | None,
           starts: int | None) -> list[str]:
    """The design for a precision asked for: its starts, runs and time a setting; the caps on them."""
    wanted = f"+-{100 * precision:g}%"
    if not need.reached:
        return [f"precision: {wanted} is out of reach on this noise (more than {need.starts} server starts of "
                f"{need.runs} runs a setting); ask for a coarser precision"]
    total = need.starts * need.runs
    line = f"precision: {wanted} needs {need.starts} server starts of {need.runs} runs a setting ({total} runs)"
    if costs is not None:
        start_s, run_s = costs
        line += (f", {_duration(need.starts * (start_s + need.runs * run_s))} a setting at {start_s:.0f} s a start "
                 f"and {run_s:.0f} s a run")
    else:
        line += f"; its time is not known without a profile's costs ({CALIBRATE} and pass it as noise: PATH)"
    lines = [line]
    if starts is not None and starts < need.starts:
        times = "once" if starts == 1 else f"{starts} times"
        lines.append(f"the sweep starts each setting's server {times}, fewer than the {need.starts} starts of this "
                     f"design (starts: N sets it)")
    if max_repeats is not None and max_repeats < total:
        lines.append(f"max_repeats ({max_repeats}) caps a point at {max_repeats} runs over all its starts, below the "
                     f"{total} of this design: the sweep stops short of {wanted} (raise max_repeats, or ask for a "
                     f"coarser precision)")
    return lines


def _duration(seconds: float) -> str:
    """``45 s``, ``12.5 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
