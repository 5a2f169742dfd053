"""Measuring until the answer is decided: the error control of sequential sweeps (pure, no I/O).

What is controlled. At one concurrency, while ``allocate`` gives out the runs one at a time and
every point is looked at after every run, the probability of *any* false verdict (a point called
faster, or slower, than no speculation when it is not) or *any* false elimination (a point called
slower than another when it is not) is at most ``1 - confidence``. That is one family-wise error
rate over the concurrency's comparisons, all its looks and the data-dependent allocation together.
It assumes each setting's runs come from one server start and are exchangeable within it, and that
the statistic's own test is valid at each look (Welch-Satterthwaite is an approximation).

The rule, in four parts.

1. *Compare by the difference.* Two settings compare by the difference of their mean per-run
   values, never by whether two intervals overlap: for throughput (``LogRatio``) Welch's t on the
   mean log throughputs, exponentiated into a ratio. Its variance adds ``2 * between``, the
   between-start log-variance that runs against one server start cannot average out, taken from a
   noise estimate (``stats.noise.Noise``: the sweep's own starts, a profile or the hardware's
   prior, with its df; Satterthwaite degrees of freedom over both terms, a component of infinite df
   counting as exact). No bootstrap. The paired form (``PairedLogRatio``: t on the
   mean log ratio of back-to-back pairs) compares the settings an interleaved design measured in
   turn.
2. *Looks.* A pair is looked at at l = min_repeats .. max_repeats, on the first l runs of each
   side: the same runs whatever order they were given out in, so the allocation cannot bias a
   look. Bonferroni over every reachable look, weighted (alpha spending): the last look keeps
   ``1 - EARLY_LOOKS_ALPHA`` of alpha, the earlier ones share ``EARLY_LOOKS_ALPHA`` equally, and a pair's
   p-value is min over the looks so far of p_l / w_l, valid whenever the measuring stops.
3. *Multiplicity (Holm 1979).* Every ordered pair (p, q) carries the one-sided hypothesis "p is
   not faster than q"; rejecting it declares p faster than q. Holm's step-down runs over all
   P(P-1) of them on the anytime p-values and needs no independence. Those p-values only fall as
   runs arrive and Holm is monotone, so a decision, once taken, stands, and every decision taken
   on the way is one Holm takes on the final p-values: one bound covers the whole measurement.
4. *Elimination* (fixed-confidence successive elimination, Even-Dar, Mannor and Mansour 2006,
   JMLR 7): a point declared slower than another (normally the leader, the highest mean) is
   eliminated and gets no more runs; the baseline keeps getting them while a verdict is open.

Why Bonferroni over looks and not confidence sequences (Howard, Ramdas, McAuliffe and Sekhon
2021): where the server start dominates the noise (as repeated sweeps on one machine suggest), its
effect is fixed once a server is up, so a comparison's information hardly grows with runs. A confidence sequence pays at every time for looking at all
times and has nothing to gain here; a split that keeps nearly all of alpha for the last look costs
a fraction of a point of power against a fixed design of ``max_repeats`` runs (for a one-sided
question no valid rule capped at the same runs can have more: Neyman-Pearson) and still stops a
clear comparison at the first look.

The dominance bound (``lookahead_bound``) says which larger lookahead cannot win and need not be
started. The statistics are in ``statistic``, the looks in ``looks``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from llama4spec.stats.interval import CONFIDENCE, Interval
from llama4spec.stats.looks import MAX_REPEATS, MIN_REPEATS, REPEATS_CAP, Looks, holm, looks
from llama4spec.stats.ratio import interval_at, start_shares
from llama4spec.stats.statistic import Estimate, LogRatio, Statistic
from llama4spec.stats.tdist import special

STATES = ("open", "resolved", "eliminated", "max_repeats")
OPEN, RESOLVED, ELIMINATED, AT_MAX = range(len(STATES))


@dataclass(frozen=True)
class Decisions:
    above: np.ndarray  # [sweeps, points, points]: above[s, p, q] = p declared faster than q
    state: np.ndarray  # [sweeps, points]: index into STATES
    leader: np.ndarray  # [sweeps]: the highest mean among points not eliminated
    next: np.ndarray  # [sweeps]: the point that gets the next run, -1 when every point stopped
    level: np.ndarray  # [sweeps]: one-sided alpha of Holm's next step (alpha / hypotheses left)
    # [sweeps, points]: an open point whose next run moves a look of an open question (or is below
    # min_repeats); an open point without one waits on the other side's runs
    useful: np.ndarray | None = None


def decide(table: Looks, counts: np.ndarray, baseline: int, confidence: float = CONFIDENCE) -> Decisions:
    """Verdicts, eliminations, states and the next run, for ``counts`` [sweeps, points] runs so far.

    Questions open at a concurrency: each candidate's verdict against the baseline (until it is
    decided or the candidate eliminated) and each remaining point's place against the leader. A
    point stops *eliminated* (declared slower than another, and no open verdict needs it),
    *resolved* (no open question left: the leader once the others are out and its verdict is
    decided), or at *max_repeats*; otherwise (and always below min_repeats) it is *open*.

    The next run: first, in order, any point below min_repeats (fewest runs first). Then, for each
    open question whose next look needs a run of point p, the chance that look settles it,
    pi = Phi(|t| - c): Phi the normal distribution function, t the question's statistic now and c
    the normal quantile of the next look's level (Holm's next step times the look's weight), so pi
    is the chance the question clears its next bound were its statistic to move by a standard
    normal step, divided by the runs that look still needs (1 or 2). The open point with the
    highest pi gets the run; ties go to the fewest runs, then to the earlier point.
    """
    counts = np.asarray(counts)
    above, level = _declared(table, counts, 1.0 - confidence)
    needed, eliminated, leader = _questions(table, counts, above, baseline)
    state = np.where(needed.any(-1), np.where(counts < table.max_repeats, OPEN, AT_MAX),
                     np.where(eliminated, ELIMINATED, RESOLVED))
    state = np.where(counts < table.min_repeats, OPEN, state)  # every point gets min_repeats runs
    nxt, useful = _next_run(table, counts, needed, state, level)
    return Decisions(above, state, leader, nxt, level, useful)


def _declared(table: Looks, counts: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm over every ordered pair at the looks reached: above[s, p, q], and Holm's next level."""
    first, second, n_pairs = table.first, table.second, len(table.first)
    look = np.minimum(counts[:, first], counts[:, second])
    at = np.clip(look - table.min_repeats, 0, len(table.weights) - 1)[..., None]
    p_up, p_down = (np.where(look >= table.min_repeats, np.take_along_axis(a, at, -1)[..., 0], 1.0)
                    for a in (table.anytime_up, table.anytime_down))
    rejected = holm(np.concatenate([p_up, p_down], -1), alpha)
    above = np.zeros((*counts.shape, counts.shape[1]), dtype=bool)
    above[:, first, second], above[:, second, first] = rejected[:, :n_pairs], rejected[:, n_pairs:]
    return above, alpha / np.maximum(2 * n_pairs - rejected.sum(-1), 1)


