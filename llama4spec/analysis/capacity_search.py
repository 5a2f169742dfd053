"""Request capacity under a latency SLO: the largest request rate at which the SLO holds on one
server, found by a search over open-loop probes (pure, no I/O).

The search. A probe measures one request rate in runs (each one open-loop benchmark). After its
first ``lean_runs`` runs (default 1) a probe *leans* one way (its mean attainment at or above the
target, or below); from ``min_runs`` runs on, after each run its verdict is ``holds``, ``fails``,
``undecided`` (``max_runs`` runs and no decision) or still open. The search moves on leanings, so a
probe that ends up neither bound costs ``lean_runs`` runs: from ``start`` it doubles the rate while
the SLO holds (halves it while it fails) until a rate L that holds lies below a rate U that fails,
then probes the geometric midpoint of the widest gap until every gap is within ``precision``
(U / L - 1). Then it *verifies*: L and U get runs until their verdicts are reached; a verdict
against the leaning moves the bounds and the search goes on from there. An undecided rate is
neither: its attainment lies within the runs' noise of the target, and so, the curve being
continuous, does the attainment of rates near it; a gap that ends at an undecided rate is narrowed
only while wider than ``UNDECIDED_ZONE`` x ``precision`` (rates nearer would be undecided too, at
``max_runs`` runs each; longer runs, not more of them, would narrow it), and the undecided rate
stays inside the reported interval [L, U], widening it. Last, one probe at ``confirm`` x U checks
that the SLO does not hold again above the failure (unless a probe at least halfway there already
did; verified only when it leans to holding): a rate shown to hold above one shown to fail is a
*cliff*, said as such, and the capacity reported stays the one below the first failure. The state is the probes alone (``Search``): ``next_probe`` is a function of
them, so a resumed search replays its recorded probes and goes on.

The test at one rate. Each run contributes one observation, its attainment (good requests over
requests sent): requests within a run are correlated by queueing, runs at one rate are taken as
exchangeable. The one-sided question "is the mean attainment above the target?" and its mirror
("below?") are tested with Student's t on the runs (``Attainment``), looked at after every run from
``min_runs`` to ``max_runs`` with ``decide``'s look table: Bonferroni-weighted looks (alpha spending,
``early_share`` for the looks before the last), anytime p-values, so a verdict, once reached,
stands whenever the runs stop or however they are spread over the search.

What is controlled. At any true attainment only one of the two verdicts can be wrong (holds when
it is below the target, fails when at or above), so each verdict is wrong with probability at
most ``alpha = 1 - confidence`` over all its looks; no Holm step is needed within a rate. The
interval [L, U] rests on two verdicts and misses the capacity only when one of them is wrong; since
the rates are chosen from earlier runs, the bound stated for a whole search is Bonferroni over its
verdicts (``Capacity.error_bound``: alpha x verdicts, at most 1). It assumes attainment falls as the
rate rises (a cliff is reported, not assumed away) and holds for this server start; t assumes
roughly normal per-run attainments (benchmarks/capacity_search.py measures the error rates).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Mapping

import numpy as np

from llama4spec.errors import UserError
from llama4spec.figures import SLO_METRICS as METRICS  # the latencies an SLO may bind (ttft, tpot, e2el)
from llama4spec.figures import SLO_NAMES as NAMES
from llama4spec.files import MAX_COUNT, count, number, shown
from llama4spec.results.bench import BenchRecord
from llama4spec.analysis.decide import CONFIDENCE, Estimate, interval_at, looks

MAX_RATE = 10_000.0  # requests per second: the highest rate a probe may ask for
MIN_RATE = 0.01  # the lowest: one request every 100 s
MAX_PROBES = 64
PRECISION = 0.05  # relative: stop when U / L - 1 is at most this
MIN_PROBE_RUNS = 2
LEAN_RUNS = 1  # runs before a probe leans (the search moves on it); a verdict needs MIN_PROBE_RUNS
MAX_PROBE_RUNS = 6
RUNS_CAP = 20  # the largest max_runs accepted
# Share of alpha a capacity probe spends on its looks before the last (not the sweep's
# ``decide.EARLY_LOOKS_ALPHA``): a clear rate stops early; the last look keeps
# 75% (z 1.78 against 1.65 at 95%). benchmarks/capacity_search.py measures error rates and runs.
PROBE_EARLY_ALPHA = 0.25
# A gap beside an undecided rate is narrowed only while wider than this many times the precision:
# rates that near it are as undecided (benchmarks/capacity_search.py: the runs and widths it gives).
UNDECIDED_ZONE = 4
CONFIRM = 1.5  # the confirming probe: this many times the lowest failing rate
ROUND_DIGITS = 4  # significant digits of a probed rate (the rate recorded is the rate sent)
KIND = "llama4spec.capacity_search"

OPEN, HOLDS, FAILS, UNDECIDED = "open", "holds", "fails", "undecided"
LEANS_HOLDS, LEANS_FAILS = "leans to holding", "leans to failing"


# -- what the wiring supplies ---------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """One benchmark run at a probe's rate."""

    attainment: float  # good requests / requests sent, in [0, 1]
    requests: int  # requests sent
    binding: str | None = None  # the metric whose attainment quantile is closest to (or over) its threshold
    output_throughput: float | None = None  # output tokens per second
    client_cpu_s: float | None = None  # the CPU time the load generator took (it shares the machine's cores)
    # metric -> share of requests within that metric's threshold alone (not hashed: a dict)
    per_metric: dict[str, float] | None = field(default=None, hash=False)


