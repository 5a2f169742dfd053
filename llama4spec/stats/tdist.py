"""Student's t and Satterthwaite's degrees of freedom: the two helpers every interval here rests on."""

from __future__ import annotations

import numpy as np


def special():
    from scipy import special as sp  # loaded on first use: importing scipy takes ~0.4 s

    return sp


def t_quantile(df, p: float):
    """Student's t quantile, elementwise: the normal one at inf df, inf at 0 df."""
    sp, df = special(), np.asarray(df, float)
    safe = np.where((df > 0) & np.isfinite(df), df, 1.0)
    q = np.where(df <= 0, np.inf, np.where(np.isinf(df), sp.ndtri(p), sp.stdtrit(safe, p)))
    return float(q) if q.ndim == 0 else q


def satterthwaite(terms) -> np.ndarray | float:
    """df of a sum of variance terms (value, df), elementwise; a term of inf df counts as exact, a
    positive term of 0 df makes the sum's df 0 (nothing known)."""
    total = sum(np.asarray(v, float) for v, _ in terms)
    den, unknown = 0.0, False
    for v, d in terms:
        v, d = np.asarray(v, float), np.asarray(d, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            den = den + np.where((v > 0) & (d > 0) & np.isfinite(d), v * v / d, 0.0)
        unknown = unknown | ((v > 0) & (d <= 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(unknown, 0.0, np.where(den > 0, total * total / den, np.inf))
    return float(df) if np.ndim(df) == 0 else df
