"""Coverage of the ratio interval with the noise estimated from a sweep's own starts, against
the constant between-start log-sd comparisons carried before (0.13, taken as known), on simulated sweeps.

Per cell (true between-start sd x true within-start sd, log scale), 5,000 simulated sweeps each:

- *estimated*: two settings, each started 3 times with 4 runs a start; the components estimated
  from the sweep (``stats.components.components``: one-way random-effects ANOVA pooled over the two
  settings, between part clamped at 0, Satterthwaite df); the 95% interval of the ratio. Coverage
  at a true 1.15x, and A/A: how often two identical settings are declared different;
- *+ profile*: the same, the sweep's components pooled by df with a profile (``components.combine``),
  itself estimated from a simulated calibration of 6 starts x 4 runs;
- *constant*: today's design, each setting one start with 4 runs, Welch's t with the constant
  0.13 added as known (``statistic.LogRatio``): coverage and A/A the same way;
- *to decide 1.15x* (80% of 2,000 sweeps with the interval above 1): estimated, the runs a start
  from Kalibera and Jones' allocation (``design.runs_per_start`` on the true components and the
  costs) and the fewest starts a setting that do it; constant, one start and the fewest runs (up
  to 100: "never" when the constant's floor z x sqrt(2) x 0.13 = 0.36 in log is above log 1.15 =
  0.14), and with several starts of 4 runs (the constant shrunk by the starts, as a revisit does).

The grid is the one the unit test checks (tests/unit/stats/test_simulate.py); the row of
between 0.25 shows the constant under-covering on a machine noisier than the one it was measured on.
Seeded; about 10 s on one core.

    .venv/bin/python benchmarks/noise_coverage.py [--sweeps 5000] [--start-s 40] [--run-s 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from llama4spec.stats.components import combine, components
from llama4spec.stats.design import runs_per_start
from llama4spec.stats.noise import prior
from llama4spec.stats.simulate import simulate, simulated_intervals
from llama4spec.stats.tdist import t_quantile
from llama4spec.stats.statistic import LogRatio

# The constant every comparison carried before the estimate: the CPU prior's between-start sd taken
# as known (conf/hardware/cpu.yaml, benchmarks/spreads.py), applied on every machine.
BETWEEN_SD = 0.13
GRID = [(b, w) for b in (0.01, 0.05, 0.13) for w in (0.03, 0.15)] + [(0.25, 0.15)]
TRUTH = math.log(1.15)
STARTS, RUNS = 3, 4
POWER = 0.80


def estimated(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(center, half-width) of the estimated design's 95% interval, per sweep."""
    center, half, _ = simulated_intervals(y, 1, 0)
    return center, half


def with_profile(rng):
    """The estimated design's components pooled (``components.combine``) with a profile: each sweep's own
    simulated calibration (one setting, 6 starts x 4 runs, ``llama4spec calibrate``'s default)."""
    def rule(y: np.ndarray, between: float, within: float):
        calibration = components(simulate(rng, len(y), between, within, [0.0], 6, 4), "profile")
        center, half, _ = simulated_intervals(y, 1, 0, noise=combine(calibration, components(y)))
        return center, half

    return rule