def run_of(record: BenchRecord, thresholds: Mapping[str, float], target: float) -> Run:
    """One benchmark run at a probe's rate as the search reads it: its attainment (with the
    client's queue time when the run kept per-request data, else vLLM's goodput over requests
    sent), requests sent, the metric that binds (``binding_metric`` on vLLM's percentile at the
    target, P95 for 0.95) and output throughput. UserError for a run without goodput."""
    attainment = record.attainment_with_queue(thresholds)
    if attainment is None:
        attainment = record.attainment
    if attainment is None or not record.requests_sent:
        raise UserError(f"benchmark {record.label}: no goodput in its result; a probe needs vLLM's --goodput")
    percent = round(100 * target, 6)
    quantiles = {m: record.percentile_ms(m, percent) for m in thresholds}
    return Run(attainment, record.requests_sent, binding_metric(quantiles, thresholds),
               record.figure("output_throughput"), record.client_cpu_s, record.shares_with_queue(thresholds))


@dataclass(frozen=True)
class Probe:
    rate: float
    runs: tuple[Run, ...] = ()
    why: str = ""  # why the search went to this rate


@dataclass(frozen=True)
class Settings:
    start: float  # the first rate probed (requests per second)
    target: float = 0.95  # the SLO's attainment
    precision: float = PRECISION
    cap: float = MAX_RATE
    floor: float = MIN_RATE
    min_runs: int = MIN_PROBE_RUNS
    max_runs: int = MAX_PROBE_RUNS
    lean_runs: int = LEAN_RUNS
    max_probes: int = MAX_PROBES
    confidence: float = CONFIDENCE
    confirm: float | None = CONFIRM  # None: no confirming probe (no cliff can be seen above U)
    early_share: float = PROBE_EARLY_ALPHA


@dataclass(frozen=True)
class Search:
    settings: Settings
    probes: tuple[Probe, ...] = ()


def _number(value: Any) -> bool:
    """A finite number within what a record holds (``files.number``, the reader of every figure)."""
    return number(value) is not None


def _count(value: Any) -> bool:
    return count(value, -MAX_COUNT) is not None


def settings_problems(s: Settings) -> list[str]:
    """Every problem with a search's settings, each one line."""
    return [*rate_problems(s), *precision_problems(s), *probe_problems(s)]


def rate_problems(s: Settings) -> list[str]:
    """The problems of the rates a search may probe (highest, start, lowest) and of its attainment."""
    problems = []
    cap_ok = _number(s.cap) and 0 < s.cap <= MAX_RATE
    if not cap_ok:
        problems.append(f"the highest rate must lie in (0, {MAX_RATE:g}] requests per second, not {s.cap}")
    if not (_number(s.start) and s.start > 0):
        problems.append(f"the start rate must be above 0 requests per second, not {s.start}")
    elif cap_ok and s.start > s.cap:
        problems.append(f"the start rate {s.start:g} is above the highest rate {s.cap:g}; start at or below it")
    if not (_number(s.floor) and MIN_RATE <= s.floor <= MAX_RATE):
        problems.append(f"the lowest rate must lie in [{MIN_RATE:g}, {MAX_RATE:g}] requests per second, not {s.floor}")
    elif _number(s.start) and 0 < s.start < s.floor:
        problems.append(f"the start rate {s.start:g} is below the lowest rate {s.floor:g}; start at or above it")
    if not (_number(s.target) and 0 < s.target < 1):
        problems.append(f"a capacity search needs an attainment in (0, 1), not {s.target}: no number of runs "
                        f"shows that every request of a rate is good")
    return problems


