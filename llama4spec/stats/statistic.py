"""How the runs of two settings compare: the statistic (Welch's t on mean log throughput, its paired
and block forms) with the between-start term from a noise estimate, on Satterthwaite's df."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Protocol, Sequence

import numpy as np

from llama4spec.stats.blocks import block_estimate
from llama4spec.stats.noise import Noise
from llama4spec.stats.tdist import satterthwaite


@dataclass(frozen=True)
class Estimate:
    """a against b on the statistic's scale (0: no difference), elementwise over arrays."""

    center: np.ndarray
    se: np.ndarray
    df: np.ndarray

    def t(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.center / self.se
        exact = np.select([self.center > 0, self.center < 0, self.center == 0], [np.inf, -np.inf, 0.0], np.nan)
        return np.where(self.se > 0, ratio, exact)


class Statistic(Protocol):
    """How the runs of two settings compare; the error control takes any such statistic.

    Against a fixed threshold (attainment in a capacity search), ``b`` holds the threshold as runs
    of no spread.
    """

    method: str

    def values(self, runs: np.ndarray) -> np.ndarray:
        """Per-run values on the scale where means are compared (NaN: not usable)."""

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        """a's runs against b's, along the last axis (at least 2 each). ``share_a``, ``share_b``:
        how much of one server start's offset each side's mean carries (``start_shares``: 1 for
        runs of one start, 1/m for runs spread evenly over m starts)."""

    def scale(self, x: np.ndarray) -> np.ndarray:
        """A difference or a bound back on the reported scale."""




def with_between(within, shares, between_var: float, between_df: float):
    """The variance of a difference of means (``within``: each side's variance of its mean and its
    df; plus ``shares`` x the between-start variance on ``between_df``) and Satterthwaite's df, a term
    of inf df exact; a positive between term of 0 df makes the df 0 (nothing known about it). A look
    at runs not measured (NaN) keeps an inf df, as the look table has always held it (never read)."""
    between = np.asarray(shares, float) * between_var
    total = sum(v for v, _ in within) + between
    df = np.asarray(satterthwaite([*within, (between, between_df)]))
    return total, np.where(np.isnan(df), np.inf, df)


@dataclass(frozen=True)
class LogRatio:
    """Welch's t on mean log throughput; the ratio is exp of the difference.

    ``noise``: the estimate whose between-start component (a setting's mean log throughput between
    server starts, with its df) each side's mean carries (``stats.noise``; estimated elsewhere,
    not from these runs). None says runs are independent replicates, true only if each run has its
    own start.
    """

    noise: Noise | None = None
    method: ClassVar[str] = "welch"

    @property
    def between(self) -> tuple[float, float]:
        """The between-start log-variance and its df (0 on inf df without a noise estimate)."""
        return (self.noise.between.var, self.noise.between.df) if self.noise is not None else (0.0, math.inf)

    def values(self, runs: np.ndarray) -> np.ndarray:
        runs = np.asarray(runs, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(runs > 0, np.log(runs), np.nan)

    def _estimate(self, center, within: list[tuple[np.ndarray, int]], shares=2.0) -> Estimate:
        """Satterthwaite: ``within`` holds (variance of a mean, its degrees of freedom); ``shares``
        the two sides' start shares summed (2: each side one server start)."""
        total, df = with_between(within, shares, *self.between)
        return Estimate(center, np.sqrt(total), df)

    def combined(self, center: float, within: list[tuple[float, float]], shares: float = 2.0) -> Estimate:
        """A weighted difference of means (an interpolated frontier's): ``within`` each mean's
        weighted variance and its df, ``shares`` the start shares of both sides summed."""
        return self._estimate(np.asarray(center, float), [(np.asarray(v, float), d) for v, d in within], shares)

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        na, nb = a.shape[-1], b.shape[-1]
        return self._estimate(a.mean(-1) - b.mean(-1), [(a.var(-1, ddof=1) / na, na - 1),
                                                         (b.var(-1, ddof=1) / nb, nb - 1)],
                              np.asarray(share_a, float) + np.asarray(share_b, float))

    def scale(self, x: np.ndarray) -> np.ndarray:
        return np.exp(x)


@dataclass(frozen=True)
class PairedLogRatio(LogRatio):
    """The paired form (an interleaved design, ``design: interleaved``): run i of ``a`` was
    measured back to back with run i of ``b``, so drift common to both cancels in their log ratio.
    Student's t on the mean of the n = min(n_a, n_b) per-pair log ratios, variance ``var(d) / n``
    on n - 1 degrees of freedom, plus the between-start term as in ``LogRatio``: interleaving
    cancels what changes while both servers run, not the offset each server start carries."""

    method: ClassVar[str] = "paired"

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        n = min(a.shape[-1], b.shape[-1])
        d = a[..., :n] - b[..., :n]
        return self._estimate(d.mean(-1), [(d.var(-1, ddof=1) / n, n - 1)],
                              np.asarray(share_a, float) + np.asarray(share_b, float))


@dataclass(frozen=True)
class BlockLogRatio(LogRatio):
    """Back-to-back blocks (``design: interleaved`` with ``starts: J``): each block's servers started
    together, its pairs' mean log ratio the unit (``stats.blocks.block_estimate``): t on J - 1 df
    from the blocks' own spread with 3 or more blocks, from ``noise``'s between-start and paired
    components with 2."""

    method: ClassVar[str] = "blocks"

    def blocks(self, ratios: Sequence[Sequence[float]]) -> tuple[Estimate, str]:
        """The estimate from each block's per-pair ratios, and what it rests on."""
        center, se, df, text = block_estimate(ratios, self.noise)
        return Estimate(np.asarray(center), np.asarray(se), np.asarray(df)), text