def constant(y: np.ndarray, share: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Today's rule: Welch's t on the runs (starts flattened) with the constant between term."""
    a, b = (y[:, s].reshape(len(y), -1) for s in (1, 0))
    est = LogRatio(prior(BETWEEN_SD, 0.0, "the constant")).compare(a, b, share, share)
    return est.center, t_quantile(est.df, 0.975) * est.se


def cover(rng, between, within, rule, starts, runs, sweeps) -> tuple[float, float]:
    y = simulate(rng, sweeps, between, within, [0.0, TRUTH], starts, runs)
    center, half = rule(y)
    aa = simulate(rng, sweeps, between, within, [0.0, 0.0], starts, runs)
    c0, h0 = rule(aa)
    return _rates(center, half, c0, h0)


def cover_profiled(rng, between, within, sweeps) -> tuple[float, float]:
    rule = with_profile(rng)
    y = simulate(rng, sweeps, between, within, [0.0, TRUTH], STARTS, RUNS)
    center, half = rule(y, between, within)
    aa = simulate(rng, sweeps, between, within, [0.0, 0.0], STARTS, RUNS)
    c0, h0 = rule(aa, between, within)
    return _rates(center, half, c0, h0)


def _rates(center, half, c0, h0) -> tuple[float, float]:
    return float(np.mean(np.abs(center - TRUTH) <= half)), float(np.mean(np.abs(c0) > h0))


def decided(rng, between, within, rule, starts, runs, sweeps=2000) -> float:
    y = simulate(rng, sweeps, between, within, [0.0, TRUTH], starts, runs)
    center, half = rule(y)
    return float(np.mean(center - half > 0))


def fewest(ok, low: int, high: int) -> int | None:
    """The smallest n in [low, high] with ok(n) (ok taken as monotone: bisection), None if not ok(high)."""
    if not ok(high):
        return None
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid + 1, high)
    return low


def to_decide_estimated(rng, between, within, start_s, run_s) -> tuple[int, int] | None:
    runs = runs_per_start(prior(between, within, "true"), start_s, run_s).runs
    m = fewest(lambda m: decided(rng, between, within, estimated, m, runs) >= POWER, 2, 40)
    return (m, runs) if m else None


def to_decide_constant_runs(rng, between, within) -> int | None:
    """Today's design: one start a setting, the fewest runs."""
    return fewest(lambda n: decided(rng, between, within, constant, 1, n) >= POWER, 2, 100)


def to_decide_constant_starts(rng, between, within) -> int | None:
    """The constant with several starts of RUNS runs (a revisited sweep): the fewest starts."""
    return fewest(lambda m: decided(rng, between, within, lambda y: constant(y, 1.0 / m), m, RUNS) >= POWER, 2, 40)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=5000)
    parser.add_argument("--start-s", type=float, default=40.0, help="seconds a server start costs (default 40)")
    parser.add_argument("--run-s", type=float, default=10.0, help="seconds a counted run costs (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    began = time.monotonic()
    se = math.sqrt(0.05 * 0.95 / args.sweeps)
    print(f"{args.sweeps} simulated sweeps a cell; 95% intervals of a ratio; A/A limit 5% + 3 MC se = "
          f"{100 * (0.05 + 3 * se):.2f}%; costs: a start {args.start_s:g} s, a run {args.run_s:g} s")
    print(f"estimated: {STARTS} starts x {RUNS} runs a setting, components from the sweep; constant: 1 start x "
          f"{RUNS} runs, between sd {BETWEEN_SD} added")
    head = (f"{'between':>7} {'within':>6} | {'coverage':>8} {'A/A':>6} | {'coverage':>8} {'A/A':>6} | "
            f"{'coverage':>8} {'A/A':>6} | "
            f"{'1.15x: estimated':>26} | {'1.15x: constant, 1 start':>24} {'several starts':>20}")
    print(f"{'true sd':>14} | {'estimated':>15} | {'+ profile':>15} | {'constant':>15} | "
          f"{'starts x runs a setting (time)':>26} |")
    print(head)
    print("-" * len(head))
    for between, within in GRID:
        cov_e, aa_e = cover(rng, between, within, estimated, STARTS, RUNS, args.sweeps)
        cov_c, aa_c = cover(rng, between, within, constant, 1, RUNS, args.sweeps)
        cov_p, aa_p = cover_profiled(rng, between, within, args.sweeps)
        need = to_decide_estimated(rng, between, within, args.start_s, args.run_s)
        if need:
            m, r = need
            need_text = f"{m} x {r} ({m * (args.start_s + r * args.run_s) / 60:.1f} min)"
        else:
            need_text = "more than 40 starts"
        one, several = to_decide_constant_runs(rng, between, within), to_decide_constant_starts(rng, between, within)
        one_text = f"1 x {one}" if one else "never (1 x 100: no)"
        three_text = (f"{several} x {RUNS} ({several * (args.start_s + RUNS * args.run_s) / 60:.1f} min)" if several
                      else "more than 40 starts")
        print(f"{between:>7.2f} {within:>6.2f} | {100 * cov_e:>7.1f}% {100 * aa_e:>5.1f}% | {100 * cov_p:>7.1f}% "
              f"{100 * aa_p:>5.1f}% | {100 * cov_c:>7.1f}% "
              f"{100 * aa_c:>5.1f}% | {need_text:>26} | {one_text:>24} {three_text:>10}")
    print(f"\n{time.monotonic() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