def precision_problems(s: Settings) -> list[str]:
    """The problem of a bisecting search's precision (U / L - 1 at which it stops)."""
    if not (_number(s.precision) and 0.01 <= s.precision <= 1):
        return [f"the precision must lie in [0.01, 1] (relative), not {s.precision}"]
    return []


def probe_problems(s: Settings) -> list[str]:
    """The problems of the runs a probe takes, the probes, the confidence and the confirming factor."""
    problems = []
    if not (_count(s.min_runs) and _count(s.max_runs) and 2 <= s.min_runs <= s.max_runs <= RUNS_CAP):
        problems.append(f"runs per probe must satisfy 2 <= min <= max <= {RUNS_CAP}, not {s.min_runs} and {s.max_runs}")
    if not (_count(s.lean_runs) and 1 <= s.lean_runs <= (s.min_runs if _count(s.min_runs) else RUNS_CAP)):
        problems.append(f"runs before a probe leans must satisfy 1 <= lean <= min runs, not {s.lean_runs}")
    if not (_count(s.max_probes) and 1 <= s.max_probes <= MAX_PROBES):
        problems.append(f"the probes must number 1 to {MAX_PROBES}, not {s.max_probes}")
    if not (_number(s.confidence) and 0.5 < s.confidence < 1):
        problems.append(f"the confidence must lie in (0.5, 1), not {s.confidence}")
    if s.confirm is not None and not (_number(s.confirm) and s.confirm > 1):
        problems.append(f"the confirming factor must be above 1 (or none), not {s.confirm}")
    if not (_number(s.early_share) and 0 <= s.early_share < 1):
        problems.append(f"the early share of alpha must lie in [0, 1), not {s.early_share}")
    return problems


def begin(settings: Settings) -> Search:
    """A search with no probes yet; UserError naming every problem with its settings."""
    problems = settings_problems(settings)
    if problems:
        raise UserError(*problems)
    return Search(settings)


def _run_problems(run: Run) -> list[str]:
    problems = []
    if not (_number(run.attainment) and 0 <= run.attainment <= 1):
        problems.append(f"a run's attainment must lie in [0, 1], not {shown(run.attainment)}")
    if count(run.requests, 1) is None:
        problems.append(f"a run's requests sent must be a count from 1 to {MAX_COUNT:.0e}, not {shown(run.requests)}")
    if run.binding is not None and run.binding not in METRICS:
        problems.append(f"a run's binding metric must be one of {', '.join(METRICS)}, not {run.binding!r}")
    if run.output_throughput is not None and not (_number(run.output_throughput) and run.output_throughput >= 0):
        problems.append(f"a run's output throughput must be a number >= 0, not {run.output_throughput}")
    if run.client_cpu_s is not None and not (_number(run.client_cpu_s) and run.client_cpu_s >= 0):
        problems.append(f"a run's client CPU time must be a number >= 0, not {run.client_cpu_s}")
    if run.per_metric is not None and not (isinstance(run.per_metric, Mapping) and all(
            m in METRICS and _number(v) and 0 <= v <= 1 for m, v in run.per_metric.items())):
        problems.append(f"a run's per-metric shares must map {', '.join(METRICS)} to numbers in [0, 1], "
                        f"not {shown(run.per_metric)}")
    return problems


def record_run(search: Search, rate: float, run: Run) -> Search:
    """The search with ``run`` (measured at ``rate``) added to the probe at that rate, or as a new
    probe. ValueError for a run that cannot be one, or for a rate whose probe has stopped."""
    problems = _run_problems(run)
    if not (_number(rate) and 0 < rate <= MAX_RATE):
        problems.append(f"a probe's rate must lie in (0, {MAX_RATE:g}], not {rate}")
    if problems:
        raise ValueError("; ".join(problems))
    probes = list(search.probes)
    for i, probe in enumerate(probes):
        if probe.rate == rate:
            state = verdict(search.settings, probe).state
            if state != OPEN:
                raise ValueError(f"the probe at {rate:g} req/s has stopped ({state}); it takes no more runs")
            probes[i] = replace(probe, runs=(*probe.runs, run))
            return Search(search.settings, tuple(probes))
    went = move(search)
    why = went.reason if went.rate == rate else "a rate the caller chose"
    return Search(search.settings, (*probes, Probe(float(rate), (run,), why)))


