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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping


from llama4spec.errors import UserError
from llama4spec.figures import SLO_METRICS as METRICS  # the latencies an SLO may bind (ttft, tpot, e2el)
from llama4spec.figures import SLO_NAMES as NAMES
from llama4spec.files import MAX_COUNT, count, number, shown
from llama4spec.results.bench import BenchRecord
from llama4spec.capacity.verdict import FAILS, HOLDS, OPEN, UNDECIDED, verdict
from llama4spec.stats.interval import CONFIDENCE

MAX_RATE = 10_000.0  # requests per second: the highest rate a probe may ask for
MIN_RATE = 0.01  # the lowest: one request every 100 s
MAX_PROBES = 64
PRECISION = 0.05  # relative: stop when U / L - 1 is at most this
MIN_PROBE_RUNS = 2
LEAN_RUNS = 1  # runs before a probe leans (the search moves on it); a verdict needs MIN_PROBE_RUNS
MAX_PROBE_RUNS = 6
RUNS_CAP = 20  # the largest max_runs accepted
# Share of alpha a capacity probe spends on its looks before the last (not the sweep's
# ``looks.EARLY_LOOKS_ALPHA``): a clear rate stops early; the last look keeps
# 75% (z 1.78 against 1.65 at 95%). benchmarks/capacity_search.py measures error rates and runs.
PROBE_EARLY_ALPHA = 0.25
# A gap beside an undecided rate is narrowed only while wider than this many times the precision:
# rates that near it are as undecided (benchmarks/capacity_search.py: the runs and widths it gives).
UNDECIDED_ZONE = 4
CONFIRM = 1.5  # the confirming probe: this many times the lowest failing rate
ROUND_DIGITS = 4  # significant digits of a probed rate (the rate recorded is the rate sent)
KIND = "llama4spec.capacity_search"

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


def number_ok(value: Any) -> bool:
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
    cap_ok = number_ok(s.cap) and 0 < s.cap <= MAX_RATE
    if not cap_ok:
        problems.append(f"the highest rate must lie in (0, {MAX_RATE:g}] requests per second, not {s.cap}")
    if not (number_ok(s.start) and s.start > 0):
        problems.append(f"the start rate must be above 0 requests per second, not {s.start}")
    elif cap_ok and s.start > s.cap:
        problems.append(f"the start rate {s.start:g} is above the highest rate {s.cap:g}; start at or below it")
    if not (number_ok(s.floor) and MIN_RATE <= s.floor <= MAX_RATE):
        problems.append(f"the lowest rate must lie in [{MIN_RATE:g}, {MAX_RATE:g}] requests per second, not {s.floor}")
    elif number_ok(s.start) and 0 < s.start < s.floor:
        problems.append(f"the start rate {s.start:g} is below the lowest rate {s.floor:g}; start at or above it")
    if not (number_ok(s.target) and 0 < s.target < 1):
        problems.append(f"a capacity search needs an attainment in (0, 1), not {s.target}: no number of runs "
                        f"shows that every request of a rate is good")
    return problems


def precision_problems(s: Settings) -> list[str]:
    """The problem of a bisecting search's precision (U / L - 1 at which it stops)."""
    if not (number_ok(s.precision) and 0.01 <= s.precision <= 1):
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
    if not (number_ok(s.confidence) and 0.5 < s.confidence < 1):
        problems.append(f"the confidence must lie in (0.5, 1), not {s.confidence}")
    if s.confirm is not None and not (number_ok(s.confirm) and s.confirm > 1):
        problems.append(f"the confirming factor must be above 1 (or none), not {s.confirm}")
    if not (number_ok(s.early_share) and 0 <= s.early_share < 1):
        problems.append(f"the early share of alpha must lie in [0, 1), not {s.early_share}")
    return problems


def begin(settings: Settings) -> Search:
    """A search with no probes yet; UserError naming every problem with its settings."""
    problems = settings_problems(settings)
    if problems:
        raise UserError(*problems)
    return Search(settings)


def run_problems(run: Run) -> list[str]:
    problems = []
    if not (number_ok(run.attainment) and 0 <= run.attainment <= 1):
        problems.append(f"a run's attainment must lie in [0, 1], not {shown(run.attainment)}")
    if count(run.requests, 1) is None:
        problems.append(f"a run's requests sent must be a count from 1 to {MAX_COUNT:.0e}, not {shown(run.requests)}")
    if run.binding is not None and run.binding not in METRICS:
        problems.append(f"a run's binding metric must be one of {', '.join(METRICS)}, not {run.binding!r}")
    if run.output_throughput is not None and not (number_ok(run.output_throughput) and run.output_throughput >= 0):
        problems.append(f"a run's output throughput must be a number >= 0, not {run.output_throughput}")
    if run.client_cpu_s is not None and not (number_ok(run.client_cpu_s) and run.client_cpu_s >= 0):
        problems.append(f"a run's client CPU time must be a number >= 0, not {run.client_cpu_s}")
    if run.per_metric is not None and not (isinstance(run.per_metric, Mapping) and all(
            m in METRICS and number_ok(v) and 0 <= v <= 1 for m, v in run.per_metric.items())):
        problems.append(f"a run's per-metric shares must map {', '.join(METRICS)} to numbers in [0, 1], "
                        f"not {shown(run.per_metric)}")
    return problems


def record_run(search: Search, rate: float, run: Run) -> Search:
    """The search with ``run`` (measured at ``rate``) added to the probe at that rate, or as a new
    probe. ValueError for a run that cannot be one, or for a rate whose probe has stopped."""
    problems = run_problems(run)
    if not (number_ok(rate) and 0 < rate <= MAX_RATE):
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


def binding_metric(quantiles: Mapping[str, float | None], thresholds: Mapping[str, float]) -> str | None:
    """The constraint that binds in one run: of the metrics the SLO bounds, the one whose quantile at
    the SLO's attainment (P95 for 0.95) is highest relative to its threshold (over it, or closest).
    ``quantiles``: metric -> ms (None: not reported)."""
    ratios = {m: q / t for m, t in thresholds.items()
              if m in METRICS and number_ok(t) and t > 0 and number_ok(q := quantiles.get(m))}
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
class Bounds:
    standing: dict[float, str]
    low: float | None  # L: the highest rate that holds (or leans so) below U
    high: float | None  # U: the lowest rate that fails (or leans so)

    def rates(self, *states: str) -> list[float]:
        return sorted(r for r, st in self.standing.items() if st in states)


def bounds(search: Search) -> Bounds:
    states = {p.rate: standing(search.settings, p) for p in search.probes}
    down = sorted(r for r, st in states.items() if st in (FAILS, LEANS_FAILS))
    high = down[0] if down else None
    below = [r for r, st in states.items() if st in (HOLDS, LEANS_HOLDS) and (high is None or r < high)]
    return Bounds(states, max(below) if below else None, high)


def _round(rate: float) -> float:
    return float(f"{rate:.{ROUND_DIGITS}g}")


def _word(state: str) -> str:
    return {HOLDS: "held", FAILS: "failed", UNDECIDED: "was undecided"}.get(state, state)


def _new_rate(search: Search, b: Bounds) -> Move:
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
    b = bounds(search)
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
