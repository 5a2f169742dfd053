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
fits better (``1 + c0 + c k``, AIC lower by 2 or more) that model is used (``analysis.stats``). The
model then predicts the lookahead that should win. All speedups compare output throughput with
no speculation at the same concurrency.

Every point is the median of its repeated runs, with a 95% interval (``analysis.stats``). Settings
at one concurrency compare by the difference of their mean log throughputs (``stats.compare``:
Welch with the between-start term, Holm over the concurrency's pairs), each comparison faster,
slower or undecided. What to deploy (``recommend``) is the setting with the highest median among
those no other is declared faster than, marked undecided unless it is declared faster than every
other: an undecided answer is said, never turned into "no speculation".
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from llama4spec.results.requests import RequestRow
from llama4spec.analysis.decide import CONFIDENCE, RatioInterval
from llama4spec.analysis.noise import Noise, pooled
from llama4spec.analysis.stats import EQUIVALENT, Comparison, CostFit, Interval, compare, fit_cost, interval


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
    # the record's value of every other sweep figure (``figures.sweep()``) vLLM reports, by key
    figures: Mapping[str, float | None] = field(default_factory=dict)
    category: str | None = None  # the prompts' category, when the point measured one
    prompts: int | None = None  # a category point: its category's distinct prompts, when known
    # measured until decided (repeats: auto): the verdict against no speculation the sequential rule
    # (``decide.allocate``) stopped it on
    stop_verdict: str | None = None
    starts: tuple[int, ...] = ()  # the server start of each output-throughput run (empty: all one start)
    # measured until decided: (min_repeats, max_repeats, confidence) of the rule its runs were given by
    rule: tuple[int, int, float] | None = None
    # an interleaved sweep's baseline: the candidate point each output-throughput run was measured
    # back to back with (None: not in a pair; empty: no run was)
    pairs: tuple[str | None, ...] = ()
    temperature: float = 0.0  # the client's sampling temperature (bench.temperature)
    # every request of its counted runs, pooled (a server with a draft reports each one's acceptance)
    requests: tuple[RequestRow, ...] = field(default=(), compare=False, repr=False)
    # the other keys its sweep varies (beyond draft, lookahead, concurrency, category, temperature)
    # with this point's values: part of its name, so two settings never share one
    varied: tuple[tuple[str, str], ...] = ()

    def interval(self, key: str) -> Interval:
        """The 95% interval of a figure over the repeats (one sample: the figure alone, no interval)."""
        values = self.samples.get(key)
        if values is None:
            value = self.value(key)
            values = () if value is None else (value,)
        return interval(values)

    def value(self, key: str) -> float | None:
        """A figure of the point by its key (``figures.Figure.key``): its field, else its record's value."""
        return getattr(self, key) if hasattr(self, key) else self.figures.get(key)

    @property
    def repeats(self) -> int:
        return len(self.samples.get("output_throughput", ())) or (1 if self.output_throughput is not None else 0)

    @property
    def speculative(self) -> bool:
        return self.lookahead is not None

    @property
    def name(self) -> str:
        if self.scheduled:
            return f"{self.draft} (k<={self.lookahead}){self.setting}"
        return (f"{self.draft} k={self.lookahead}" if self.speculative else "no speculation") + self.setting

    @property
    def setting(self) -> str:
        """The other keys its sweep varies, as they are written (' memory.max_num_seqs=128'), or ''."""
        return "".join(f" {key}={value}" for key, value in self.varied)

    @property
    def scheduled(self) -> bool:
        """Measured under a derived lookahead schedule, not a fixed lookahead."""
        return self.draft.endswith(SCHEDULED)


# A draft name with this suffix marks points measured under a derived lookahead schedule.
SCHEDULED = " schedule"


@dataclass
class Row:
    point: Point
    speedup: float | None  # measured over no speculation: Welch's ratio of geometric means (single samples: of medians)
    bound: float | None  # the mean acceptance length: the speedup with free drafting
    efficiency: float | None  # speedup / bound
    predicted: float | None  # the fitted model's speedup
    comparison: Comparison | None = None  # against no speculation at the same concurrency

    @property
    def speedup_interval(self) -> RatioInterval | None:
        """Welch's ratio interval against no speculation, at its Holm level (None below 2 runs a side)."""
        return self.comparison.interval if self.comparison is not None else None

    @property
    def verdict(self) -> str | None:
        """Against no speculation: faster, slower or undecided (None without a baseline)."""
        return self.comparison.verdict if self.comparison is not None else None


@dataclass
class Fit:
    """The model for one draft at one concurrency."""

    draft: str
    rates: tuple[float, ...]  # from the measured point with the largest lookahead
    draft_cost: float | None
    curve: list[tuple[int, float]] = field(default_factory=list)
    best: tuple[int, float] | None = None
    cost: CostFit | None = None  # c with its interval, c0, the model chosen, residuals per k


@dataclass(frozen=True)
class Pick:
    """What to deploy among some settings at one concurrency (``recommend``), and how sure it is."""

    point: Point | None
    label: str | None
    against: dict[str, Comparison]  # every other candidate (by label) -> the pick against it
    single: bool = False  # no comparison had 2 runs a side: nothing could be decided
    why: str | None = None  # taken over a higher median it is equivalent to: why

    @property
    def decided(self) -> bool:
        """Declared faster than every other candidate (or equivalent to those it was taken over)."""
        return all(c.verdict == "faster" or c.verdict == EQUIVALENT and self.why for c in self.against.values())

    @property
    def undecided(self) -> tuple[str, ...]:
        return tuple(name for name, c in self.against.items() if not c.decided)

    def sentence(self) -> str:
        if self.point is None:
            return "no measurement"
        if not self.against:
            return self.label
        if self.single:
            return f"{self.label}, the highest median (single samples: no interval, nothing decided)"
        faster = [name for name, c in self.against.items() if c.verdict == "faster"]
        if self.why:
            return f"{self.label}, {self.why}" + (f"; faster than {_names(faster)}" if faster else "")
        if self.decided:
            return f"{self.label}, decided: faster than {_names(faster)}"
        open_ = _names([f"{name} ({self.against[name].settle(short=True)})" for name in self.undecided])
        text = f"{self.label}, the highest median, undecided against {open_}"
        return text + (f"; faster than {_names(faster)}" if faster else "")


def _names(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


@dataclass
class AtConcurrency:
    concurrency: int
    baseline: Point | None
    rows: list[Row]  # speculative points, by draft then lookahead
    best: Point | None  # the recommended setting over every draft (``pick``)
    best_by_acceptance: Point | None
    fits: dict[str, Fit]
    choices: dict[str, Pick] = field(default_factory=dict)  # per draft: what to deploy (``recommend``)
    fastest: Point | None = None  # the highest median output throughput, no speculation included
    category: str | None = None  # the prompts' category these points measured (None: no category)
    pick: Pick | None = None  # over every draft's fixed lookaheads and no speculation
    # every ordered pair of fixed settings here (point ids), one Holm family (``stats.compare``)
    comparisons: dict[tuple[str, str], Comparison] = field(default_factory=dict)
    noise: Noise | None = None  # the estimate its comparisons' between-start term came from (``sweep_noise``)
    rule: tuple[int, int, float] | None = None  # measured until decided: compared by that rule (``sequential_rule``)
    temperature: float = 0.0  # the sampling temperature these points measured (bench.temperature)
    temperature_swept: bool = False  # the sweep measured more than one temperature: say which in the title
    # the other settings without speculation here (a server setting swept without a draft; two
    # identical servers: an A/A), each against ``baseline``, in the same Holm family as the rows
    others: list[Row] = field(default_factory=list)
    band: str | None = None  # the input-length band these points measured (``analysis.bands``; None: not banded)

    @property
    def points(self) -> list[Point]:
        """Every setting here in the tables' order: no speculation, the other settings without
        speculation, then the drafts' rows."""
        return ([self.baseline] if self.baseline else []) + [r.point for r in [*self.others, *self.rows]]

    @property
    def paired(self) -> bool:
        """Some comparison here is of back-to-back pairs (an interleaved design)."""
        return any(c.method == "paired" for c in self.comparisons.values())

    @property
    def blocks(self) -> bool:
        """Some comparison here rests on back-to-back blocks' means."""
        return any(c.method == "blocks" for c in self.comparisons.values())

    @property
    def title(self) -> str:
        return ((f"input {self.band}, " if self.band else "") + f"concurrency {self.concurrency}" + (f", temperature {self.temperature:g}" if self.temperature_swept else "")
                + (f", category {self.category}" if self.category else ""))

    @property
    def best_speedup(self) -> float | None:
        speedups = [r.speedup for r in self.rows if r.speedup is not None and not r.point.scheduled]
        return max(speedups) if speedups else None

    @property
    def pays(self) -> bool:
        """Some fixed lookahead is declared faster than no speculation (single samples: its speedup
        is above 1)."""
        for r in self.rows:
            if r.speedup is None or r.point.scheduled:
                continue
            if (r.verdict == "faster") if r.speedup_interval is not None else r.speedup > 1.0:
                return True
        return False

    @property
    def status(self) -> str | None:
        """Speculation against no speculation here: "faster" (some fixed lookahead is declared faster),
        "slower" (every one is declared slower) or "undecided"; None without a comparison."""
        verdicts = [r.verdict for r in self.rows if r.verdict is not None and not r.point.scheduled]
        if not verdicts:
            return None
        if "faster" in verdicts:
            return "faster"
        return "slower" if all(v == "slower" for v in verdicts) else "undecided"


@dataclass
class Analysis:
    at: list[AtConcurrency]  # by concurrency, ascending
    pays_up_to: int | None  # the largest concurrency at which some lookahead beats no speculation
    stops_paying_at: int | None  # the smallest concurrency from which none does, at every larger one
    noise: Noise | None = None  # the estimate every comparison's between-start term came from (``sweep_noise``)
    # more than one temperature measured: each temperature's own analysis (the fields above: the lowest's)
    by_temperature: list[tuple[float, "Analysis"]] = field(default_factory=list)
    # banded by input length: each band's own analysis (``analysis.bands.InputBand``), by ascending length
    by_band: list[tuple[Any, "Analysis"]] = field(default_factory=list)
    # derived once and kept for every rendering of the analysis (``render.attributions``)
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def reference_temperature(self) -> float:
        """The temperature whose points the headline figures and the lookahead schedule come from."""
        return self.by_temperature[0][0] if self.by_temperature else (self.at[0].temperature if self.at else 0.0)

    def verdict(self) -> str:
        if self.by_band:
            return "; ".join(f"input {band.label}: {sub.verdict()}" for band, sub in self.by_band)
        if self.by_temperature:
            return "; ".join(f"at temperature {t:g}: {sub.verdict()}" for t, sub in self.by_temperature)
        if not self.at or all(a.best_speedup is None for a in self.at):
            others = [f"{r.point.name} against {a.baseline.name} at {a.title}: {r.comparison.text()}, "
                      f"{r.comparison.sentence()}" for a in self.at for r in a.others if r.comparison is not None]
            if others:  # settings without speculation only (an A/A, a server setting swept)
                return "no draft measured; " + "; ".join(others)
            return "no speedup measured (a sweep needs points with and without a draft at the same concurrency)"
        if not self.repeated:
            single = " (single samples: no interval)"
            if self.pays_up_to is None:
                return "speculation does not pay at any measured concurrency" + single
            if self.stops_paying_at is None:
                return f"speculation pays at every measured concurrency (up to {self.at[-1].concurrency}){single}"
            return (f"speculation pays up to concurrency {self.pays_up_to}; from concurrency "
                    f"{self.stops_paying_at} on, no lookahead beats no speculation{single}")
        plain = [a for a in self.at if a.category is None] or self.at
        open_ = [a.concurrency for a in plain if a.status == "undecided"]
        undecided = (f"; undecided at concurrency {', '.join(map(str, open_))}, where the higher median is kept"
                     if open_ else "")
        if self.pays_up_to is None:
            return ("no lookahead is faster than no speculation with 95% confidence at any measured concurrency"
                    + undecided)
        if self.stops_paying_at is None:
            if open_:  # decided up to pays_up_to, undecided somewhere below it
                paying = ", ".join(str(a.concurrency) for a in plain if a.pays)
                return f"speculation pays with 95% confidence at concurrency {paying}{undecided}"
            return (f"speculation pays at every measured concurrency (up to {self.at[-1].concurrency}), "
                    f"with 95% confidence")
        return (f"speculation pays up to concurrency {self.pays_up_to} with 95% confidence; from concurrency "
                f"{self.stops_paying_at} on, no lookahead is decided faster than no speculation" + undecided)

    @property
    def repeated(self) -> bool:
        """Whether the speedups carry intervals (repeated points), or are single samples."""
        return any(r.speedup_interval is not None for a in self.at for r in a.rows)


def _throughput(p: Point | None) -> float:
    return p.output_throughput if p is not None and p.output_throughput is not None else float("-inf")


def label(p: Point, drafts: int = 1) -> str:
    """A setting's name in choices: 'no speculation', 'k=3' (one draft swept) or 'tiny_eagle k=3'."""
    if not p.speculative:
        return "no speculation" + p.setting
    return f"k={p.lookahead}{p.setting}" if drafts <= 1 else p.name


def runs(p: Point) -> tuple[float, ...]:
    """A point's output throughput per counted run (the figure alone when no runs were kept)."""
    values = p.samples.get("output_throughput")
    if values:
        return tuple(values)
    return () if p.output_throughput is None else (p.output_throughput,)


def sequential_rule(points: Sequence[Point]) -> tuple[int, int, float] | None:
    """The rule every point with runs here was measured by until decided, when they share one and
    none has more runs than its looks reach (a merge can add them); else None (a fixed design, or a
    mix, compared at one look)."""
    rules = {p.rule for p in points if runs(p)}
    if len(rules) != 1 or None in rules:
        return None
    (rule,) = rules
    return rule if all(len(runs(p)) <= rule[1] for p in points) else None


def starts_of(points: Iterable[Point]) -> dict[str, tuple[int, ...]]:
    """The points' runs' server starts, for ``stats.compare`` (points of one start left out)."""
    return {p.id: server_starts(p) for p in points if len(set(p.starts)) > 1}


def server_starts(p: Point) -> tuple[int, ...]:
    """Each output-throughput run's server start as a number of its own. In back-to-back blocks no
    speculation's runs of block j beside different candidates came from different servers, all
    tagged start j: there (pair tags and more than one start) a start is the (candidate, block)."""
    if not p.pairs or len(set(p.starts)) < 2 or len(p.pairs) != len(p.starts):
        return p.starts
    seen: dict[tuple[str | None, int], int] = {}
    return tuple(seen.setdefault((tag, s), len(seen) + 1) for tag, s in zip(p.pairs, p.starts))


def blocks_of(base: Point | None, points: Iterable[Point]) -> dict[tuple[str, str], list[list[float]]]:
    """Back-to-back blocks (``stats.compare``'s ``blocks``): for each of ``points`` measured in two
    or more blocks beside ``base`` (its runs tagged with blocks 1.. J as server starts, no
    speculation's runs tagged with it and the block), each block's per-pair ratios, candidate over
    no speculation, run i of each in the order measured."""
    if base is None or not base.pairs or len(base.starts) != len(base.pairs) or len(set(base.starts)) < 2:
        return {}
    base_runs = runs(base)
    out = {}
    for p in points:
        mine = runs(p)
        if len(p.starts) != len(mine) or len(set(p.starts)) < 2:
            continue
        own = sorted(set(p.starts))
        theirs = sorted({s for tag, s in zip(base.pairs, base.starts) if tag == p.id})
        # in the order measured: a merge numbers each place's starts on after the last (per point), so
        # where a candidate had fewer blocks than no speculation in one place the numbers part, not the order
        matched = zip(own, theirs) if len(own) == len(theirs) else ((j, j) for j in own)
        blocks = []
        for j, k in matched:
            xs = [x for x, s in zip(mine, p.starts) if s == j]
            ys = [y for y, tag, s in zip(base_runs, base.pairs, base.starts) if tag == p.id and s == k]
            blocks.append([x / y for x, y in zip(xs, ys)])
        if sum(1 for b in blocks if b) >= 2:
            out[(p.id, base.id)] = blocks
    return out


def back_to_back(base: Point | None, points: Iterable[Point]) -> dict[tuple[str, str], tuple[tuple, tuple]]:
    """The pairs an interleaved design measured (``stats.compare``'s ``back_to_back``): for each of
    ``points`` whose runs alternated with ``base``'s, (its runs, the baseline runs paired with them,
    in order)."""
    if base is None or not base.pairs:
        return {}
    out = {}
    for p in points:
        mine = tuple(v for v, tag in zip(runs(base), base.pairs) if tag == p.id)
        if mine:
            out[(p.id, base.id)] = (runs(p), mine)
    return out


def recommend(points: Sequence[Point], base: Point | None, drafts: int = 1,
              comparisons: Mapping[tuple[str, str], Comparison] | None = None, noise: Noise | None = None) -> Pick:
    """What to deploy among one draft's fixed lookaheads and no speculation (``base``).

    The setting with the highest median output throughput among those no other is declared faster
    than (``comparisons``: the concurrency's family; computed over these settings alone when not
    given), on equal medians the cheaper (no speculation, then the smaller lookahead). It is
    decided when it is declared faster than every other, else marked undecided: the higher median
    is the choice with the smaller expected loss under symmetric noise and a loss linear in
    throughput, so an interval spanning 1 never turns it into no speculation.
    """
    spec = [p for p in points if p.speculative and not p.scheduled and p.output_throughput is not None]
    measured = base is not None and base.output_throughput is not None
    candidates = sorted(([base] if measured else []) + spec, key=lambda p: (p.speculative, p.lookahead or 0))
    if not candidates:
        return Pick(None, None, {})
    if comparisons is None:
        comparisons = compare({p.id: runs(p) for p in candidates}, noise=noise, starts=starts_of(candidates))
    beaten = {q.id for q in candidates for c in candidates
              if c.id != q.id and comparisons[(c.id, q.id)].verdict == "faster"}
    best = max((p for p in candidates if p.id not in beaten), key=_throughput)  # first of equal maxima
    why = None
    cheaper = [q for q in candidates if q.id not in beaten and (q.speculative, q.lookahead or 0) <
               (best.speculative, best.lookahead or 0) and comparisons[(q.id, best.id)].verdict == EQUIVALENT]
    if cheaper:  # candidates are ordered cheapest first: no speculation, then the smaller lookahead
        top, best = best, cheaper[0]
        margin = comparisons[(best.id, top.id)].margin or 0.0
        why = (f"equivalent within +-{100 * margin:g}% to {label(top, drafts)}, the highest median (two one-sided "
               f"tests): the {'smaller lookahead' if best.speculative else 'setting without speculation'} is taken")
    against = {label(q, drafts): comparisons[(best.id, q.id)] for q in candidates if q.id != best.id}
    single = bool(against) and all(c.interval is None for c in against.values())
    return Pick(best, label(best, drafts), against, single, why)


def analyse_concurrency(concurrency: int, points: list[Point], category: str | None = None,
                        noise: Noise | None = None, temperature: float = 0.0,
                        margin: float | None = None, block_rule: tuple[int, int, float] | None = None) -> AtConcurrency:
    bases = [p for p in points if not p.speculative]
    base = bases[0] if bases else None
    base_measured = base if base is not None and base.output_throughput is not None else None
    spec = sorted((p for p in points if p.speculative), key=lambda p: (p.draft, p.lookahead))
    fixed = [p for p in spec if not p.scheduled and p.output_throughput is not None]
    # the first setting without speculation is the baseline (as the sequential rule takes it); the
    # others are compared with it like candidates
    others = [p for p in bases[1:] if p.output_throughput is not None] if base_measured else []
    family = ([base_measured] if base_measured else []) + others + fixed
    rule = sequential_rule(family)
    confidence = rule[2] if rule else block_rule[2] if block_rule else CONFIDENCE
    comparisons = compare({p.id: runs(p) for p in family}, confidence, noise,
                          starts_of(family), rule[:2] if rule else None, back_to_back(base_measured, fixed), margin,
                          blocks_of(base_measured, fixed), block_rule[:2] if block_rule and not rule else None)
    fits: dict[str, Fit] = {}
    rows: list[Row] = []
    for p in spec:
        against = None
        if base_measured is not None and p.output_throughput is not None:
            # a point measured under a derived schedule is compared on its own, outside the family
            own = (compare({p.id: runs(p), base.id: runs(base)}, noise=noise, starts=starts_of([p, base]), margin=margin)
                   if p.scheduled else comparisons)
            against = own[(p.id, base.id)]
        speedup = against.ratio if against is not None else None
        bound = p.acceptance_length if p.acceptance_length is not None else (
            speedup_bound(p.rates) if p.rates else None)
        rows.append(Row(p, speedup, bound, efficiency(speedup, bound), None, against))
    drafts = list(dict.fromkeys(p.draft for p in spec if not p.scheduled))
    choices: dict[str, Pick] = {}
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
        choices[draft] = recommend([r.point for r in mine], base, len(drafts), comparisons)
    pick = recommend(fixed, base, len(drafts), comparisons)
    fastest = max((p for p in points if p.output_throughput is not None and not p.scheduled), key=_throughput,
                  default=None)
    by_acc = max((p for p in spec if p.acceptance_length is not None and not p.scheduled),
                 key=lambda p: p.acceptance_length, default=None)
    against_base = [Row(p, comparisons[(p.id, base.id)].ratio, None, None, None, comparisons[(p.id, base.id)])
                    for p in others]
    return AtConcurrency(concurrency, base, rows, pick.point or base, by_acc, fits, choices, fastest, category, pick,
                         comparisons, noise, rule, temperature, others=against_base)


def sweep_noise(points: Iterable[Point], prior: Noise | None = None) -> Noise:
    """The noise a sweep's comparisons carry: the components estimated from its own runs (one-way
    random-effects ANOVA on log output throughput, pooled over the settings; the between-start part
    only from settings measured over two or more server starts), combined by df with ``prior`` (a
    profile, or the hardware config's recorded figures); provisional without either
    (``analysis.noise.pooled``). Back-to-back blocks add the paired within-start component (each
    block's per-pair ratios, ``blocks_of``)."""
    points = list(points)
    bases = [p for p in points if not p.speculative]
    paired = [block for base in bases for blocks in blocks_of(base, points).values() for block in blocks if block]
    return pooled(prior, {p.id: runs(p) for p in points}, {p.id: server_starts(p) for p in points}, paired)


def analyse(points: Iterable[Point], prior: Noise | None = None, noise: Noise | None = None,
            margin: float | None = None, block_rule: tuple[int, int, float] | None = None) -> Analysis:
    """Group by prompt category and concurrency, compare with no speculation in the same group, fit
    the model, find where speculation stops paying (over the points without a category when there
    are any, else over every category). Points at several sampling temperatures are analysed per
    temperature, each on its own (``by_temperature``); the headline fields are the lowest's. Every
    comparison carries ``noise``, by default the sweep's (``sweep_noise`` of all the points with
    ``prior``); ``margin``: two settings within +-margin of each other are declared equivalent;
    ``block_rule`` (min_blocks, max_blocks, confidence): back-to-back blocks added until decided
    (``stats.compare``)."""
    points = list(points)
    noise = sweep_noise(points, prior) if noise is None else noise
    temperatures = sorted({p.temperature for p in points})
    if len(temperatures) > 1:
        subs = [(t, analyse([p for p in points if p.temperature == t], noise=noise, margin=margin, block_rule=block_rule))
                for t in temperatures]
        at = sorted((dataclasses.replace(a, temperature_swept=True) for _, sub in subs for a in sub.at),
                    key=lambda a: (a.category or "", a.concurrency, a.temperature))
        first = subs[0][1]
        return Analysis(at, first.pays_up_to, first.stops_paying_at, noise, subs)
    by_c: dict[tuple[str, int], list[Point]] = {}
    for p in points:
        by_c.setdefault((p.category or "", p.concurrency), []).append(p)
    temperature = temperatures[0] if temperatures else 0.0
    at = [analyse_concurrency(c, by_c[(cat, c)], cat or None, noise, temperature, margin, block_rule)
          for cat, c in sorted(by_c)]
    plain = [a for a in at if a.category is None] or at
    paying = [a.concurrency for a in plain if a.pays]
    pays_up_to = max(paying) if paying else None
    stops = None
    if pays_up_to is not None:
        later = sorted((a for a in plain if a.concurrency > pays_up_to and a.best_speedup is not None),
                       key=lambda a: a.concurrency)
        stops = later[0].concurrency if later else None
    return Analysis(at, pays_up_to, stops, noise)


def temperature_findings(analysis: Analysis) -> list[str]:
    """One sentence per concurrency (points without a category) measured at several temperatures:
    whether the temperature changes what to deploy there, and how."""
    if not analysis.by_temperature:
        return []
    by_c: dict[int, list[AtConcurrency]] = {}
    for a in analysis.at:
        if a.category is None and a.pick is not None and a.pick.point is not None:
            by_c.setdefault(a.concurrency, []).append(a)
    lines = []
    for c, groups in sorted(by_c.items()):
        if len(groups) < 2:
            continue
        picks = [(a.temperature, a.pick.label or label(a.pick.point), a.pick.decided) for a in groups]
        said = ", ".join(f"{name} at temperature {t:g}{'' if decided else ' (undecided)'}" for t, name, decided in picks)
        if len({name for _, name, _ in picks}) > 1:
            lines.append(f"concurrency {c}: temperature changes the recommendation: {said}")
        else:
            lines.append(f"concurrency {c}: temperature does not change the recommendation ({said})")
    return lines
