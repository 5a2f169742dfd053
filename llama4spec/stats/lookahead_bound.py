"""Lookaheads that cannot win: the most a larger lookahead can reach, from a smaller one measured."""

from __future__ import annotations

from typing import Mapping


def speedup_bound(k: int, k_next: int, s_high: float, a_high: float, e_low: float) -> float:
    """The most a larger lookahead ``k_next`` can reach, from lookahead ``k`` measured:
    ``S(k') <= S_hi(k) * (1 + (k' - k) * a_hi(k-1) / E_lo(k))``.

    vLLM's per-position acceptance rate is unconditional (a position counts only when every
    earlier one was accepted), so it cannot rise with position: E(k') <= E(k) + (k' - k) a_(k-1).
    Drafting more tokens never makes a step cheaper, so S(k') / S(k) <= E(k') / E(k). The inputs
    are one-sided confidence bounds: ``s_high`` above k's speedup, ``a_high`` above the acceptance
    rate of k's last drafted position (0-based k-1), ``e_low`` below k's acceptance length (tokens
    per step, at least 1). Valid where draft tokens = k x drafts, not under a schedule.
    """
    if not 1 <= k < k_next:
        raise ValueError(f"need 1 <= k < k_next, not k={k}, k_next={k_next}")
    if not (s_high > 0 and 0 <= a_high <= 1 and e_low >= 1):
        raise ValueError(f"need s_high > 0, 0 <= a_high <= 1 and e_low >= 1, not {s_high}, {a_high}, {e_low}")
    return s_high * (1 + (k_next - k) * a_high / e_low)


def cannot_win(bounds: Mapping[int, float], leader_lows: Mapping[int, float]) -> bool:
    """True when a lookahead's bound (concurrency -> ``speedup_bound``) lies below the leader's
    lower bound at every measured concurrency (the keys of ``leader_lows``). A concurrency without
    a bound, or no measured concurrency at all, keeps the lookahead."""
    return bool(leader_lows) and all(c in bounds and bounds[c] < low for c, low in leader_lows.items())
