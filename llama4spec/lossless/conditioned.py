"""The context-conditioned test: do the emitted tokens follow the target's own distribution at each
token's context, more closely than a run without the draft does? (pure: numpy and scipy)

Each emitted token after an output's first is a ``processed.Context``: the target's processed
probabilities of its top-1 token, its top-2 token and the rest at that context (scored by an
engine without speculation), and which of the three was emitted. Under losslessness the category
of every token is an independent draw from its own three probabilities, whatever the contexts,
so with one sample per prompt and distinct prompts the counts of a run have a known expectation
E = sum of the probabilities and covariance S = sum of (diag q - q q^T).

The statistic compares the draft's run with the engine's own control, a run without the draft
scored the same way (prefill scoring and decoding differ in numerics; what they share cancels):

    d = (O_draft - E_draft) / N_draft - (O_control - E_control) / N_control
    X = d^T (S_draft / N_draft^2 + S_control / N_control^2)^+ d

and its p-value is exact given the contexts: ``draws`` seeded Monte Carlo replays of every
token's category from its own probabilities, (1 + hits) / (1 + draws). The verdict is lossy when
p < level: the draft's run departs from the reference more than the no-draft run does.

The stated power: a sampler that, at a share ``eps`` of its tokens, emits the target's top-1 token
instead ("too sharp", as a temperature too low), or a token outside the target's top two ("too
flat"), is found with 80% power at the test's level, for the contexts actually collected (normal
approximation, X ~ noncentral chi-square); ``benchmarks/lossless_simulation.py`` and the unit test
of ``simulate`` check that figure on 1,000 simulated checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from llama4spec.lossless.processed import Context

DRAWS = 20000
CHUNK = 500
IMPOSSIBLE = 1e-12  # a category below this probability at a context is one the reference rules out
POWER = 0.8  # the power the stated deviation is found with
# the power the normal approximation is solved for: 0.85, a margin for the approximation and for the
# contexts of a defective run differing from the ones its figure was computed on; the simulation
# (1,000 checks a direction, benchmarks/lossless_simulation.py) finds the stated figure 84-85% of the time
DESIGN = 0.85


@dataclass(frozen=True)
class Run:
    """The contexts of one run as arrays: probabilities (N x 3) and observed categories (N)."""

    probs: np.ndarray
    observed: np.ndarray

    @classmethod
    def of(cls, contexts: Sequence[Context]) -> "Run":
        probs = np.array([c.probs for c in contexts], dtype=np.float64).reshape(-1, 3)
        probs = np.clip(probs, 0.0, 1.0)
        probs /= np.maximum(probs.sum(axis=1, keepdims=True), 1e-300)
        return cls(probs, np.array([c.observed for c in contexts], dtype=np.int64))

    @property
    def n(self) -> int:
        return int(self.observed.size)

    def counts(self) -> np.ndarray:
        return np.bincount(self.observed, minlength=3).astype(np.float64)[:3]

    def expected(self) -> np.ndarray:
        return self.probs.sum(axis=0)

    def impossible(self) -> int:
        """Tokens emitted in a category the reference gives (next to) no probability at their context
        (below ``IMPOSSIBLE``: outside top-k or top-p, say)."""
        return int((self.probs[np.arange(self.n), self.observed] < IMPOSSIBLE).sum())

    def covariance(self) -> np.ndarray:
        return _covariance(self.probs)


@dataclass(frozen=True)
class Result:
    statistic: float
    p_value: float
    draws: int
    counts: tuple[tuple[int, ...], tuple[int, ...]]  # (draft, control) per category
    expected: tuple[tuple[float, ...], tuple[float, ...]]
    fit: tuple[float, float]  # each run alone against the reference (normal approximation): (draft, control)
    detectable: float | None  # eps found with 80% power, the larger of the two directions; None: not within 1
    sharp: float | None
    flat: float | None
    tv: float | None  # the mean total-variation distance of the rank categories that ``detectable`` carries


def _inverse(v: np.ndarray) -> np.ndarray:
    return np.linalg.pinv(v, rcond=1e-12, hermitian=True)


def _scale(draft: Run, control: Run) -> np.ndarray:
    return draft.covariance() / draft.n ** 2 + control.covariance() / control.n ** 2


def _replay_counts(probs: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``draws`` replays of a run's category counts (draws x 3)."""
    cum = np.cumsum(probs, axis=1)
    u = rng.random((draws, probs.shape[0]))
    first = (u < cum[:, 0]).sum(axis=1)
    second = ((u >= cum[:, 0]) & (u < cum[:, 1])).sum(axis=1)
    return np.stack([first, second, probs.shape[0] - first - second], axis=1).astype(np.float64)