# -- the test at one rate -------------------------------------------------------------------------

@dataclass(frozen=True)
class Attainment:
    """Per-run attainment against the target (a ``decide.Statistic``; ``b`` holds the target as runs
    of no spread): Student's t on the mean of the n runs, on n - 1 degrees of freedom, with the
    per-run variance taken as at least the binomial one at the target,
    ``target (1 - target) / requests`` (runs that happen to agree, or all attain 1, do not make it
    vanish)."""

    requests: int
    method: ClassVar[str] = "attainment"

    def values(self, runs: np.ndarray) -> np.ndarray:
        runs = np.asarray(runs, dtype=float)
        return np.where((runs >= 0) & (runs <= 1), runs, np.nan)

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        n = a.shape[-1]
        target = b.mean(-1)
        variance = np.maximum(a.var(-1, ddof=1), target * (1 - target) / self.requests)
        return Estimate(a.mean(-1) - target, np.sqrt(variance / n), np.full(np.shape(variance), n - 1.0))

    def scale(self, x: np.ndarray) -> np.ndarray:
        return x


@dataclass(frozen=True)
class Verdict:
    state: str  # open, holds, fails or undecided
    runs: int  # the runs the verdict rests on (a decided probe: those up to its deciding look)
    attainment: float | None  # their mean
    low: float | None  # the attainment's two-sided interval at ``level`` (the deciding look's)
    high: float | None
    level: float | None
    p_holds: float  # anytime p-value of "the mean attainment is above the target"
    p_fails: float  # of "below the target"
    binding: str | None  # the metric most runs named


@functools.lru_cache(maxsize=4096)
def verdict(settings: Settings, probe: Probe) -> Verdict:
    """Where one probe stands (the rule: the module docstring)."""
    s, runs = settings, probe.runs[:settings.max_runs]
    n = len(runs)
    binding = _binding(runs)
    if n < s.min_runs:
        mean = float(np.mean([r.attainment for r in runs])) if runs else None
        return Verdict(OPEN, n, mean, None, None, None, 1.0, 1.0, binding)
    statistic = Attainment(min(r.requests for r in runs))
    values = np.full((1, 2, s.max_runs), np.nan)
    values[0, 0, :n] = [r.attainment for r in runs]
    values[0, 1, :] = s.target
    table = looks(values, statistic, s.min_runs, s.max_runs, early_share=s.early_share)
    alpha = 1.0 - s.confidence
    state, look = (UNDECIDED if n >= s.max_runs else OPEN), n
    for at in range(s.min_runs, n + 1):
        k = at - s.min_runs
        if table.anytime_up[0, 0, k] <= alpha or table.anytime_down[0, 0, k] <= alpha:
            state, look = (HOLDS if table.anytime_up[0, 0, k] <= alpha else FAILS), at
            break
    k = look - s.min_runs
    est = Estimate(*(getattr(table.estimate, f)[0, 0, k] for f in ("center", "se", "df")))
    if state == OPEN and n > s.min_runs and _futile(est, n, s, alpha * float(table.weights[-1])):
        state = UNDECIDED
    level = 1.0 - 2.0 * alpha * float(table.weights[k])
    interval = interval_at(statistic, est, level)
    return Verdict(state, look, float(est.center) + s.target, max(0.0, interval.low + s.target),
                   min(1.0, interval.high + s.target), level, float(table.anytime_up[0, 0, k]),
                   float(table.anytime_down[0, 0, k]), binding)


def _futile(est: Estimate, n: int, s: Settings, last_level: float) -> bool:
    """Were the mean and the per-run spread to stay as measured on ``n`` runs, not even the last
    look (``max_runs`` runs, one-sided ``last_level``) would decide: the probe stops undecided now.
    It never makes a verdict, so the error rates stand."""
    from scipy import special

    projected = float(est.se) * math.sqrt(n / s.max_runs)
    return abs(float(est.center)) < float(special.stdtrit(s.max_runs - 1, 1.0 - last_level)) * projected


