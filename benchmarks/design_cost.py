"""Node-hours to a decided best lookahead, designs compared in simulation at the same error rate.

The Scout sweep (runbooks/llama4_scout_eagle_sweep.yaml: lookahead 1, 2, 3, 5, 7 against no
speculation at concurrency 1, 4, 16, 64, TP 4 servers on one 8-GPU node) simulated under several
designs. No engine. What is assumed, and stated in the output:

- **Noise and costs** from a noise profile (default the fixture tests/fixtures/noise/h100_scout_tp4.json,
  an illustration, not a measurement): a server start's log offset ~ N(0, between sd), shared by
  its runs at every concurrency; a run's ~ N(0, within sd); a start takes start_s, a run run_s.
- **True speedups** from the speedup model (``stats.point.expected_tokens``): assumed
  per-position acceptance rates and an assumed draft cost c per concurrency,
  speedup(k) = E(k) / (1 + c k). The acceptance rates are taken as measured exactly (a run at
  concurrency 16 counts thousands of draft positions).
- **Decisions** by the package's own code: at each concurrency ``stats.compare.compare`` on the
  blocks measured so far (``stats.looks.block_look``'s anytime p-values, Holm over the concurrency, the
  sweep's confidence and equivalence margin), ``stats.speedup_model.recommend`` for the pick. Blocks
  take the profile's noise as it is (with 3 or more blocks their own spread decides; a 2-block look
  without a paired component has no estimate); sequential starts pool the sweep's own starts with
  the profile by df (``stats.components.pooled``), as the report does.

A concurrency is *decided* when its pick is declared faster than every other setting, or its
undecided rivals are pruned by the bound (below). An *error* is a decided pick that is not the
truly fastest setting (or one equivalent to it within the margin).

    .venv/bin/python benchmarks/design_cost.py [--sweeps N] [--profile PATH] [--seed N]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from llama4spec.stats.point import Point, expected_tokens
from llama4spec.stats.speedup_model import recommend
from llama4spec.stats.components import pooled
from llama4spec.stats.equivalence import MARGIN
from llama4spec.stats.profile import read_profile
from llama4spec.stats.compare import compare

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "tests" / "fixtures" / "noise" / "h100_scout_tp4.json"
LOOKAHEADS = (1, 2, 3, 5, 7)
CONCURRENCIES = (1, 4, 16, 64)
# assumed, not measured: P(draft position i accepted), and the cost of a draft token per concurrency
ACCEPTANCE = (0.80, 0.62, 0.48, 0.38, 0.30, 0.24, 0.19)
DRAFT_COST = {1: 0.03, 4: 0.06, 16: 0.13, 64: 0.35}
NONE = "none"
# assumed, not measured: a draft whose best lookahead leads the runner-up by 8-13% at every
# concurrency (each at most its bound E(k) from ACCEPTANCE), where a best can be decided
SEPARATED = {(k, c): s for c, row in {1: (1.70, 2.15, 2.45, 2.75, 2.50), 4: (1.62, 2.00, 2.25, 2.05, 1.80),
                                      16: (1.45, 1.70, 1.55, 1.30, 1.10), 64: (1.15, 1.05, 0.95, 0.80, 0.70)}.items()
             for k, s in zip(LOOKAHEADS, row)}


def true_speedups(rates=ACCEPTANCE, cost=DRAFT_COST, lookaheads=LOOKAHEADS) -> dict[tuple[int, int], float]:
    """(lookahead, concurrency) -> the assumed true speedup over no speculation (the speedup model)."""
    return {(k, c): expected_tokens(rates, k) / (1.0 + cost[c] * k) for k in lookaheads for c in cost}


def best_at(truth: dict[tuple[int, int], float], c: int) -> int | None:
    """The truly fastest setting at concurrency ``c``: a lookahead, or None for no speculation."""
    k, s = max(((k, s) for (k, cc), s in truth.items() if cc == c), key=lambda kv: kv[1])
    return k if s > 1.0 else None


def acceptable(truth, c: int, pick: int | None, margin: float = MARGIN) -> bool:
    """A pick at ``c`` is right when it is the fastest or within ``margin`` of it."""
    speed = {None: 1.0, **{k: s for (k, cc), s in truth.items() if cc == c}}
    return speed[pick] * (1.0 + margin) >= max(speed.values())


@dataclass(frozen=True)
class Design:
    """One way of running the sweep. ``gate``: which candidates get a further block: "verdict"
    (the sweep's MoreBlocks gate: while its comparison against no speculation is open at some concurrency) or "answer"
    (while it is in an open question of the pick: the leader, or a rival not yet beaten)."""

    name: str
    pairs: int = 3  # pairs of runs a block at each concurrency
    min_blocks: int = 2
    max_blocks: int = 10
    gate: str = "verdict"
    prune: bool = False  # a lookahead whose bound E(k) is below the leader's lower bound is dropped there
    only_open: bool = False  # a block measures only the concurrencies where its candidate is open
    lookaheads: tuple[int, ...] = LOOKAHEADS
    sequential: int = 0  # > 0: no blocks; every setting started this many times, one server at a time
    margin: float = MARGIN  # the sweep's margin: key (equivalent within +-margin)
    supported: bool = True  # a sweep's keys can ask for it


@dataclass(frozen=True)
class Costs:
    start_s: float
    run_s: float

    def block_s(self, pairs: int, concurrencies: int) -> float:
        """Both servers started together (one start's time), then the pairs alternating."""
        return self.start_s + concurrencies * pairs * 2 * self.run_s


@dataclass
class Measured:
    """What one concurrency's points hold so far: each candidate's blocks (per-pair ratios), and
    the runs of every setting."""

    blocks: dict[int, list[list[float]]] = field(default_factory=dict)
    runs: dict[str, list[float]] = field(default_factory=dict)
    starts: dict[str, list[int]] = field(default_factory=dict)


def pid(k: int | None) -> str:
    return NONE if k is None else f"k{k}"


def judge(c: int, m: Measured, noise, design: Design, confidence: float):
    """The package's verdicts at one concurrency: (pick's lookahead or None, comparisons)."""
    ids = [NONE, *(pid(k) for k in design.lookaheads if pid(k) in m.runs)]
    settings = {i: m.runs[i] for i in ids}
    blocks = {(pid(k), NONE): b for k, b in m.blocks.items() if len(b) >= 2}
    rule = None if design.sequential else (design.min_blocks, design.max_blocks)
    comps = compare(settings, confidence, noise, m.starts if design.sequential else None, margin=design.margin,
                    blocks=blocks or None, block_rule=rule if blocks else None)
    points = [Point(i, "eagle" if i != NONE else "none", None if i == NONE else int(i[1:]), c,
                    output_throughput=float(np.median(settings[i]))) for i in ids]
    pick = recommend(points[1:], points[0], 1, comps)
    return pick.point.lookahead, comps


def open_rivals(pick: int | None, comps, ids: list[str], bounds: dict[int, float] | None) -> set[str]:
    """The settings whose question with the pick is still open; with ``bounds`` (lookahead ->
    E(k)), a lookahead whose bound is below the pick's lower bound against no speculation is not."""
    lead = pid(pick)
    low = None
    if bounds is not None and pick is not None and comps[(lead, NONE)].interval is not None:
        low = comps[(lead, NONE)].interval.low
    out = set()
    for q in ids:
        if q == lead or comps[(lead, q)].decided:
            continue
        if low is not None and q != NONE and bounds[int(q[1:])] < low:
            continue
        out.add(q)
    return out


def wanted(k: int, pick: int | None, rivals: set[str], comps, gate: str) -> bool:
    """Whether candidate ``k`` needs another block at this concurrency."""
    if gate == "verdict":
        return not comps[(pid(k), NONE)].decided
    if not rivals:
        return False
    return pid(k) == pid(pick) or pid(k) in rivals or (pick is None and pid(k) in rivals)


@dataclass
class Outcome:
    seconds: float
    picks: dict[int, int | None]  # concurrency -> the pick's lookahead (None: no speculation)
    decided: dict[int, bool]
    verdicts: dict[tuple[int, int], str]  # (lookahead, concurrency) -> its verdict against no speculation


class Sweep:
    """One simulated sweep: draws runs from the truth and the noise, asks the package's decisions."""

    def __init__(self, design: Design, truth, sds: tuple[float, float], noise, costs: Costs,
                 rng: np.random.Generator, confidence: float):
        self.design, self.truth, self.sds, self.noise = design, truth, sds, noise
        self.costs, self.rng, self.confidence = costs, rng, confidence
        self.measured = {c: Measured() for c in CONCURRENCIES}
        self.seconds = 0.0
        self.bounds = {k: expected_tokens(ACCEPTANCE, k) for k in design.lookaheads} if design.prune else None

    def _runs(self, c: int, k: int | None, offset: float, n: int) -> np.ndarray:
        speed = 1.0 if k is None else self.truth[(k, c)]
        return 1000.0 * speed * np.exp(offset + self.rng.normal(0.0, self.sds[1], n))

    def block(self, k: int, concurrencies) -> None:
        """A block of candidate ``k`` beside no speculation, both started together."""
        self.seconds += self.costs.block_s(self.design.pairs, len(concurrencies))
        u_none, u_cand = self.rng.normal(0.0, self.sds[0], 2)
        for c in concurrencies:
            m = self.measured[c]
            base, cand = self._runs(c, None, u_none, self.design.pairs), self._runs(c, k, u_cand, self.design.pairs)
            m.blocks.setdefault(k, []).append(list(cand / base))
            m.runs.setdefault(NONE, []).extend(base)
            m.runs.setdefault(pid(k), []).extend(cand)

    def start(self, k: int | None, start: int) -> None:
        """One server start of a setting measured alone (the sequential design)."""
        self.seconds += self.costs.start_s + len(CONCURRENCIES) * self.design.pairs * self.costs.run_s
        offset = self.rng.normal(0.0, self.sds[0])
        for c in CONCURRENCIES:
            m = self.measured[c]
            m.runs.setdefault(pid(k), []).extend(self._runs(c, k, offset, self.design.pairs))
            m.starts.setdefault(pid(k), []).extend([start] * self.design.pairs)

    def look(self) -> tuple[dict[int, set[int]], Outcome]:
        """Now: the concurrencies where each candidate is open, and what is decided."""
        need: dict[int, set[int]] = {k: set() for k in self.design.lookaheads}
        now = Outcome(self.seconds, {}, {}, {})
        noise = self.noise
        if self.design.sequential:  # as the report does: the sweep's own starts pooled with the profile by df
            noise = pooled(self.noise, {(c, i): xs for c, m in self.measured.items() for i, xs in m.runs.items()},
                           {(c, i): xs for c, m in self.measured.items() for i, xs in m.starts.items()})
        for c, m in self.measured.items():
            pick, comps = judge(c, m, noise, self.design, self.confidence)
            ids = [NONE, *(pid(k) for k in self.design.lookaheads if pid(k) in m.runs)]
            rivals = open_rivals(pick, comps, ids, self.bounds)
            now.picks[c], now.decided[c] = pick, not rivals
            for k in self.design.lookaheads:
                if pid(k) in m.runs:
                    now.verdicts[(k, c)] = comps[(pid(k), NONE)].verdict
                    if wanted(k, pick, rivals, comps, self.design.gate):
                        need[k].add(c)
        return need, now

    def run(self) -> Outcome:
        d = self.design
        if d.sequential:
            for s in range(1, d.sequential + 1):
                for k in self.rng.permutation([0, *d.lookaheads]):
                    self.start(int(k) or None, s)
            return self.look()[1]
        need = {k: set(CONCURRENCIES) for k in d.lookaheads}
        for j in range(1, d.max_blocks + 1):
            ran = False
            for k in self.rng.permutation(list(d.lookaheads)):
                k = int(k)
                if j > d.min_blocks and not need[k]:
                    continue
                self.block(k, sorted(need[k]) if d.only_open and j > d.min_blocks else CONCURRENCIES)
                ran = True
                if j > d.min_blocks:  # the gate of the next block sees this one
                    need = self.look()[0]
            if not ran:
                break
            if j == d.min_blocks:
                need = self.look()[0]
        return self.look()[1]


@dataclass(frozen=True)
class Summary:
    """A design over many simulated sweeps."""

    hours: np.ndarray  # each sweep's node-hours
    decided: float  # share of (sweep, concurrency) whose best is decided
    verdicts: float  # share of the verdicts against no speculation decided
    errors: float  # share of (sweep, concurrency) with an error: a wrong decided pick or a false verdict
    sweeps: int

    def error_se(self) -> float:
        n = self.sweeps * len(CONCURRENCIES)
        return math.sqrt(max(self.errors * (1 - self.errors), 1.0 / n) / n)


def wrong(truth, o: Outcome, c: int, margin: float) -> bool:
    """A decided pick that is not the fastest (nor within the margin of it), or a false verdict."""
    if o.decided[c] and not acceptable(truth, c, o.picks[c], margin):
        return True
    for (k, cc), verdict in o.verdicts.items():
        s = truth[(k, cc)]
        if cc == c and (verdict == "faster" and s <= 1.0 or verdict == "slower" and s >= 1.0
                        or verdict == "equivalent" and abs(math.log(s)) > math.log1p(margin)):
            return True
    return False


def summarize(outcomes: list[Outcome], truth, margin: float) -> Summary:
    """Node-hours (the node is held for the sweep's wall time), decided and wrong shares."""
    hours = np.array([o.seconds / 3600.0 for o in outcomes])
    decided = float(np.mean([o.decided[c] for o in outcomes for c in CONCURRENCIES]))
    verdicts = float(np.mean([v != "undecided" for o in outcomes for v in o.verdicts.values()]))
    errors = float(np.mean([wrong(truth, o, c, margin) for o in outcomes for c in CONCURRENCIES]))
    return Summary(hours, decided, verdicts, errors, len(outcomes))


def designs() -> list[Design]:
    """The blocks added until decided, then one change at a time, then sequential starts.
    ``supported``: what a sweep's keys can ask for (min_repeats and max_repeats: the blocks; 3 pairs
    a block and the verdict gate; design: sequential with starts and repeats); the others are not built."""
    blocks = Design("blocks, 2-10 (the sweep's blocks: design: auto, repeats: auto)")
    answer = dataclasses.replace(blocks, name="until the best is decided, 2-10 blocks", gate="answer", supported=False)
    pruned = dataclasses.replace(answer, name="+ the bound drops lookaheads", prune=True)
    focused = dataclasses.replace(pruned, name="+ a block runs only its open concurrencies", only_open=True)
    return [
        blocks,
        dataclasses.replace(blocks, name="blocks, 2-4", max_blocks=4),
        dataclasses.replace(blocks, name="blocks, 3-4", min_blocks=3, max_blocks=4),
        dataclasses.replace(blocks, name="blocks, 3", min_blocks=3, max_blocks=3),
        dataclasses.replace(blocks, name="blocks, 4", min_blocks=4, max_blocks=4),
        answer, pruned, focused,
        dataclasses.replace(focused, name="  the same, 3-4 blocks", min_blocks=3, max_blocks=4),
        dataclasses.replace(focused, name="  the same, 3-4 blocks of 1 pair", pairs=1, min_blocks=3, max_blocks=4),
        dataclasses.replace(blocks, name="3 blocks of 1 pair", pairs=1, min_blocks=3, max_blocks=3, supported=False),
        dataclasses.replace(blocks, name="3 blocks of 2 pairs", pairs=2, min_blocks=3, max_blocks=3, supported=False),
        Design("sequential: 1 start a setting, 2 runs", sequential=1, pairs=2),
        Design("sequential: 1 start a setting, 3 runs", sequential=1),
        Design("sequential starts: 2 a setting, 3 runs", sequential=2),
        Design("sequential starts: 4 a setting, 1 run", sequential=4, pairs=1),
    ]


def simulate(design: Design, truth, profile, sweeps: int, seed: int, confidence: float,
             between_times: float = 1.0) -> Summary:
    """``between_times``: the drawn between-start sd is the profile's times this (the analysis
    still takes the profile's): how a design fares when the profile understates it."""
    costs = Costs(profile.start_s, profile.run_s)
    noise = profile.noise
    sds = (noise.between.sd * between_times, noise.within.sd)
    rng = np.random.default_rng(seed)
    outcomes = [Sweep(design, truth, sds, noise, costs, rng, confidence).run() for _ in range(sweeps)]
    return summarize(outcomes, truth, design.margin)


def truth_lines(truth, model: bool) -> list[str]:
    head = ("assumed true speedups (speedup model: acceptance " + ", ".join(f"{a:g}" for a in ACCEPTANCE) + ")"
            if model else "assumed true speedups (stated, separated)")
    lines = [head]
    for c in CONCURRENCIES:
        row = "  ".join(f"k={k} {truth[(k, c)]:.2f}x" for k in LOOKAHEADS)
        best = best_at(truth, c)
        cost = f" draft cost {DRAFT_COST[c]:.2f}" if model else ""
        lines.append(f"  c={c:<3}{cost}: {row}  -> best "
                     f"{'no speculation' if best is None else f'k={best}'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=100, help="simulated sweeps a design (default 100)")
    parser.add_argument("--profile", type=Path, default=PROFILE, help="noise.json: noise and costs (default the fixture)")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--truth", choices=("model", "separated"), default="model",
                        help="the assumed true speedups: the speedup model's (flat near the best) or SEPARATED")
    parser.add_argument("--between-times", type=float, default=1.0,
                        help="draw server starts' offsets this many times the profile's between-start sd (default 1)")
    parser.add_argument("--only", type=int, nargs="*", help="design rows to run (0-based; default all)")
    args = parser.parse_args()
    profile = read_profile(args.profile)
    truth = true_speedups() if args.truth == "model" else SEPARATED
    began = time.perf_counter()
    print(f"profile {args.profile.name}: between sd {profile.noise.between.sd:g}, within sd {profile.noise.within.sd:g}, "
          f"start {profile.start_s:g} s, run {profile.run_s:g} s; {args.sweeps} sweeps a design, "
          f"confidence {args.confidence:g} a concurrency, margin {MARGIN:g}"
          + (f"; starts drawn at {args.between_times:g} x the profile's between-start sd" if args.between_times != 1 else ""))
    for line in truth_lines(truth, args.truth == "model"):
        print(line)
    print(f"| design | built | node-hours mean | 10%-90% | best decided | verdicts decided | errors |")
    print("|---|---|---:|---:|---:|---:|---:|")
    rows = designs()
    for i, design in enumerate(rows):
        if args.only and i not in args.only:
            continue
        s = simulate(design, truth, profile, args.sweeps, args.seed + i, args.confidence, args.between_times)
        lo, hi = np.percentile(s.hours, [10, 90])
        print(f"| {design.name} | {'yes' if design.supported else 'no'} | {s.hours.mean():.1f} | {lo:.1f}-{hi:.1f} | {100 * s.decided:.0f}% | "
              f"{100 * s.verdicts:.0f}% | {100 * s.errors:.1f}% +- {100 * s.error_se():.1f} |", flush=True)
    print(f"{time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
