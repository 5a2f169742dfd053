"""Power of the sequential rule (llama4spec/stats/sequential.py) against a fixed design of 10 runs a
side, simulated: no speculation against one lookahead truly faster by 1.1x .. 2.0x, every point one
server start, log throughput = log ratio + start effect (between-start sd) + run noise (within-start
sd). Both designs see the same draws. Per ratio: each design's power to call the lookahead faster
(95% confidence), the difference, and the mean runs used (both points together); then the rate of
any false declaration among five equally fast settings. No engine; about 15 s.

    .venv/bin/python benchmarks/decide_power.py [--sweeps N] [--within-sd SD] [--between-sd SD] [--seed N]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from llama4spec.stats.sequential import replay
from llama4spec.stats.statistic import LogRatio
from llama4spec.stats.noise import prior

BETWEEN_SD = 0.13  # the CPU hardware prior's between-start sd (conf/hardware/cpu.yaml), taken as known here
RATIOS = [round(1.1 + 0.1 * i, 1) for i in range(10)]


def simulate(ratios: list[float], sweeps: int, within_sd: float, between_sd: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    start = rng.normal(0.0, between_sd, (sweeps, len(ratios), 1))
    within = rng.normal(0.0, within_sd, (sweeps, len(ratios), 10))
    return 100.0 * np.exp(np.log(np.asarray(ratios))[None, :, None] + start + within)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=20_000, help="simulated sweeps per ratio (default 20000)")
    parser.add_argument("--within-sd", type=float, default=0.17,
                        help="log-sd of runs on one server start (default: measured here by benchmarks/spreads.py)")
    parser.add_argument("--between-sd", type=float, default=BETWEEN_SD,
                        help="log-sd between starts of one setting, taken as known (default: the CPU prior's, measured here)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    statistic = LogRatio(prior(args.between_sd, args.within_sd, "--between-sd"))
    began = time.perf_counter()

    print(f"{args.sweeps} sweeps a ratio; within-start sd {args.within_sd}, between-start sd {args.between_sd}")
    print(f"{'ratio':>5}  {'fixed 10':>8}  {'sequential':>10}  {'difference':>15}  {'runs fixed':>10}  {'runs seq':>8}")
    for i, ratio in enumerate(RATIOS):
        runs = simulate([1.0, ratio], args.sweeps, args.within_sd, args.between_sd, args.seed + i)
        fixed = replay(runs, 0, min_repeats=10, max_repeats=10, statistic=statistic)
        seq = replay(runs, 0, statistic=statistic)
        f_hit, s_hit = fixed.decisions.above[:, 1, 0], seq.decisions.above[:, 1, 0]
        diff = s_hit.astype(float) - f_hit
        diff_se = float(diff.std(ddof=1)) / math.sqrt(args.sweeps)
        print(f"{ratio:>5.1f}  {f_hit.mean():>8.3f}  {s_hit.mean():>10.3f}  {diff.mean():>+7.4f} +- {diff_se:.4f}"
              f"  {fixed.counts.sum(1).mean():>10.1f}  {seq.counts.sum(1).mean():>8.1f}")

    null = replay(simulate([1.0] * 5, args.sweeps, args.within_sd, args.between_sd, args.seed + 100), 0,
                  statistic=statistic)
    rate = null.ever_above.any(axis=(1, 2)).mean()
    print(f"five equal settings: any false declaration {rate:.4f} +- {math.sqrt(rate * (1 - rate) / args.sweeps):.4f}"
          f" (bound 0.05), mean runs a point {null.counts.mean():.2f}")
    print(f"{time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
