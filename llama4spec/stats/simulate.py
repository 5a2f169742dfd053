"""Simulated sweeps under the variance-components model: the checks of the intervals' coverage."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from llama4spec.stats.components import components
from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.noise import Noise
from llama4spec.stats.ratio import comparison_variance
from llama4spec.stats.tdist import t_quantile


def simulate(rng: np.random.Generator, sweeps: int, between_sd: float, within_sd: float, log_effects: Sequence[float],
             starts: int, runs: int) -> np.ndarray:
    """Log throughputs [sweeps, settings, starts, runs] under the model: setting s's true log
    effect, a start offset ~ N(0, between_sd) each start, a run's own ~ N(0, within_sd)."""
    shape = (sweeps, len(log_effects), starts)
    offsets = rng.normal(0.0, between_sd, shape)[..., None]
    return np.asarray(log_effects, float)[None, :, None, None] + offsets + rng.normal(0.0, within_sd, (*shape, runs))


def simulated_intervals(y: np.ndarray, a: int, b: int, confidence: float = CONFIDENCE,
                        noise: Noise | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For simulated sweeps ``y`` (``simulate``; every start of ``runs`` runs): setting a against b,
    each run's start known, the components estimated from the sweep itself unless ``noise`` is given.
    Returns (center, half-width, df) of the log ratio's interval, per sweep."""
    noise = components(y) if noise is None else noise
    starts, runs = y.shape[-2], y.shape[-1]
    center = y[:, a].mean((-1, -2)) - y[:, b].mean((-1, -2))
    var, df = comparison_variance(noise, starts * runs, starts * runs, 1.0 / starts, 1.0 / starts)
    return center, t_quantile(df, 0.5 + confidence / 2) * np.sqrt(var), df