def _questions(table: Looks, counts: np.ndarray, above: np.ndarray, baseline: int):
    """The open questions as a symmetric [sweeps, points, points] mask, the eliminated points and
    the leader (the highest mean among points not eliminated)."""
    sweeps, n_points = counts.shape
    rows, pts = np.arange(sweeps)[:, None], np.arange(n_points)[None, :]
    eliminated = above.any(axis=1)
    with np.errstate(invalid="ignore"):
        mean = np.take_along_axis(table.means, np.clip(counts - 1, 0, table.max_repeats - 1)[..., None], -1)[..., 0]
    mean = np.where(counts > 0, np.nan_to_num(mean, nan=-np.inf), -np.inf)
    alive = np.where(eliminated.all(1, keepdims=True), True, ~eliminated)
    leader = np.argmax(np.where(alive, mean, -np.inf), axis=1)

    needed = np.zeros_like(above)
    verdict_open = (pts != baseline) & ~eliminated & ~above[:, :, baseline] & ~above[:, baseline, :]
    needed[:, :, baseline] |= verdict_open
    needed[:, baseline, :] |= verdict_open
    place_open = ~eliminated & (pts != leader[:, None])
    needed[rows, pts, leader[:, None]] |= place_open
    needed[rows, leader[:, None], pts] |= place_open
    return needed, eliminated, leader


