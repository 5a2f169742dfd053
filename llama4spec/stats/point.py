"""A measured point (one benchmark's figures and runs), and what its runs say: the bound free drafting
would reach, its runs' server starts, and the back-to-back pairs and blocks it was measured in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from llama4spec.results.requests import RequestRow
from llama4spec.stats.interval import Interval, interval


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
    # (``sequential.allocate``) stopped it on
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
