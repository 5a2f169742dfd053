"""The speedup model: what the measured acceptance allows, and what drafting costs.

With ``a_i`` the measured probability that draft position ``i`` is accepted (vLLM's per-position
rate: accepted at ``i`` / verification steps), one verification step with lookahead ``k``
yields ``E(k) = 1 + sum_{i<k} a_i`` tokens on average. If drafting cost nothing, speculation
would be ``E(k)`` times faster than decoding one token per target step: that is the upper bound
(the mean acceptance length). Drafting and verifying ``k`` tokens do cost something; with ``c``
the cost of one speculative token relative to one target step,

    speedup(k) = E(k) / (1 + c * k).

``c`` is fitted to the medians of the measured speedups by least squares on
``E(k) / speedup(k) - 1 = c * k``, with a 95% interval; where a fixed per-step drafting overhead
fits better (``1 + c0 + c k``, AIC lower by 2 or more) that model is used (``sweep.stats``). The
model then predicts the lookahead that should win. All speedups compare output throughput with
no speculation at the same concurrency.

Every point is the median of its repeated runs, with a 95% interval (``sweep.stats``); the best
lookahead is the fastest one unless a smaller one's interval overlaps it (then the smaller one
is recommended, provided it beats no speculation with 95% confidence), so no winner is picked
from noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from llama4spec.sweep.stats import Choice, CostFit, Interval, choose, fit_cost, interval, ratio_interval


def expected_tokens(rates: Sequence[float], k: int) -> float:
    """Tokens per verification step at lookahead ``k`` (``k`` <= the positions measured)."""
    if k < 0 or k > len(rates):
        raise ValueError(f"lookahead {k} needs {k} measured positions; {len(rates)} measured")
    return 1.0 + sum(rates[:k])


def speedup_bound(rates: Sequence[float]) -> float:
    """The speedup if drafting were free: the mean acceptance length at the measured lookahead."""
    return expected_tokens(rates, len(rates))


def efficiency(measured_speedup: float | None, bound: float | None) -> float | None:
    if measured_speedup is None or not bound:
        return None
    return measured_speedup / bound


@dataclass(frozen=True)
class Point:
    """One measured point of a sweep (one benchmark)."""

    id: str
    draft: str  # the draft's name; 'none' without speculation
    lookahead: int | None  # None without speculation
    concurrency: int
    output_throughput: float | None = None  # tokens/s
    mean_tpot_ms: float | None = None
    mean_ttft_ms: float | None = None
    acceptance_length: float | None = None
    rates: tuple[float, ...] = ()  # P(position i accepted), i < lookahead
    num_drafts: int = 0
    accepted_per_pos: tuple[int, ...] = ()
    # every counted run's value per figure (output_throughput, mean_tpot_ms, mean_ttft_ms,
    # acceptance_length); the figures above are their medians
    samples: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    category: str | None = None  # the prompts' category, when the point measured one
    prompts: int | None = None  # a category point: its category's distinct prompts, when known

    def interval(self, key: str) -> Interval:
        """The 95% interval of a figure over the repeats (one sample: the figure alone, no interval)."""
        values = self.samples.get(key)
        if values is None:
            value = getattr(self, key, None)
            values = () if value is None else (value,)
        return interval(values)

    @property
    def repeats(self) -> int:
        return len(self.samples.get("output_throughput", ())) or (1 if self.output_throughput is not None else 0)

    @property
    def speculative(self) -> bool:
        return self.lookahead is not None

    @property
    def name(self) -> str:
        if self.scheduled:
            return f"{self.draft} (k<={self.lookahead})"
        return f"{self.draft} k={self.lookahead}" if self.speculative else "no speculation"

    @property
    def scheduled(self) -> bool:
        """Measured under a derived lookahead schedule, not a fixed lookahead."""
        return self.draft.endswith(SCHEDULED)


# A draft name with this suffix marks points measured under a derived lookahead schedule.
SCHEDULED = " schedule"


@dataclass
class Row:
    point: Point
    speedup: float | None  # measured: output throughput / no speculation's (the median)
    bound: float | None  # the mean acceptance length: the speedup with free drafting
    efficiency: float | None  # speedup / bound
    predicted: float | None  # the fitted model's speedup
    speedup_interval: Interval | None = None  # 95%: paired repeats' ratios, or a bootstrap of the ratio


@dataclass
class Fit:
    """The model for one draft at one concurrency."""

    draft: str
    rates: tuple[float, ...]  # from the measured point with the largest lookahead
    draft_cost: float | None
    curve: list[tuple[int, float]] = field(default_factory=list)
    best: tuple[int, float] | None = None
    cost: CostFit | None = None  # c with its interval, c0, the model chosen, residuals per k


@dataclass
class AtConcurrency:
    concurrency: int
    baseline: Point | None
    rows: list[Row]  # speculative points, by draft then lookahead
    best: Point | None  # the recommended setting: the fastest, or the cheapest one tied with it
    best_by_acceptance: Point | None
    fits: dict[str, Fit]
    choices: dict[str, Choice] = field(default_factory=dict)  # per draft: its best lookahead, ties named
    fastest: Point | None = None  # the highest median output throughput, no speculation included
    category: str | None = None  # the prompts' category these points measured (None: no category)
    picks: dict[str, Point | None] = field(default_factory=dict)  # per draft: what to deploy (``recommend``)

    @property
    def title(self) -> str:
        return f"concurrency {self.concurrency}" + (f", category {self.category}" if self.category else "")

    @property
    def best_speedup(self) -> float | None:
        speedups = [r.speedup for r in self.rows if r.speedup is not None and not r.point.scheduled]
        return max(speedups) if speedups else None

    @property
    def pays(self) -> bool:
        """Some fixed lookahead beats no speculation: its speedup's 95% interval lies above 1 (a
        single sample: its speedup is above 1)."""
        for r in self.rows:
            if r.speedup is None or r.point.scheduled:
                continue
            iv = r.speedup_interval
            if (iv.low > 1.0) if iv is not None and iv.bounded else r.speedup > 1.0:
                return True
        return False


@dataclass
class Analysis:
    at: list[AtConcurrency]  # by concurrency, ascending
    pays_up_to: int | None  # the largest concurrency at which some lookahead beats no speculation
    stops_paying_at: int | None  # the smallest concurrency from which none does, at every larger one

    def verdict(self) -> str:
        if not self.at or all(a.best_speedup is None for a in self.at):
            return "no speedup measured (a sweep needs points with and without a draft at the same concurrency)"
        if not self.repeated:
            single = " (single samples: no interval)"
            if self.pays_up_to is None:
                return "speculation does not pay at any measured concurrency" + single
            if self.stops_paying_at is None:
                return f"speculation pays at every measured concurrency (up to {self.at[-1].concurrency}){single}"
            return (f"speculation pays up to concurrency {self.pays_up_to}; from concurrency "
                    f"{self.stops_paying_at} on, no lookahead beats no speculation{single}")
        if self.pays_up_to is None:
            return "no lookahead beats no speculation with 95% confidence at any measured concurrency"
        if self.stops_paying_at is None:
            return (f"speculation pays at every measured concurrency (up to {self.at[-1].concurrency}), "
                    f"with 95% confidence")
        return (f"speculation pays up to concurrency {self.pays_up_to} with 95% confidence; from concurrency "
                f"{self.stops_paying_at} on, no lookahead beats no speculation with that confidence")

    @property
    def repeated(self) -> bool:
        """Whether the speedups carry 95% intervals (repeated points), or are single samples."""
        return any(r.speedup_interval is not None and r.speedup_interval.bounded for a in self.at for r in a.rows)


def _throughput(p: Point | None) -> float:
    return p.output_throughput if p is not None and p.output_throughput is not None else float("-inf")


def label(p: Point, drafts: int = 1) -> str:
    """A setting's name in choices: 'none', 'k=3' (one draft swept) or 'tiny_eagle k=3'."""
    if not p.speculative:
        return "none"
    return f"k={p.lookahead}" if drafts <= 1 else p.name


