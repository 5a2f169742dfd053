"""The noise a comparison carries: the estimate object (``Noise``), its record, and priors.

Runs against one server start are not replicates of a setting: each start carries an offset of its
own (where the engine landed, the load while it was up) that its runs share. On the log scale a
run of setting s, start j, run i is ``y = mu_s + b_j + e_ji``, with ``b ~ N(0, between)`` and
``e ~ N(0, within)`` (Kalibera and Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013).
``Noise`` holds the two log-variances (and, for back-to-back pairs, the paired within-start
variance of a pair's log ratio), each with its degrees of freedom and where it came from:

- ``components.estimate``: one-way random-effects ANOVA on log throughput, pooled over settings (sums of
  squares and df added): within = MSW on sum(n_j - 1) df; between = (MSB - MSW) / n0, clamped at
  0, with Satterthwaite's df ``(MSB - MSW)^2 / (MSB^2 / df_B + MSW^2 / df_W)``;
- ``components.combine``: a profile (``noise.json``) or a hardware prior as prior information, pooled with
  the data by df;
- ``ratio.ratio_interval``: two settings' mean log difference, variance ``between * (share_a +
  share_b) + within * (1/n_a + 1/n_b)`` (shares: ``sum_j n_j^2 / n^2``, 1 for one start), on
  Satterthwaite's df;
- ``equivalence.equivalent``: two one-sided tests against +-margin;
- ``blocks.block_interval``: back-to-back blocks, each block's mean log ratio the unit (t on J - 1 df);
- ``design.runs_per_start``, ``runs_per_block``, ``starts_for``: Kalibera and Jones' allocation from costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from llama4spec.stats.interval import CONFIDENCE

FROM_DATA = "estimated from this sweep's starts"
CALIBRATE = "run `llama4spec calibrate` on this machine to measure a profile"


@dataclass(frozen=True)
class Component:
    """One log-variance with its degrees of freedom (inf: taken as known) and its source."""

    var: float
    df: float
    source: str

    @property
    def sd(self) -> float:
        return math.sqrt(self.var)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The sd's chi-square interval on its df (approximate for a Satterthwaite df)."""
        if math.isinf(self.df):
            return self.sd, self.sd
        if not self.df:
            return 0.0, math.inf
        from scipy.stats import chi2

        a = (1 - confidence) / 2
        return (math.sqrt(self.df * self.var / chi2.ppf(1 - a, self.df)),
                math.sqrt(self.df * self.var / chi2.ppf(a, self.df)))

    def text(self, source: bool = True) -> str:
        df = "known" if math.isinf(self.df) else f"{self.df:.1f} df"
        return f"{self.sd:.3f} ({df}; {self.source})" if source else f"{self.sd:.3f} ({df})"


@dataclass(frozen=True)
class Noise:
    """Between-start and within-start log-variance (and the paired within-start variance of a
    back-to-back pair's log ratio), each with its df and source. ``provisional``: why an answer
    resting on it is provisional (no profile and no data to estimate it), None otherwise."""

    between: Component
    within: Component
    paired: Component | None = None
    n0: float = 1.0  # runs per start of the data the between part was estimated from (its MSB coefficient)
    provisional: str | None = None

    @property
    def source(self) -> str:
        sources = dict.fromkeys(c.source for c in (self.between, self.within, self.paired) if c is not None)
        return "; ".join(sources)

    def text(self) -> str:
        one = len({c.source for c in (self.between, self.within, self.paired) if c is not None}) == 1
        parts = [f"between-start sd {self.between.text(not one)}", f"within-start sd {self.within.text(not one)}"]
        if self.paired is not None:
            parts.append(f"paired within-start sd {self.paired.text(not one)}")
        return (", ".join(parts) + (f" (source: {self.source})" if one else "")
                + (f" [provisional: {self.provisional}]" if self.provisional else ""))


def _df_json(df: float) -> float | str:
    return "known" if math.isinf(df) else float(df)


def noise_record(noise: Noise | None) -> dict | None:
    """A noise estimate as JSON-able data: each component's sd, variance, df ("known" for an
    infinite df) and source; why it is provisional, when it is."""
    if noise is None:
        return None

    def one(c: Component | None):
        return None if c is None else {"sd": c.sd, "var": c.var, "df": _df_json(c.df), "source": c.source}

    return {"between": one(noise.between), "within": one(noise.within), "paired": one(noise.paired),
            "source": noise.source, "provisional": noise.provisional}


def noise_from_record(data) -> Noise | None:
    """``noise_record``'s data read back (a run directory's plan.json: input, checked through
    ``noise_records.PriorRecord``: every sd in [0, 10], every df from 0 to 1e6 or known): None where
    it is not one (``noise_records.prior_problem`` says why)."""
    from llama4spec.stats.noise_records import PriorRecord, prior_problem

    if not isinstance(data, Mapping) or prior_problem(data) is not None:
        return None
    rec = PriorRecord.model_validate(data)

    def one(c) -> Component | None:
        return None if c is None else Component(c.sd ** 2, math.inf if c.df == "known" else c.df, c.source[:300])

    why = rec.provisional
    return Noise(one(rec.between), one(rec.within), one(rec.paired), provisional=why[:500] if why else None)


def prior(between_sd: float, within_sd: float, source: str, between_df: float = math.inf,
          within_df: float = math.inf, paired_sd: float | None = None, paired_df: float = math.inf,
          provisional: str | None = None) -> Noise:
    """A Noise from figures recorded elsewhere (a hardware config's prior, a profile)."""
    paired = None if paired_sd is None else Component(paired_sd ** 2, paired_df, source)
    return Noise(Component(between_sd ** 2, between_df, source), Component(within_sd ** 2, within_df, source),
                 paired, provisional=provisional)


def provisional(device: str) -> Noise:
    """No profile and no data to estimate with on an accelerator: zero between-start noise, said to be
    provisional (a CPU figure is never applied to a GPU silently)."""
    why = (f"no noise profile for this {device} and too few server starts to estimate the between-start "
           f"spread; {CALIBRATE} and pass it as noise: PATH")
    return Noise(Component(0.0, 0.0, "none (uncalibrated)"), Component(0.0, 0.0, "none (uncalibrated)"),
                 provisional=why)
