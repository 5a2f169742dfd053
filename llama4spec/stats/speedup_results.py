"""What the speedup model finds: each point against no speculation (``Row``), the cost fit of a draft
(``Fit``), what to deploy (``Pick``), and every concurrency's findings (``AtConcurrency``,
``Analysis``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from llama4spec.stats.comparison import EQUIVALENT, Comparison
from llama4spec.stats.cost_fit import CostFit
from llama4spec.stats.interval import Interval
from llama4spec.stats.noise import Noise
from llama4spec.stats.point import Point


@dataclass
class Row:
    point: Point
    speedup: float | None  # measured over no speculation: Welch's ratio of geometric means (single samples: of medians)
    bound: float | None  # the mean acceptance length: the speedup with free drafting
    efficiency: float | None  # speedup / bound
    predicted: float | None  # the fitted model's speedup
    comparison: Comparison | None = None  # against no speculation at the same concurrency

    @property
    def speedup_interval(self) -> Interval | None:
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
    noise: Noise | None = None  # the estimate its comparisons' between-start term came from (``points_noise``)
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
        return ((f"input {self.band}, " if self.band else "") + f"concurrency {self.concurrency}"
                + (f", temperature {self.temperature:g}" if self.temperature_swept else "")
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
    noise: Noise | None = None  # the estimate every comparison's between-start term came from (``points_noise``)
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