def _binding(runs: tuple[Run, ...]) -> str | None:
    """The metric most runs named (a tie: the one named last)."""
    named = [r.binding for r in runs if r.binding is not None]
    return max(reversed(named), key=named.count) if named else None


def binding_metric(quantiles: Mapping[str, float | None], thresholds: Mapping[str, float]) -> str | None:
    """The constraint that binds in one run: of the metrics the SLO bounds, the one whose quantile at
    the SLO's attainment (P95 for 0.95) is highest relative to its threshold (over it, or closest).
    ``quantiles``: metric -> ms (None: not reported)."""
    ratios = {m: q / t for m, t in thresholds.items()
              if m in METRICS and _number(t) and t > 0 and _number(q := quantiles.get(m))}
    return max(ratios, key=ratios.get) if ratios else None


# -- the search -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Move:
    rate: float | None  # the rate of the next run; None: the search is over
    reason: str  # why the search goes there (or why it stopped)


def standing(settings: Settings, probe: Probe) -> str:
    """A probe's verdict, or once it has ``lean_runs`` runs and none yet, its leaning."""
    v = verdict(settings, probe)
    if v.state != OPEN or v.runs < settings.lean_runs:
        return v.state
    return LEANS_HOLDS if v.attainment >= settings.target else LEANS_FAILS  # type: ignore[operator]


@dataclass(frozen=True)
class _Bounds:
    standing: dict[float, str]
    low: float | None  # L: the highest rate that holds (or leans so) below U
    high: float | None  # U: the lowest rate that fails (or leans so)

    def rates(self, *states: str) -> list[float]:
        return sorted(r for r, st in self.standing.items() if st in states)


def _bounds(search: Search) -> _Bounds:
    states = {p.rate: standing(search.settings, p) for p in search.probes}
    down = sorted(r for r, st in states.items() if st in (FAILS, LEANS_FAILS))
    high = down[0] if down else None
    below = [r for r, st in states.items() if st in (HOLDS, LEANS_HOLDS) and (high is None or r < high)]
    return _Bounds(states, max(below) if below else None, high)


def _round(rate: float) -> float:
    return float(f"{rate:.{ROUND_DIGITS}g}")


def _word(state: str) -> str:
    return {HOLDS: "held", FAILS: "failed", UNDECIDED: "was undecided"}.get(state, state)


def _new_rate(search: Search, b: _Bounds) -> Move:
    """Where the bracket or the bisection goes next on the leanings; rate None: nowhere left."""
    s, probed = search.settings, set(b.standing)
    if b.high is None:
        top = max(b.rates(HOLDS, LEANS_HOLDS, UNDECIDED))
        if top >= s.cap:
            return Move(None, f"stopped: nothing failed up to the highest rate, {s.cap:g}")
        return Move(min(_round(2 * top), s.cap), f"up from {top:g}, which {_word(b.standing[top])}")
    if b.low is None:
        bottom = min(b.rates(FAILS, LEANS_FAILS, UNDECIDED))
        if bottom <= s.floor:
            return Move(None, f"stopped: nothing held down to the lowest rate, {s.floor:g}")
        return Move(max(_round(bottom / 2), s.floor), f"down from {bottom:g}, which {_word(b.standing[bottom])}")
    inside = [r for r in b.rates(UNDECIDED) if b.low < r < b.high]
    gaps = [(b.low, inside[0]), (inside[-1], b.high)] if inside else [(b.low, b.high)]
    # Beside an undecided rate, attainment is within the runs' noise of the target too: a gap that
    # ends there is narrowed only to UNDECIDED_ZONE x the precision.
    for lo, hi in sorted(gaps, key=lambda g: g[1] / g[0], reverse=True):
        mid = _round(math.sqrt(lo * hi))
        enough = s.precision * (UNDECIDED_ZONE if UNDECIDED in (b.standing[lo], b.standing[hi]) else 1)
        if hi / lo - 1 > enough and lo < mid < hi and mid not in probed:
            return Move(mid, f"between {lo:g}, which {_word(b.standing[lo])}, and {hi:g}, which "
                             f"{_word(b.standing[hi])}")
    if inside:
        return Move(None, f"stopped: undecided at {', '.join(f'{r:g}' for r in inside)}, between {b.low:g} and "
                          f"{b.high:g}; a narrower interval needs longer runs, not more of them")
    return Move(None, f"stopped: within {s.precision:.0%}, between {b.low:g} and {b.high:g}")