def _next_run(table: Looks, counts: np.ndarray, needed: np.ndarray, state: np.ndarray, level: np.ndarray):
    """The point that gets the next run (the heuristic of ``decide``), -1 when none is open."""
    sp, w, m = special(), table.weights, table.min_repeats
    sweeps, n_points = counts.shape
    first, second, n_pairs = table.first, table.second, len(table.first)
    pair_look = np.minimum(counts[:, :, None], counts[:, None, :])
    wants = counts[:, :, None] == pair_look  # p's run is needed for the pair's next look
    pair_of = np.full((n_points, n_points), n_pairs)  # the diagonal points at a padding column
    pair_of[first, second] = pair_of[second, first] = np.arange(n_pairs)
    at = np.clip(np.minimum(counts[:, first], counts[:, second]) - m, 0, len(w) - 1)[..., None]
    t_now = np.abs(np.take_along_axis(table.t, at, -1)[..., 0])
    t_now = np.concatenate([t_now, np.zeros((sweeps, 1))], 1)[:, pair_of]  # [S, P, P]
    c_next = sp.ndtri(1.0 - level[:, None, None] * w[np.clip(pair_look + 1 - m, 0, len(w) - 1)])
    pi = sp.ndtr(t_now - c_next) / (wants.astype(int) + wants.transpose(0, 2, 1))
    settles = needed & (pair_look < table.max_repeats) & wants & (pair_look >= m)
    score = np.where(settles, pi, -np.inf).max(-1)
    candidate = (state == OPEN) & (score > -np.inf)
    score = np.where(candidate, score, -np.inf)
    pick = candidate & (score == score.max(1, keepdims=True))
    pick &= counts == np.where(pick, counts, np.iinfo(int).max).min(1, keepdims=True)
    nxt = np.where(pick.any(1), pick.argmax(1), -1)

    short = counts < m
    fewest = short & (counts == np.where(short, counts, np.iinfo(int).max).min(1, keepdims=True))
    return np.where(short.any(1), fewest.argmax(1), nxt), candidate | (short & (state == OPEN))


@dataclass(frozen=True)
class Replay:
    counts: np.ndarray  # [sweeps, points]: runs each point got
    decisions: Decisions  # when every point had stopped
    ever_above: np.ndarray  # every declaration made on the way (equal to decisions.above: they stand)


def _check(min_repeats: int, max_repeats: int, confidence: float) -> None:
    problems = []
    if min_repeats < 2:
        problems.append(f"min_repeats must be at least 2, not {min_repeats}")
    if not min_repeats <= max_repeats <= REPEATS_CAP:
        problems.append(f"max_repeats must be between min_repeats ({min_repeats}) and {REPEATS_CAP}, not {max_repeats}")
    if not 0.5 < confidence < 1:
        problems.append(f"confidence must lie in (0.5, 1), not {confidence}")
    if problems:
        raise ValueError("; ".join(problems))


def replay(runs: np.ndarray, baseline: int, min_repeats: int = MIN_REPEATS, max_repeats: int = MAX_REPEATS,
           confidence: float = CONFIDENCE, statistic: Statistic = LogRatio()) -> Replay:
    """The allocation run to the end on runs known in advance, for many sweeps at once: the i-th
    run a point gets is ``runs[s, p, i]`` (throughputs [sweeps, points, >= max_repeats]). What a
    sweep does when it asks ``allocate`` for every run; also how a resumed sweep recomputes."""
    _check(min_repeats, max_repeats, confidence)
    table = looks(statistic.values(runs), statistic, min_repeats, max_repeats)
    counts = np.zeros(np.shape(runs)[:2], dtype=int)
    ever = np.zeros((*counts.shape, counts.shape[1]), dtype=bool)
    while True:
        d = decide(table, counts, baseline, confidence)
        ever |= d.above
        go = np.flatnonzero(d.next >= 0)
        if go.size == 0:
            return Replay(counts, d, ever)
        counts[go, d.next[go]] += 1


