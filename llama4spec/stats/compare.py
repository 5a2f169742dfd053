"""Settings at one concurrency compared by their difference, one Holm family (``compare``).

Each ordered pair of settings (p, q) carries the one-sided hypothesis "p is not faster than q",
tested by Welch's t on the difference of mean log throughputs with the between-start term ``2
between`` in its variance, the noise's between-start component on its df (``statistic.LogRatio``;
no noise: no such term, true only if every run has a server start of its own). Settings measured
from several server starts shrink that term with them (``ratio.start_shares``). Holm's step-down over
all of them at alpha = 1 - confidence bounds the probability of any false verdict at the
concurrency by alpha (family-wise, no independence needed): the rule of ``sequential`` at a single
look. A pair with fewer than 2 usable runs on a side is not tested and stays undecided. No
bootstrap.

An undecided pair gets the runs a side that would decide it at Holm's next level if the spread and
the difference stayed as measured (``ratio.runs_to_settle``), or "another server start" when the
between-start term alone keeps the interval across 1.

Points measured until decided (``sequential``: min_repeats, max_repeats) got runs that depend on
what was seen. Their p-values are then the anytime p-values of ``sequential`` (each pair at its
look min(n_a, n_b) over the first runs a side, Bonferroni-weighted over every reachable look), the
only ones valid for such data; Holm runs on those, and an interval is the look's, at Holm's level
times the look's weight.

An interleaved design's pairs (``back_to_back``: a's runs, b's runs measured back to back with
them, aligned) are tested by the paired t on the mean log ratio (``statistic.PairedLogRatio``)
instead of Welch's, in the same Holm family (fixed designs only: with ``sequential`` they are
ignored).

Back-to-back blocks (``blocks``: each block's per-pair ratios a over b): a pair with 2 or more
blocks is tested on its block means (``statistic.BlockLogRatio``: t on J - 1 df from their own
spread with 3 or more, from the noise's components with 2) in the same Holm family, and says what
it rests on (``basis``). ``block_rule`` (min_blocks, max_blocks): blocks added until decided, so
their p-values are ``looks.block_look``'s anytime p-values, as ``sequential``'s.

``margin``: a pair neither faster nor slower is "equivalent" when its interval (at the level of
Holm's next step, as above) lies within [1 / (1 + margin), 1 + margin]: both one-sided tests
against the margin reject at that level (two one-sided tests, Schuirmann 1987), so the family's
error bound covers these verdicts too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from llama4spec.stats.comparison import EQUIVALENT, Comparison
from llama4spec.stats.interval import CONFIDENCE, finite
from llama4spec.stats.looks import block_look, holm, look_weights, pair_look
from llama4spec.stats.noise import Noise
from llama4spec.stats.ratio import interval_at, runs_to_settle, start_floor, start_shares
from llama4spec.stats.statistic import BlockLogRatio, LogRatio, PairedLogRatio


def _usable(samples: Sequence[float | None]) -> list[float]:
    return [x for x in finite(samples) if x > 0]


def compare(settings: Mapping[str, Sequence[float]], confidence: float = CONFIDENCE,
            noise: Noise | None = None, starts: Mapping[str, Sequence[int]] | None = None,
            sequential: tuple[int, int] | None = None,
            back_to_back: Mapping[tuple[str, str], tuple[Sequence[float], Sequence[float]]] | None = None,
            margin: float | None = None,
            blocks: Mapping[tuple[str, str], Sequence[Sequence[float]]] | None = None,
            block_rule: tuple[int, int] | None = None) -> dict[tuple[str, str], Comparison]:
    """Every ordered pair of ``settings`` (point id -> output throughputs of its runs), the settings
    measured at one concurrency, each from a server start of its own, or from several (``starts``:
    point id -> each run's server start, aligned with its runs; a revisited sweep's points). The
    rule, and what ``sequential``, ``back_to_back``, ``blocks``, ``block_rule`` and ``margin`` do:
    the module docstring."""
    alpha = 1.0 - confidence
    statistic, paired, blocked = LogRatio(noise), PairedLogRatio(noise), BlockLogRatio(noise)
    values = {pid: _usable(xs) for pid, xs in settings.items()}
    logs = {pid: statistic.values(np.asarray(xs)) for pid, xs in values.items() if len(xs) >= 2}
    ids = list(settings)
    pairs = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]
    tested = [(a, b) for a, b in pairs if a in logs and b in logs]
    seq = {pid: _shares(values[pid], (starts or {}).get(pid)) for pid in logs}
    share = {pid: 1.0 if shares is None else float(shares[-1]) for pid, shares in seq.items()}
    if sequential is not None:
        est, diffs, basis, weight, p = _sequential(tested, logs, statistic, sequential, seq)
    else:
        est, diffs, basis, weight, p = _fixed(tested, logs, share, (statistic, paired, blocked), back_to_back,
                                              blocks, block_rule, noise)
    family = _Family.of(tested, est, weight, p, alpha)
    out: dict[tuple[str, str], Comparison] = {}
    for a, b in pairs:
        if (a, b) not in est:
            med_a, med_b = (float(np.median(values[x])) if values[x] else None for x in (a, b))
            ratio = med_a / med_b if med_a is not None and med_b else None
            c = Comparison(a, b, ratio, None, "undecided", None, family.m, noise=noise, margin=margin)
        else:
            c = family.judge((a, b), logs, diffs, share, sequential, noise, margin,
                             blocked if (a, b) in basis else paired if (a, b) in diffs else statistic,
                             basis.get((a, b)))
        out[(a, b)], out[(b, a)] = c, c.mirrored()
    return out


def _sequential(tested, logs, statistic, sequential: tuple[int, int], seq):
    """Points measured until decided: each tested pair at its look (``looks.pair_look``), its
    estimate, weight and anytime p-values (up, then down)."""
    look = {(a, b): pair_look(logs[a], logs[b], statistic, *sequential, seq[a], seq[b]) for a, b in tested}
    est = {pair: lk.estimate for pair, lk in look.items()}
    weight = {pair: lk.weight for pair, lk in look.items()}
    p = np.array([look[pair].up for pair in tested] + [look[pair].down for pair in tested])
    return est, {}, {}, weight, p


def _fixed(tested, logs, share, statistics, back_to_back, blocks, block_rule, noise):
    """A fixed design's estimates, per-pair log ratios (paired pairs), bases (block pairs), look
    weights and one-sided p-values (with ``block_rule``: the block looks' anytime p-values)."""
    statistic, paired, blocked = statistics
    est, diffs = _fixed_estimates(tested, logs, share, statistic, paired, back_to_back)
    basis = _block_estimates(est, diffs, blocked, blocks)
    weight = dict.fromkeys(tested, 1.0)
    p = _one_sided(est, tested)
    if block_rule is not None:
        _block_looks(tested, est, diffs, weight, p, basis, blocks or {}, block_rule, noise)
    return est, diffs, basis, weight, p


def _fixed_estimates(tested, logs, share, statistic, paired, back_to_back):
    """A fixed design's estimate for each tested pair (Welch's on the log throughputs, or the paired
    t where the pair was measured back to back), and the paired pairs' per-pair log ratios."""
    diffs: dict[tuple[str, str], np.ndarray] = {}
    est = {(a, b): statistic.compare(logs[a], logs[b], share[a], share[b]) for a, b in tested}
    for (a, b), (xs, ys) in (back_to_back or {}).items():
        # both arms of a pair come from the same server starts: the candidate's (a merge numbers
        # each run directory's runs as starts of their own)
        both = share.get(a, 1.0)
        if (a, b) not in est:  # given the other way round
            (a, b), (xs, ys) = (b, a), (ys, xs)
        pa, pb = (statistic.values(np.asarray(_usable(v))) for v in (xs, ys))
        n = min(pa.size, pb.size)
        if (a, b) in est and n >= 2:
            est[(a, b)], diffs[(a, b)] = paired.compare(pa, pb, both, both), pa[:n] - pb[:n]
    return est, diffs


def _block_estimates(est, diffs, blocked: BlockLogRatio, blocks) -> dict[tuple[str, str], str]:
    """The tested pairs measured in 2 or more back-to-back blocks: their estimates replaced by the
    block means' (``BlockLogRatio``); returns what each rests on. A pair of 2 blocks without a
    paired component in the noise keeps its paired estimate."""
    basis = {}
    for (a, b), ratios in (blocks or {}).items():
        if (a, b) not in est:  # given the other way round
            (a, b), ratios = (b, a), [[1 / r for r in block] for block in ratios]
        usable = [[r for r in block if r is not None and 0 < r < math.inf] for block in ratios]
        usable = [block for block in usable if block]
        if (a, b) not in est or len(usable) < 2:
            continue
        try:
            est[(a, b)], basis[(a, b)] = blocked.blocks(usable)
        except ValueError:
            continue
        diffs.pop((a, b), None)
    return basis


def _block_looks(tested, est, diffs, weight, p: np.ndarray, basis, blocks, rule: tuple[int, int], noise) -> None:
    """Blocks added until decided: each tested pair of a candidate and no speculation, or of two
    candidates, with ``rule[0]`` blocks or more a side, at its look (``looks.block_look``): its
    estimate, weight, anytime p-values (in ``p``: up, then down) and basis replaced in place."""
    lo, hi = rule
    base = {b for _, b in blocks}
    mine = {a: [blk for blk in ratios if blk] for (a, _), ratios in blocks.items()}
    for u, (a, b) in enumerate(tested):
        if a in mine and b in mine:
            sides = (mine[a], mine[b])
        elif a in mine and b in base:
            sides = (mine[a], None)
        elif b in mine and a in base:  # no speculation first: its ratios the other way round
            sides = ([[1 / r for r in blk] for blk in mine[b]], None)
        else:
            continue
        if min(len(s) for s in sides if s is not None) < lo:
            continue
        look, basis[(a, b)] = block_look(sides[0], lo, hi, noise, sides[1])
        est[(a, b)], weight[(a, b)] = look.estimate, look.weight
        p[u], p[u + len(tested)] = look.up, look.down
        diffs.pop((a, b), None)


def _one_sided(est, tested) -> np.ndarray:
    """One-sided p-values: "a is faster than b" for every tested pair (up), then "b is faster than a"
    (down)."""
    from scipy import special

    t = np.array([float(est[pair].t()) for pair in tested])
    df = np.array([float(est[pair].df) for pair in tested])
    return np.concatenate([special.stdtr(df, -t), special.stdtr(df, t)]) if tested else np.zeros(0)


@dataclass(frozen=True)
class _Family:
    """The Holm family of one concurrency: each tested pair's estimate and look weight, its two
    one-sided p-values, which of them Holm's step-down rejects, and each one's step."""
    tested: list[tuple[str, str]]
    est: dict
    weight: dict
    alpha: float
    m: int
    rejected: np.ndarray
    step: np.ndarray
    next_level: float

    @classmethod
    def of(cls, tested, est, weight, p: np.ndarray, alpha: float) -> "_Family":
        m = p.size
        rejected = holm(p, alpha) if m else np.zeros(0, dtype=bool)
        order = np.argsort(np.nan_to_num(p, nan=1.0), kind="stable")
        step = np.empty(m, dtype=int)
        step[order] = np.arange(m)
        next_level = alpha / max(m - int(rejected.sum()), 1)
        return cls(tested, est, weight, alpha, m, rejected, step, next_level)

    def judge(self, pair, logs, diffs, share, sequential, noise, margin, statistic, basis=None) -> Comparison:
        """The tested ``pair``'s comparison: its verdict, level and interval, and when undecided what
        would settle it."""
        a, b = pair
        u, e = self.tested.index(pair), self.est[pair]
        if self.rejected[u] or self.rejected[u + len(self.tested)]:
            side = u if self.rejected[u] else u + len(self.tested)
            verdict, level = ("faster" if self.rejected[u] else "slower"), self.alpha / (self.m - int(self.step[side]))
            runs, needs_start = None, False
        elif basis:  # blocks: only more blocks settle it
            verdict, level, runs, needs_start = "undecided", self.next_level, None, False
        else:
            verdict, level = "undecided", self.next_level
            va, vb = (float(np.var(logs[x], ddof=1)) for x in (a, b))
            if pair in diffs:  # paired: the spread of the differences, nothing on the other side
                va, vb = float(np.var(diffs[pair], ddof=1)), 0.0
            center = float(e.center)
            shares = share[a] + share[b]
            final = level * (look_weights(*sequential)[-1] if sequential else 1.0)  # the last look's level
            runs = runs_to_settle(va, vb, center, final, noise, max(len(logs[a]), len(logs[b])),
                                  shares=shares)
            needs_start = runs is None and abs(center) <= start_floor(final, noise, shares)
        level *= self.weight[pair]
        iv = interval_at(statistic, e, 1.0 - 2.0 * level)
        if verdict == "undecided" and margin is not None and 1 / (1 + margin) <= iv.low and iv.high <= 1 + margin:
            verdict, runs, needs_start = EQUIVALENT, None, False
        return Comparison(a, b, iv.ratio, iv, verdict, level, self.m, runs, needs_start, noise, margin, basis)


def _shares(values: Sequence[float], starts: Sequence[int] | None) -> np.ndarray | None:
    """The start shares of a point's first n runs, for every n (None: one server start)."""
    if not starts or len(starts) != len(values):
        return None
    return start_shares(np.asarray(list(starts)))