def move(search: Search) -> Move:
    """The next run's rate and why (the rule: the module docstring)."""
    s = search.settings
    if not search.probes:
        return Move(min(_round(s.start), s.cap), "start")
    for probe in search.probes:
        v = verdict(s, probe)
        if v.state == OPEN and v.runs < s.lean_runs:
            return Move(probe.rate, f"run {v.runs + 1} of the first {s.lean_runs} at {probe.rate:g}")
    b = _bounds(search)
    new = _new_rate(search, b)
    if new.rate is not None and len(search.probes) < s.max_probes:
        return new
    check = [r for r in (b.low, b.high) if r is not None and b.standing[r] in (LEANS_HOLDS, LEANS_FAILS)]
    if check:
        runs = {p.rate: len(p.runs) for p in search.probes}
        rate = min(check, key=lambda r: runs[r])
        n = runs[rate]
        return Move(rate, f"verifying {rate:g}, which {b.standing[rate]} after {n} run{'' if n == 1 else 's'}")
    above = [r for r in b.standing if b.high is not None and r > b.high]
    halfway = 1 + ((s.confirm or 1) - 1) / 2
    if s.confirm is not None and b.high is not None and b.high < s.cap and not any(r >= b.high * halfway for r in above):
        if len(search.probes) < s.max_probes:
            return Move(min(_round(b.high * s.confirm), s.cap), f"confirming the failure above {b.high:g}")
    for rate in above:
        if b.standing[rate] == LEANS_HOLDS:
            return Move(rate, f"verifying {rate:g}: it leans to holding above {b.high:g}, which failed")
    if new.rate is not None:
        return Move(None, f"stopped: {s.max_probes} probes, the most allowed")
    return new


def next_probe(search: Search) -> float | None:
    """The rate of the next benchmark run, or None when the search is over."""
    return move(search).rate


# -- the answer for one server --------------------------------------------------------------------

@dataclass(frozen=True)
class Capacity:
    """One server's request capacity: the largest rate at which the SLO was shown to hold."""

    rate: float | None  # L (None: it held at no rate probed)
    high: float | None  # U, the lowest rate shown to fail (None: none failed)
    output_throughput: float | None  # output tokens per second, the mean of the runs at L
    binding: str | None  # at U (at L when nothing failed)
    done: bool  # the search is over: L and U are verdicts (while it runs, they may be leanings)
    stopped: str  # why the search ended, or where it goes next
    cliff: tuple[float, float] | None = None  # (a rate that failed, a higher rate at which the SLO held)
    undecided: tuple[float, ...] = ()  # rates inside [L, U] left undecided
    probes: int = 0
    runs: int = 0
    alpha: float = 1 - CONFIDENCE  # each verdict's error rate
    error_bound: float = 0.0  # the whole interval's: Bonferroni over the verdicts (alpha x verdicts)
    notes: list[str] = field(default_factory=list)


def capacity(search: Search) -> Capacity:
    """The answer a search gives so far (final once ``done``)."""
    s, nxt, b = search.settings, move(search), _bounds(search)
    by_rate = {p.rate: p for p in search.probes}
    throughputs = [r.output_throughput for r in (by_rate[b.low].runs if b.low is not None else ())
                   if r.output_throughput is not None]
    where = by_rate.get(b.high if b.high is not None else b.low)  # type: ignore[arg-type]
    failed, held = b.rates(FAILS), b.rates(HOLDS)
    cliff = next(((f, max(h for h in held if h > f)) for f in failed if any(h > f for h in held)), None)
    undecided = tuple(r for r in b.rates(UNDECIDED) if b.low is not None and b.high is not None and b.low < r < b.high)
    notes = []
    if cliff:
        notes.append(f"cliff: the SLO failed at {cliff[0]:g} req/s but held at {cliff[1]:g} req/s; the capacity "
                     f"given is the one below the first failure")
    if undecided:
        notes.append(f"undecided at {', '.join(f'{r:g}' for r in undecided)} req/s: the interval spans them")
    alpha = 1 - s.confidence
    decided = len(failed) + len(held)
    return Capacity(b.low, b.high, float(np.mean(throughputs)) if throughputs else None,
                    verdict(s, where).binding if where else None, nxt.rate is None, nxt.reason, cliff, undecided,
                    len(search.probes), sum(len(p.runs) for p in search.probes), alpha, min(1.0, alpha * decided),
                    notes)


