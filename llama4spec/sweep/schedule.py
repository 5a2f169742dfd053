"""From a sweep's answer to a deployed setting: a lookahead schedule per batch size (pure).

At each measured concurrency the recommended lookahead is the fastest setting there (k=0 where
no speculation wins); batch sizes between two measured concurrencies split at their geometric
mean. Client concurrency approximates the server's running batch size; above the largest
measured concurrency vLLM carries the last range's k forward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llama4spec.sweep.model import Analysis, AtConcurrency, recommend


@dataclass
class Band:
    first: int
    last: int
    k: int
    concurrencies: list[int]  # the measured concurrencies this band stands for


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


def recommended_k(a: AtConcurrency, draft: str) -> tuple[int, str] | None:
    """(k, point id) of the setting to deploy for ``draft`` at one concurrency: 0 for no speculation
    (``model.recommend``: the smallest lookahead tied with the fastest that beats no speculation
    with 95% confidence, else no speculation)."""
    points = [r.point for r in a.rows if r.point.draft == draft and r.point.output_throughput is not None]
    # (points measured under a schedule carry another draft name: never part of a derivation)
    if not points and (a.baseline is None or a.baseline.output_throughput is None):
        return None
    best, _ = recommend(points, a.baseline)
    if best is None:
        return None
    return (best.lookahead or 0) if best.speculative else 0, best.id


def derive(analysis: Analysis, draft: str) -> Schedule | None:
    """The schedule for ``draft`` from the sweep's points; None without a measured point for it."""
    picks = [(a.concurrency, recommended_k(a, draft)) for a in analysis.at if a.category is None]
    picks = [(c, pick) for c, pick in picks if pick is not None]
    if not picks or not any(r.point.draft == draft for a in analysis.at for r in a.rows):
        return None
    bands: list[Band] = []
    first = 1
    for i, (c, (k, _)) in enumerate(picks):
        last = c if i == len(picks) - 1 else max(c, math.isqrt(c * picks[i + 1][0]))
        if bands and bands[-1].k == k:
            bands[-1].last, bands[-1].concurrencies = last, [*bands[-1].concurrencies, c]
        else:
            bands.append(Band(first, last, k, [c]))
        first = last + 1
    return Schedule(draft, bands, [pid for _, (_, pid) in picks])


def derive_all(analysis: Analysis) -> list[Schedule]:
    drafts = dict.fromkeys(r.point.draft for a in analysis.at for r in a.rows if not r.point.scheduled)
    return [s for s in (derive(analysis, d) for d in drafts) if s is not None]
