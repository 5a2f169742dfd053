"""From a sweep's answer to a deployed setting: a lookahead schedule per batch size (pure).

At each measured concurrency the lookahead is the one recommended there (``speedup_model.recommend``: the
highest median among the settings no other is declared faster than; k=0 where that is no
speculation), decided or not: a concurrency whose recommendation is undecided enters the schedule
with that k and is marked undecided in its band, never replaced by no speculation because an
interval spans 1. Batch sizes between two measured concurrencies split at their geometric mean.
Client concurrency approximates the server's running batch size; above the largest measured
concurrency vLLM carries the last range's k forward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from llama4spec.stats.speedup_results import Analysis, AtConcurrency


@dataclass
class Band:
    first: int
    last: int
    k: int
    concurrencies: list[int]  # the measured concurrencies this band stands for
    undecided: list[int] = field(default_factory=list)  # those whose recommendation is undecided


@dataclass
class Schedule:
    draft: str
    bands: list[Band]
    from_points: list[str]  # the ids of the points it was derived from

    @property
    def ranges(self) -> list[list[int]]:
        return [[b.first, b.last, b.k] for b in self.bands]

    @property
    def lookahead(self) -> int:
        return max(b.k for b in self.bands)

    @property
    def speculates(self) -> bool:
        return self.lookahead > 0

    def override(self) -> str:
        """The overrides that deploy it (``lookahead`` stays the maximum k)."""
        if not self.speculates:
            return "draft=none"
        ranges = ",".join(f"[{a},{b},{k}]" for a, b, k in self.ranges)
        return f"draft={self.draft} lookahead={self.lookahead} draft.lookahead_schedule=[{ranges}]"


@dataclass(frozen=True)
class Recommended:
    k: int  # 0: no speculation
    point: str  # the id of the point recommended
    decided: bool  # declared faster than every other setting of the draft at its concurrency


def recommended_k(a: AtConcurrency, draft: str) -> Recommended | None:
    """The setting to deploy for ``draft`` at one concurrency (``speedup_model.recommend``), decided or
    not; no speculation, undecided, where only it was measured; None where nothing was."""
    pick = a.choices.get(draft)
    if pick is None or pick.point is None:
        # (points measured under a schedule carry another draft name: never part of a derivation)
        if a.baseline is None or a.baseline.output_throughput is None:
            return None
        return Recommended(0, a.baseline.id, False)
    p = pick.point
    return Recommended((p.lookahead or 0) if p.speculative else 0, p.id, pick.decided)


def derive(analysis: Analysis, draft: str) -> Schedule | None:
    """The schedule for ``draft`` from the sweep's points; None without a measured point for it."""
    reference = analysis.reference_temperature  # one schedule per server: from the lowest temperature measured
    picks = [(a.concurrency, recommended_k(a, draft)) for a in analysis.at
             if a.category is None and a.temperature == reference]
    picks = [(c, pick) for c, pick in picks if pick is not None]
    if not picks or not any(r.point.draft == draft for a in analysis.at for r in a.rows):
        return None
    bands: list[Band] = []
    first = 1
    for i, (c, pick) in enumerate(picks):
        last = c if i == len(picks) - 1 else max(c, math.isqrt(c * picks[i + 1][0]))
        undecided = [] if pick.decided else [c]
        if bands and bands[-1].k == pick.k:
            band = bands[-1]
            band.last, band.concurrencies, band.undecided = last, [*band.concurrencies, c], [*band.undecided, *undecided]
        else:
            bands.append(Band(first, last, pick.k, [c], undecided))
        first = last + 1
    return Schedule(draft, bands, [pick.point for _, pick in picks])


def derive_all(analysis: Analysis) -> list[Schedule]:
    if analysis.by_band:  # one k per batch size for every input length: not from bands analysed apart
        return []
    drafts = dict.fromkeys(r.point.draft for a in analysis.at for r in a.rows if not r.point.scheduled)
    return [s for s in (derive(analysis, d) for d in drafts) if s is not None]