def p_value(draft: Run, control: Run, seed: int = 0, draws: int = DRAWS,
            level: float | None = None) -> tuple[float, float, float | None]:
    """(statistic, Monte Carlo p-value, the replays' critical value at ``level``) given the contexts:
    the statistic the test rejects at, at least (None without a level)."""
    if draft.n == 0 or control.n == 0:
        raise ValueError("a run with no scored tokens")
    if draft.impossible() > 0 and control.impossible() == 0:  # the quadratic form cannot see these: p = 0
        return math.inf, 0.0, None
    inv = _inverse(_scale(draft, control))
    ed, ec = draft.expected() / draft.n, control.expected() / control.n
    observed = draft.counts() / draft.n - ed - (control.counts() / control.n - ec)
    x = float(observed @ inv @ observed)
    rng = np.random.default_rng(seed)
    hits, done, kept = 0, 0, []
    while done < draws:
        m = min(CHUNK, draws - done)
        d = (_replay_counts(draft.probs, m, rng) / draft.n - ed) - (_replay_counts(control.probs, m, rng) / control.n - ec)
        sims = np.einsum("ij,jk,ik->i", d, inv, d)
        hits += int((sims >= x - 1e-9 * max(1.0, x)).sum())
        kept.append(sims)
        done += m
    crit = None
    if level is not None:  # the smallest X whose p-value (1 + hits) / (1 + draws) is below level
        ranked = np.sort(np.concatenate(kept))[::-1]
        allowed = int(math.ceil(level * (1 + draws))) - 2  # hits allowed: (1 + hits) < level (1 + draws)
        crit = float(ranked[allowed]) * (1 + 1e-9) if 0 <= allowed < ranked.size else math.inf
    return x, (1 + hits) / (1 + draws), crit


def fit(run: Run) -> float:
    """One run against the reference alone (chi-square approximation): shown, not the verdict."""
    from scipy.stats import chi2

    d = run.counts() - run.expected()
    v = run.covariance()
    x = float(d @ _inverse(v) @ d)
    df = max(1, int(np.linalg.matrix_rank(v, tol=1e-9)))
    return float(chi2.sf(x, df))


def _covariance(probs: np.ndarray) -> np.ndarray:
    """The covariance of the category counts of independent tokens with these probabilities (N x 3)."""
    return np.diag(probs.sum(axis=0)) - probs.T @ probs


def detectable(draft: Run, control: Run, level: float, direction: str, power: float = DESIGN,
               crit: float | None = None) -> float | None:
    """The smallest share eps of the draft's tokens moved to the target's top-1 ("sharp") or outside its
    top two ("flat") that the test finds with ``power`` at ``level``; None when eps = 1 is not enough.

    Normal approximation of the counts: under the alternative the difference d has mean eps * m (m the
    mean of (target - q) over the draft's tokens) and the covariance of the shifted probabilities, so
    X = d^T V^+ d (V the null's) is a weighted sum of noncentral chi-squares; its power is read off
    4,000 fixed normal draws (the same draws for every eps: a smooth, repeatable figure)."""
    from scipy.stats import chi2

    shift = np.array([1.0, 0.0, 0.0]) if direction == "sharp" else np.array([0.0, 0.0, 1.0])
    null = _scale(draft, control)
    inv = _inverse(null)
    df = max(1, int(np.linalg.matrix_rank(null, tol=1e-12 * max(1.0, float(np.abs(null).max())))))
    crit = float(chi2.ppf(1 - level, df)) if crit is None else crit
    if not math.isfinite(crit):
        return None
    z = np.random.default_rng(12345).standard_normal((4000, 3))
    m = (shift - draft.probs).mean(axis=0)
    rest = control.covariance() / control.n ** 2

    def found(eps: float) -> float:
        moved = (1 - eps) * draft.probs + eps * shift
        cov = _covariance(moved) / draft.n ** 2 + rest
        w, u = np.linalg.eigh(cov)
        d = (z * np.sqrt(np.clip(w, 0, None))) @ u.T + eps * m
        return float((np.einsum("ij,jk,ik->i", d, inv, d) >= crit).mean())

    if direction == "flat":  # tokens whose rest is ruled out: one emitted there is found at once
        ruled_out = int((draft.probs[:, 2] < IMPOSSIBLE).sum())
        if ruled_out:
            at_once = 1 - (1 - power) ** (1 / ruled_out)  # P(at least one of them moved) = power
            return at_once if found(at_once) < power else _solve(found, power, at_once)
    if found(1.0) < power:
        return None
    return _solve(found, power, 1.0)


def _solve(found, power: float, high: float) -> float:
    """The smallest eps in (0, high] with found(eps) >= power (found(high) >= power)."""
    low = 0.0
    for _ in range(24):
        mid = (low + high) / 2
        low, high = (mid, high) if found(mid) < power else (low, mid)
    return high


def test(draft: Sequence[Context], control: Sequence[Context], level: float, seed: int = 0,
         draws: int = DRAWS) -> Result:
    """The test of one temperature: the draft's run against the control, both scored by the target."""
    a, b = Run.of(draft), Run.of(control)
    x, p, crit = p_value(a, b, seed, draws, level)
    sharp, flat = detectable(a, b, level, "sharp", crit=crit), detectable(a, b, level, "flat", crit=crit)
    worst = None if sharp is None or flat is None else max(sharp, flat)
    tv = None
    if worst is not None:  # the larger of the two directions' mean total-variation distances
        tv = float(max(sharp * (1 - a.probs[:, 0]).mean(), flat * (1 - a.probs[:, 2]).mean()))
    return Result(x, p, draws, (tuple(int(c) for c in a.counts()), tuple(int(c) for c in b.counts())),
                  (tuple(float(e) for e in a.expected()), tuple(float(e) for e in b.expected())),
                  (fit(a), fit(b)), worst, sharp, flat, tv)
