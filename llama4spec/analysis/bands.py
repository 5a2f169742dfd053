"""A sweep's points banded by input length, each band analysed on its own, and where speculation stops
paying between adjacent bands (pure).

A band is the input length (prompt tokens) of a point: ``bench.input_len`` (random prompts: one
length, a benchmark of its own) or ``bench.input_band`` (``lo-hi``: a prompt file's prompts of that
many tokens). Points of different bands are never compared with each other: each band is analysed as
a sweep of its own (``model.analyse``: its speedups against no speculation in the same band, their
intervals and verdicts, the best lookahead), with the noise estimate of the whole sweep. Then, per
concurrency, in ascending order of input length: speculation **pays** in a band where some fixed
lookahead is declared faster than no speculation (``AtConcurrency.pays``), and it **stops paying**
between the last band where it pays and the next one, when no band from that one on pays. What can be
done with it in vLLM 0.32, which has no lookahead per context length, is said in ``routing``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from llama4spec.stats.interval import Interval
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import analyse, points_noise
from llama4spec.stats.speedup_results import Analysis, AtConcurrency, Row
from llama4spec.stats.noise import Noise

BAND_KEYS = ("bench.input_len", "bench.input_band", "bench.speed_bench_subset")
SPEED_TOKENS = {f"throughput_{n}k": 1024 * n for n in (1, 2, 8, 16, 32)}  # SPEED-Bench's throughput subsets


@dataclass(frozen=True, order=True)
class InputBand:
    """Prompts of ``low`` to ``high`` tokens (inclusive); ``name``: a SPEED-Bench subset's, about that long."""

    low: int
    high: int
    name: str = ""

    @property
    def label(self) -> str:
        if self.name:
            return f"{self.name} (about {self.low:,} tokens)"
        return f"{self.low} tokens" if self.low == self.high else f"{self.low}-{self.high} tokens"

    def record(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "label": self.label}


def parse_band(text: str) -> InputBand | None:
    """``64``, ``17-48`` or a SPEED-Bench subset as a band; None when it is none (or empty: low above high)."""
    if str(text) in SPEED_TOKENS:
        return InputBand(SPEED_TOKENS[str(text)], SPEED_TOKENS[str(text)], str(text))
    parts = str(text).strip().split("-")
    if len(parts) not in (1, 2) or not all(part.strip().isdigit() for part in parts):
        return None
    low, high = int(parts[0]), int(parts[-1])
    return InputBand(low, high) if 0 < low <= high else None


def band_of(p: Point) -> InputBand | None:
    """The point's input-length band, from the band key its sweep varies (None: not banded)."""
    for key, value in p.varied:
        if key in BAND_KEYS:
            return parse_band(value)
    return None


def split(points: Iterable[Point]) -> list[tuple[InputBand, list[Point]]]:
    """The points per band, by ascending input length, the band key taken out of their names; empty
    when the points are not banded (or any point's band cannot be read)."""
    by_band: dict[InputBand, list[Point]] = {}
    for p in points:
        band = band_of(p)
        if band is None:
            return []
        by_band.setdefault(band, []).append(
            dataclasses.replace(p, varied=tuple(kv for kv in p.varied if kv[0] not in BAND_KEYS)))
    return sorted(by_band.items())


def analyse_points(points: Iterable[Point], prior: Noise | None = None, margin: float | None = None,
                   block_rule: tuple[int, int, float] | None = None) -> Analysis:
    """``model.analyse`` of a sweep's points; banded points, each band on its own (``by_band``; the
    headline fields are the shortest band's), every comparison carrying the whole sweep's noise."""
    points = list(points)
    groups = split(points)
    if not groups:
        return analyse(points, prior, margin=margin, block_rule=block_rule)
    noise = points_noise(points, prior)
    subs = [(band, analyse(mine, noise=noise, margin=margin, block_rule=block_rule)) for band, mine in groups]
    at = [dataclasses.replace(a, band=band.label) for band, sub in subs for a in sub.at]
    first = subs[0][1]
    return Analysis(at, first.pays_up_to, first.stops_paying_at, noise, by_band=subs)


@dataclass(frozen=True)
class Break:
    """Where speculation stops paying at one concurrency, over the bands measured there."""

    concurrency: int
    bands: tuple[InputBand, ...]  # ascending
    paying: tuple[InputBand, ...]  # the bands where some lookahead is declared faster
    last_paying: InputBand | None  # the band the break follows (None: no break located)
    first_not: InputBand | None  # the band from which on no band pays
    slower: tuple[InputBand, ...] = ()  # bands from the break on where every lookahead is declared slower
    gains: tuple[tuple[InputBand, Interval | None, str | None], ...] = ()  # above the break: routing's gain

    @property
    def located(self) -> bool:
        return self.last_paying is not None and self.first_not is not None

    def sentence(self) -> str:
        at = f"concurrency {self.concurrency}"
        if len(self.paying) == len(self.bands):
            return f"{at}: speculation pays in every band measured ({_names(self.bands)})"
        if not self.paying:
            return f"{at}: speculation pays in no band measured ({_names(self.bands)})"
        if not self.located:
            return (f"{at}: speculation pays in {_names(self.paying)} but not in every band below the longest: "
                    f"no single break between adjacent bands")
        slower = f"; declared slower in {_names(self.slower)}" if self.slower else ""
        return (f"{at}: speculation stops paying between {self.last_paying.label} and {self.first_not.label} of "
                f"input: it pays up to {self.last_paying.label}, and from {self.first_not.label} on no lookahead "
                f"is declared faster than no speculation{slower}")


def _names(bands: Sequence[InputBand]) -> str:
    return ", ".join(b.label for b in bands)


def _at(sub: Analysis, concurrency: int) -> AtConcurrency | None:
    return next((a for a in sub.at if a.concurrency == concurrency and a.category is None
                 and a.temperature == sub.reference_temperature), None)


def _best_row(a: AtConcurrency) -> Row | None:
    rows = [r for r in a.rows if r.speedup is not None and not r.point.scheduled]
    return max(rows, key=lambda r: r.speedup, default=None)


def breaks(analysis: Analysis) -> list[Break]:
    """Per concurrency measured in every band: which bands pay, and the break between adjacent ones."""
    if not analysis.by_band:
        return []
    concurrencies = sorted({a.concurrency for a in analysis.at})
    out = []
    for c in concurrencies:
        seq = [(band, a) for band, sub in analysis.by_band if (a := _at(sub, c)) is not None]
        if len(seq) < 2 or any(a.best_speedup is None for _, a in seq):
            continue
        bands = tuple(b for b, _ in seq)
        paying = tuple(b for b, a in seq if a.pays)
        last = max((i for i, (_, a) in enumerate(seq) if a.pays), default=None)
        located = last is not None and last + 1 < len(seq) and len(paying) == last + 1
        after = seq[last + 1:] if located else []
        gains = tuple((b, (r.speedup_interval if r else None), (r.verdict if r else None))
                      for b, a in after for r in [_best_row(a)])
        out.append(Break(c, bands, paying, seq[last][0] if located else None, after[0][0] if located else None,
                         tuple(b for b, a in after if a.status == "slower"), gains))
    return out