def speedup_interval(p: Point, base: Point | None) -> Interval | None:
    """Output throughput over no speculation's: paired repeats' ratios, or a bootstrap of the ratio."""
    if base is None:
        return None
    num, den = p.samples.get("output_throughput"), base.samples.get("output_throughput")
    if not num or not den:
        if p.output_throughput is None or not base.output_throughput:
            return None
        num, den = (p.output_throughput,), (base.output_throughput,)
    iv = ratio_interval(num, den)
    return iv if iv.median is not None else None


def choice(points: Sequence[Point], drafts: int = 1) -> Choice:
    """The fastest of ``points`` by output throughput, with every one it cannot be told apart from
    (95% intervals overlap); on a tie the cheapest (the smallest lookahead) first."""
    ordered = sorted(points, key=lambda p: (p.speculative, p.lookahead or 0))
    return choose([(label(p, drafts), p.interval("output_throughput")) for p in ordered])


def beats_baseline(p: Point, base: Point | None) -> bool:
    """``p`` is faster than no speculation: its speedup interval lies above 1 (a single sample:
    its speedup is above 1)."""
    iv = speedup_interval(p, base) if p.speculative else None
    if iv is None or iv.median is None:
        return False
    return iv.low > 1.0 if iv.bounded else iv.median > 1.0


