"""Simulated checks of the context-conditioned test (pure: numpy), with a target whose next-token
distribution depends on the whole context, not only on the previous token.

The simulated target is a small recurrent model with fixed random weights: a state
``h_t = tanh(W h_(t-1) + E[x_t])`` carried over every token of the prompt and the output, and the
logits ``U h_t``. Each check draws distinct random prompts, one sample per prompt, for the draft's
run and for the control run, every token from the processed distribution (temperature, top-p) at
its context, and scores every emitted token after the first against the target's exact
distribution there, as the engine check does.

A defective sampler, at a share ``eps`` of its tokens, emits the target's top-1 token instead
("sharp") or a token outside the target's top two ("flat"); a lossless one has ``eps = 0``.

``previous_only`` scores every token against the distribution after its previous token alone (a
fresh state fed that one token), the assumption the tiny targets' exact test makes: on this
target it is wrong, and the simulation shows a lossless sampler rejected far above the level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llama4spec.lossless import conditioned
from llama4spec.lossless.processed import Sampling, batch

VOCAB, HIDDEN = 48, 24


@dataclass(frozen=True)
class Target:
    embed: np.ndarray
    recur: np.ndarray
    head: np.ndarray

    @classmethod
    def make(cls, seed: int = 7, sharpness: float = 3.0) -> "Target":
        rng = np.random.default_rng(seed)
        return cls(rng.normal(0, 1.0, (VOCAB, HIDDEN)), rng.normal(0, 1.2 / np.sqrt(HIDDEN), (HIDDEN, HIDDEN)),
                   rng.normal(0, sharpness / np.sqrt(HIDDEN), (VOCAB, HIDDEN)))

    def step(self, h: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        return np.tanh(h @ self.recur.T + self.embed[tokens])

    def logprobs(self, h: np.ndarray) -> np.ndarray:
        z = h @ self.head.T
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


@dataclass(frozen=True)
class Sample:
    run: conditioned.Run  # every token after an output's first against its whole context
    previous_only: conditioned.Run  # the same tokens against the distribution after the previous token alone


def _draw(lp: np.ndarray, s: Sampling, rng: np.random.Generator) -> np.ndarray:
    """One token per row from the processed distribution (vLLM's order: temperature, top-k, top-p)."""
    from llama4spec.lossless.processed import process

    p = np.stack([process(row / s.temperature, s) for row in lp]) if s.top_p < 1 or s.k else None
    if p is None:
        z = lp / s.temperature
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
    u = rng.random((lp.shape[0], 1))
    return np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), lp.shape[1] - 1)


def run(target: Target, s: Sampling, prompts: int, tokens: int, rng: np.random.Generator,
        eps: float = 0.0, direction: str = "sharp") -> Sample:
    """One run: ``prompts`` distinct random prompts (4-8 tokens), ``tokens`` emitted each."""
    h = np.zeros((prompts, HIDDEN))
    lengths = rng.integers(4, 9, prompts)
    for t in range(int(lengths.max())):
        live = t < lengths
        h[live] = target.step(h[live], rng.integers(0, VOCAB, int(live.sum())))
    after_one = target.logprobs(target.step(np.zeros((VOCAB, HIDDEN)), np.arange(VOCAB)))
    lps, prevs, drawn_all = [], [], []
    last = None
    for t in range(tokens):
        lp = target.logprobs(h)
        drawn = _draw(lp, s, rng)
        if eps > 0:
            ranked = np.argsort(-lp, axis=1)
            swap = rng.random(prompts) < eps
            if direction == "sharp":
                drawn[swap] = ranked[swap, 0]
            else:
                drawn[swap] = ranked[swap, 2 + rng.integers(0, VOCAB - 2, int(swap.sum()))]
        if t > 0:
            lps.append(lp)
            prevs.append(after_one[last])
            drawn_all.append(drawn)
        last = drawn
        h = target.step(h, drawn)
    tokens_ = np.concatenate(drawn_all)
    ctx = conditioned.Run(*batch(np.concatenate(lps), tokens_, s))
    prev = conditioned.Run(*batch(np.concatenate(prevs), tokens_, s))
    return Sample(ctx, prev)


@dataclass(frozen=True)
class Outcome:
    rejected: bool
    p_value: float
    detectable: float | None  # the stated deviation (None: not computed, or not within 1)
    previous_rejected: bool


def check(target: Target, s: Sampling, prompts: int, tokens: int, level: float, seed: int,
          eps: float = 0.0, direction: str = "sharp", draws: int = 400, stated: bool = True) -> Outcome:
    """One simulated check: the draft's run (defective at ``eps``) against a lossless control."""
    rng = np.random.default_rng(seed)
    draft = run(target, s, prompts, tokens, rng, eps, direction)
    control = run(target, s, prompts, tokens, rng)
    a, b = draft.run, control.run
    _, p, crit = conditioned.p_value(a, b, seed, draws, level)
    worst = None
    if stated:
        sharp = conditioned.detectable(a, b, level, "sharp", crit=crit)
        flat = conditioned.detectable(a, b, level, "flat", crit=crit)
        worst = None if sharp is None or flat is None else max(sharp, flat)
    # the previous-token test: the draft's run alone against the distribution after its previous token
    # (the exact test's assumption on the tiny targets)
    return Outcome(p < level, p, worst, conditioned.fit(draft.previous_only) < level)


def table(checks: int = 1000, level: float = 0.05, prompts: int = 32, tokens: int = 16, temperature: float = 0.8,
          top_p: float = 1.0, seed: int = 0) -> dict[str, dict[str, float]]:
    """The simulation's table: ``checks`` lossless checks (their rejection rate, the stated deviation's
    median, the previous-token test's rejection rate), then ``checks`` a direction with a sampler off by
    that median deviation (the rate it is found at)."""
    target = Target.make()
    s = Sampling(temperature, top_p)
    null = [check(target, s, prompts, tokens, level, seed + i) for i in range(checks)]
    stated = [o.detectable for o in null if o.detectable is not None]
    eps = float(np.median(stated))
    out = {"lossless": {"rejected": float(np.mean([o.rejected for o in null])),
                        "previous_only_rejected": float(np.mean([o.previous_rejected for o in null])),
                        "stated": eps, "stated_low": float(np.min(stated)), "stated_high": float(np.max(stated))}}
    for k, direction in enumerate(("sharp", "flat")):
        runs = [check(target, s, prompts, tokens, level, seed + (k + 1) * checks + i, eps, direction, stated=False)
                for i in range(checks)]
        out[direction] = {"rejected": float(np.mean([o.rejected for o in runs])), "eps": eps}
    return out
