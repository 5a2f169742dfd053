"""Which larger lookahead cannot win (pure): a sweep need not start its server.

From the largest lookahead k of a draft measured so far, at each concurrency, the most lookahead
k' > k can reach is ``lookahead_bound.speedup_bound`` (vLLM's per-position acceptance rate cannot rise
with position, and drafting more tokens never makes a step cheaper), with one-sided bounds at
``confidence``: the upper bound of k's speedup over no speculation (Welch, with the between-start
term of the sweep's noise estimate), the upper Clopper-Pearson bound of the acceptance rate at k's last position, and the lower
bound of its acceptance length (the smallest run's). When that bound lies below the leader's lower
bound at every measured concurrency, k' cannot win there (``lookahead_bound.cannot_win``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from llama4spec.stats.lookahead_bound import cannot_win, speedup_bound
from llama4spec.stats.ratio import welch_ratio
from llama4spec.stats.noise import Noise


@dataclass(frozen=True)
class Measured:
    """One measured point, as far as the bound needs it."""

    client: tuple[str, ...]  # its client-side settings (concurrency, ...): points compare within one
    draft: str | None  # None: no speculation
    lookahead: int | None
    throughputs: Sequence[float]
    drafts: int = 0  # summed over its counted runs (vLLM's counters)
    accepted_at: Sequence[int] = ()  # accepted tokens per position, summed
    acceptance_lengths: Sequence[float] = ()  # per counted run


def _upper_rate(accepted: int, drafts: int, confidence: float) -> float:
    """One-sided upper Clopper-Pearson bound of a proportion."""
    from scipy.stats import beta

    if drafts <= 0:
        return 1.0
    return 1.0 if accepted >= drafts else float(beta.ppf(confidence, accepted + 1, drafts - accepted))


def _speedup(num: Sequence[float], den: Sequence[float], confidence: float, noise: Noise | None):
    """Two-sided at 2 * confidence - 1: its ends are one-sided bounds at ``confidence``."""
    return welch_ratio(num, den, 2 * confidence - 1, noise)


def why_not(draft: str, k_next: int, points: Sequence[Measured], confidence: float = 0.95,
            noise: Noise | None = None) -> str | None:
    """Why lookahead ``k_next`` of ``draft`` cannot win (the sentence the report gives), or None when
    it may: no smaller lookahead of the draft measured with its counters, no baseline, or a bound
    that reaches the leader's lower bound at some concurrency. ``noise``: the sweep's estimate, whose
    between-start term each speedup's bounds carry."""
    bounds: dict[tuple[str, ...], float] = {}
    lows: dict[tuple[str, ...], float] = {}
    leaders: dict[tuple[str, ...], str] = {}
    for client in dict.fromkeys(p.client for p in points):
        here = [p for p in points if p.client == client and len(p.throughputs) >= 2]
        base = next((p for p in here if p.draft is None), None)
        if base is None:
            continue
        mine = [p for p in here if p.draft == draft and p.lookahead is not None and p.lookahead < k_next]
        speculative = [p for p in here if p.draft is not None]
        if not speculative:
            continue
        low, best = max(((_speedup(p.throughputs, base.throughputs, confidence, noise).low, p) for p in speculative),
                        key=lambda pair: pair[0])
        lows[client] = low
        leaders[client] = f"k={best.lookahead}" if best.draft == draft else f"{best.draft} k={best.lookahead}"
        if not mine:
            continue
        top = max(mine, key=lambda p: p.lookahead)
        k = top.lookahead
        if top.drafts <= 0 or len(top.accepted_at) < k or not top.acceptance_lengths:
            continue
        s_high = _speedup(top.throughputs, base.throughputs, confidence, noise).high
        a_high = _upper_rate(top.accepted_at[k - 1], top.drafts, confidence)
        e_low = max(1.0, min(top.acceptance_lengths))
        bounds[client] = speedup_bound(k, k_next, s_high, a_high, e_low)
    if not cannot_win(bounds, lows):
        return None
    if len(lows) == 1:
        (c,) = lows
        return (f"k={k_next} not measured: its bound {bounds[c]:.2f}x is below {leaders[c]}'s lower bound "
                f"{lows[c]:.2f}x at every concurrency")
    at = "; ".join(f"{' '.join(c)}: {bounds[c]:.2f}x below {leaders[c]}'s {lows[c]:.2f}x" for c in lows)
    return f"k={k_next} not measured: its bound is below the leader's lower bound at every concurrency ({at})"