def recommend(points: Sequence[Point], base: Point | None, drafts: int = 1) -> tuple[Point | None, Choice]:
    """What to deploy among one draft's fixed lookaheads (and no speculation): the lookaheads tie
    by their throughput intervals (independent measurements); the recommendation is the smallest
    tied lookahead that beats no speculation with 95% confidence (its paired speedup interval above
    1), else no speculation. Without a no-speculation point: the smallest tied lookahead."""
    spec = [p for p in points if p.speculative and p.output_throughput is not None]
    ch = choice(spec, drafts)
    tied = [p for p in sorted(spec, key=lambda p: p.lookahead or 0) if label(p, drafts) in ch.tied]
    if base is None or base.output_throughput is None:
        return (tied[0] if tied else None), ch
    return next((p for p in tied if beats_baseline(p, base)), base), ch


def analyse_concurrency(concurrency: int, points: list[Point], category: str | None = None) -> AtConcurrency:
    base = next((p for p in points if not p.speculative), None)
    spec = sorted((p for p in points if p.speculative), key=lambda p: (p.draft, p.lookahead))
    fits: dict[str, Fit] = {}
    rows: list[Row] = []
    for p in spec:
        iv = speedup_interval(p, base)
        speedup = iv.median if iv is not None else None
        bound = p.acceptance_length if p.acceptance_length is not None else (
            speedup_bound(p.rates) if p.rates else None)
        rows.append(Row(p, speedup, bound, efficiency(speedup, bound), None, iv))
    drafts = list(dict.fromkeys(p.draft for p in spec if not p.scheduled))
    choices: dict[str, Choice] = {}
    picks: dict[str, Point | None] = {}
    for draft in drafts:
        mine = [r for r in rows if r.point.draft == draft]
        widest = max((r.point for r in mine if r.point.rates), key=lambda p: len(p.rates), default=None)
        cost = fit_cost([(r.point.lookahead, r.bound, r.speedup) for r in mine
                         if r.bound is not None and r.speedup is not None])
        fit = Fit(draft, widest.rates if widest else (), cost.c if cost else None, cost=cost)
        if widest is not None and cost is not None and cost.c is not None:
            fit.curve = [(k, cost.predict(expected_tokens(widest.rates, k), k)) for k in range(1, len(widest.rates) + 1)]
            fit.best = max(fit.curve, key=lambda kv: (kv[1], -kv[0]))
            for r in mine:
                if r.point.lookahead <= len(widest.rates):
                    r.predicted = cost.predict(expected_tokens(widest.rates, r.point.lookahead), r.point.lookahead)
        fits[draft] = fit
        picks[draft], choices[draft] = recommend([r.point for r in mine], base, len(drafts))
    fixed = [p for p in points if p.output_throughput is not None and not p.scheduled]
    fastest = max(fixed, key=_throughput, default=None)
    # the recommendation: the fastest draft's pick (by median throughput), no speculation when none pays
    spec_picks = [p for p in picks.values() if p is not None and p.speculative]
    best = max(spec_picks, key=_throughput, default=None) or base or fastest
    by_acc = max((p for p in spec if p.acceptance_length is not None and not p.scheduled),
                 key=lambda p: p.acceptance_length, default=None)
    return AtConcurrency(concurrency, base, rows, best, by_acc, fits, choices, fastest, category, picks)


def analyse(points: Iterable[Point]) -> Analysis:
    """Group by prompt category and concurrency, compare with no speculation in the same group, fit
    the model, find where speculation stops paying (over the points without a category when there
    are any, else over every category)."""
    by_c: dict[tuple[str, int], list[Point]] = {}
    for p in points:
        by_c.setdefault((p.category or "", p.concurrency), []).append(p)
    at = [analyse_concurrency(c, by_c[(cat, c)], cat or None) for cat, c in sorted(by_c)]
    plain = [a for a in at if a.category is None] or at
    paying = [a.concurrency for a in plain if a.pays]
    pays_up_to = max(paying) if paying else None
    stops = None
    if pays_up_to is not None:
        later = sorted((a for a in plain if a.concurrency > pays_up_to and a.best_speedup is not None),
                       key=lambda a: a.concurrency)
        stops = later[0].concurrency if later else None
    return Analysis(at, pays_up_to, stops)