# -- search.json ----------------------------------------------------------------------------------

def to_json(search: Search) -> dict[str, Any]:
    """The search as a ``search.json``: its settings, every probe (rate, runs, verdict, attainment
    with its interval, binding metric, why the search went there), what comes next, the answer."""
    probes = []
    for probe in search.probes:
        v = verdict(search.settings, probe)
        probes.append({"rate": probe.rate, "why": probe.why, "verdict": standing(search.settings, probe),
                       "attainment": v.attainment, "interval": None if v.low is None else [v.low, v.high],
                       "level": v.level, "p_holds": v.p_holds, "p_fails": v.p_fails, "binding": v.binding,
                       "runs": [asdict(r) for r in probe.runs]})
    nxt = move(search)
    return {"kind": KIND, "version": 1, "settings": asdict(search.settings), "probes": probes,
            "next": {"rate": nxt.rate, "why": nxt.reason}, "capacity": asdict(capacity(search))}


def from_json(data: Any, settings: Settings | None = None) -> Search:
    """A search read back from ``to_json``'s output (its probes and runs; the verdicts are
    recomputed), under ``settings`` when given (a resumed search's own), else the recorded ones.
    UserError naming the first thing that cannot be one."""
    if not isinstance(data, Mapping) or data.get("kind") != KIND:
        raise UserError(f"search.json: not a capacity search (kind {KIND!r} expected)")
    if settings is None:
        recorded = data.get("settings")
        if not isinstance(recorded, Mapping) or not set(recorded) <= set(Settings.__dataclass_fields__) \
                or "start" not in recorded:
            raise UserError("search.json: its settings are missing or hold unknown keys")
        settings = Settings(**dict(recorded))
    problems = settings_problems(settings)
    if problems:
        raise UserError(*(f"search.json: {p}" for p in problems))
    probes = data.get("probes")
    if not isinstance(probes, list) or len(probes) > MAX_PROBES:
        raise UserError(f"search.json: 'probes' must be a list of at most {MAX_PROBES}")
    kept: list[Probe] = []
    for i, probe in enumerate(probes, 1):
        rate, runs, why = (probe.get(k) if isinstance(probe, Mapping) else None for k in ("rate", "runs", "why"))
        if not (_number(rate) and 0 < rate <= MAX_RATE) or any(p.rate == rate for p in kept):
            raise UserError(f"search.json: probe {i} has no usable rate of its own ({shown(rate)})")
        if not isinstance(runs, list) or not runs or len(runs) > MAX_PROBES:  # a fitted search repeats rates
            raise UserError(f"search.json: probe {i} needs a list of 1 to {MAX_PROBES} runs")
        read = []
        for run in runs:
            if not isinstance(run, Mapping) or not set(run) <= set(Run.__dataclass_fields__) or "attainment" not in run \
                    or "requests" not in run:
                raise UserError(f"search.json: probe {i} holds a run that is not one")
            one = Run(**dict(run))
            if _run_problems(one):
                raise UserError(f"search.json: probe {i}: {_run_problems(one)[0]}")
            read.append(one)
        kept.append(Probe(float(rate), tuple(read), why[:200] if isinstance(why, str) else ""))
    return Search(settings, tuple(kept))


def decidable_requests(settings: Settings, attainment: float | None = None) -> int:
    """The fewest requests a run must send for ``max_runs`` runs that all attain ``attainment``
    (default: halfway between the target and 1) to show the SLO holding. Fewer, and a rate the
    server carries well stays undecided: the per-run variance is taken as at least the binomial
    one at the target, ``target (1 - target) / requests`` (``Attainment``)."""
    s = settings
    a = (1 + s.target) / 2 if attainment is None else attainment
    runs = s.max_runs

    def holds(n: int) -> bool:
        return verdict(s, Probe(1.0, tuple(Run(a, n) for _ in range(runs)))).state == HOLDS

    low, high = 1, 1
    while not holds(high):
        low, high = high, high * 2
        if high > 10_000_000:
            return high
    while low < high:  # the fewest that holds
        mid = (low + high) // 2
        low, high = (mid + 1, high) if not holds(mid) else (low, mid)
    return high