@dataclass(frozen=True)
class PointState:
    state: str  # one of STATES
    runs: int
    verdict: str | None  # "faster", "slower" or "undecided" against the baseline; None for it
    # Against the baseline at the pair's current look, at the level a decision there needs now
    # (Holm's next step times the look's weight); None for the baseline and before min_repeats.
    speedup: Interval | None
    below: str | None  # the point this one is declared slower than (the leader when it is one)
    share: float = 1.0  # of one server start's offset its mean carries (``start_shares``)
    starts: int = 1  # the server starts its runs came from
    useful: bool = True  # open: its next run moves a look of an open question (else it waits on another point)


@dataclass(frozen=True)
class Allocation:
    points: dict[str, PointState]
    leader: str | None
    next: str | None  # the point that gets the next run; None when every point has stopped
    confidence: float


def allocate(runs: Mapping[str, Sequence[float]], baseline: str, min_repeats: int = MIN_REPEATS,
             max_repeats: int = MAX_REPEATS, confidence: float = CONFIDENCE,
             statistic: Statistic = LogRatio(), starts: Mapping[str, Sequence[int]] | None = None) -> Allocation:
    """Each point's state and verdict, and which point gets the next run, at one concurrency.

    ``runs``: point id -> its throughputs so far (in the order measured); ``starts``: point id ->
    the server start of each of those runs (absent: all from one start of that setting);
    ``baseline``: the id of no speculation. The rule and what it controls: the module docstring;
    the choice of the next run: ``decide``.
    """
    _check(min_repeats, max_repeats, confidence)
    if baseline not in runs:
        raise ValueError(f"baseline {baseline!r} is not among the points {sorted(runs)}")
    ids = list(runs)
    throughput = np.full((1, len(ids), max_repeats), np.nan)
    for i, pid in enumerate(ids):
        xs = np.asarray(list(runs[pid]), dtype=float)
        if xs.size > max_repeats:
            raise ValueError(f"{pid}: {xs.size} runs, more than max_repeats ({max_repeats})")
        if not np.all(np.isfinite(xs) & (xs > 0)):
            raise ValueError(f"{pid}: throughputs must be positive and finite, not {xs.tolist()}")
        throughput[0, i, :xs.size] = xs
    counts = np.array([[len(runs[pid]) for pid in ids]])
    start_ids = np.full(throughput.shape, -1)
    for i, pid in enumerate(ids):
        given = list((starts or {}).get(pid) or [0] * int(counts[0, i]))
        if len(given) != counts[0, i]:
            raise ValueError(f"{pid}: {len(given)} server starts for {counts[0, i]} runs")
        start_ids[0, i, :len(given)] = given
    shares = start_shares(start_ids)
    b = ids.index(baseline)
    table = looks(statistic.values(throughput), statistic, min_repeats, max_repeats, shares=shares)
    d = decide(table, counts, b, confidence)
    above, leader = d.above[0], int(d.leader[0])

    points = {}
    for i, pid in enumerate(ids):
        verdict = speedup = None
        if i != b:
            verdict = "faster" if above[i, b] else "slower" if above[b, i] else "undecided"
            look = min(counts[0, i], counts[0, b])
            if look >= min_repeats:
                u = np.flatnonzero((table.first == min(i, b)) & (table.second == max(i, b)))[0]
                k, sign = look - min_repeats, 1 if i < b else -1
                est = Estimate(sign * table.estimate.center[0, u, k], table.estimate.se[0, u, k],
                               table.estimate.df[0, u, k])
                speedup = interval_at(statistic, est, 1 - 2 * float(d.level[0]) * float(table.weights[k]))
        beaters = [q for q in range(len(ids)) if above[q, i]]
        below = None
        if beaters:
            below = ids[leader] if leader in beaters else ids[max(beaters, key=lambda q: table.means[0, q, counts[0, q] - 1])]
        points[pid] = PointState(STATES[d.state[0, i]], int(counts[0, i]), verdict, speedup, below,
                                 float(shares[0, i, counts[0, i] - 1]) if counts[0, i] else 1.0,
                                 len(set(start_ids[0, i, :counts[0, i]].tolist())), bool(d.useful[0, i]))
    nxt = int(d.next[0])
    return Allocation(points, ids[leader], ids[nxt] if nxt >= 0 else None, confidence)
