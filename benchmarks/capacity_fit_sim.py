"""The fitted capacity search (llama4spec/capacity/fit.py) beside the per-rate search
(``search: bisect``, llama4spec/capacity/probing.py) on the same simulated servers. No engine; about
a minute.

A simulated server: mean attainment falls with the request rate as a logistic curve in log rate,
shaped like the tiny server's measured grid (docs/capacity.md: target 0.9 crossed near 25 req/s,
about 0.06 lost per 10% of rate); a run sends 15 s x rate requests and its attainment is
beta-binomial with design effect D (1: binomial requests; 4 and 9: requests in one run share the
queue, the intra-run correlation (D - 1) / (requests - 1)). Both searches start at 8 req/s and
aim at a 10% precision: the fitted one stops when its 95% interval is within +-10% of its
estimate (or at 40 runs), the per-rate one bisects to U / L - 1 <= 10% with its verdicts (6 runs
at most a rate, no cliff check).

``--place crossing``: each fitted run at the fitted crossing itself (the rule before
``capacity.place``), for comparison. ``--capacity`` and ``--scale`` move the true curve: a
flatter one (``--scale 0.3 --capacity 11``) is what the real tiny server without speculation showed
on a slow day (docs/capacity.md).

``--stall P``: each run, with probability P, stalls as a run on a starved front end does
(docs/capacity.md): its attainment is drawn uniform in [0, 0.1] whatever the rate.

Printed per design effect: how often each interval holds the true capacity, their median runs and
relative widths, how often the fitted search stopped at its budget, how often its answer said
the logistic shape does not fit (the lack-of-fit test's false alarms: the true curve is logistic)
and how often it set a run aside as an outlier (without stalls: the outlier test's false alarms).

    .venv/bin/python benchmarks/capacity_fit_sim.py [--searches N] [--seed N] [--designs 1,4,9] [--stall P]
        [--figure PATH] [--place optimal|crossing] [--capacity 25] [--scale 0.15]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from llama4spec.capacity import fit as fit

from llama4spec.capacity import curve as curve

from llama4spec.capacity import fit_search as cfs
from llama4spec.capacity.plot import capacity_fits
from llama4spec.capacity import answer as answer
from llama4spec.capacity import probing as bisect

TARGET = 0.9
CAPACITY = 25.0  # req/s: where the true curve crosses the target
SCALE = 0.15  # the logistic's scale in log rate
DURATION_S = 15.0
START = 8.0
PRECISION = 0.10


def at_crossing(settings: fit.Settings, runs, f: curve.Fit, kept) -> float:
    """The placement before ``capacity_place``: the fitted crossing, kept within [lowest rate, UP x highest]."""
    rates = [r.rate for r in runs]
    estimate = curve.crossing(f, settings.target, settings.confidence)[0]
    return cfs.snap(settings, min(cfs.UP * max(rates), max(min(rates), estimate)))


def mean_attainment(rate: float) -> float:
    middle = math.log(CAPACITY) - SCALE * math.log(1 / TARGET - 1)
    return 1 / (1 + math.exp((math.log(rate) - middle) / SCALE))


def one_run(rate: float, design: float, rng: np.random.Generator, stall: float = 0.0) -> tuple[int, int]:
    """(good requests, requests sent) of one simulated run; with probability ``stall`` a stalled one."""
    n = max(16, math.ceil(DURATION_S * rate))
    if stall and rng.random() < stall:
        return int(rng.binomial(n, rng.uniform(0.0, 0.1))), n
    p = mean_attainment(rate)
    rho = (design - 1) / (n - 1)
    if rho > 0:
        k = 1 / rho - 1
        p = rng.beta(max(p * k, 1e-9), max((1 - p) * k, 1e-9))
    return int(rng.binomial(n, p)), n


def fitted_search(design: float, rng: np.random.Generator, stall: float = 0.0) -> tuple[list[fit.Run], cfs.Decision]:
    settings = fit.checked(fit.Settings(start=START, target=TARGET, precision=PRECISION))
    runs: list[fit.Run] = []
    while (d := cfs.decide(settings, runs)).rate is not None:
        good, sent = one_run(d.rate, design, rng, stall)
        runs.append(fit.Run(d.rate, good, sent))
    return runs, d


def bisect_search(design: float, rng: np.random.Generator, stall: float = 0.0) -> answer.Capacity:
    state = bisect.begin(bisect.Settings(start=START, target=TARGET, precision=PRECISION, confirm=None))
    while (rate := bisect.next_probe(state)) is not None:
        good, sent = one_run(rate, design, rng, stall)
        state = bisect.record_run(state, rate, bisect.Run(good / sent, sent))
    return answer.capacity(state)


def holds(low: float | None, high: float | None) -> bool:
    return (low is None or low <= CAPACITY) and (high is None or CAPACITY <= high)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--searches", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--designs", default="1,4,9", help="design effects, comma-separated")
    ap.add_argument("--stall", type=float, default=0.0, help="the probability that a run stalls")
    ap.add_argument("--figure", type=Path, help="draw one fitted search per design effect into this PNG")
    ap.add_argument("--place", choices=["optimal", "crossing"], default="optimal",
                    help="where a fitted run goes: where it most narrows the crossing (the search's rule), or at it")
    ap.add_argument("--capacity", type=float, default=CAPACITY, help="req/s: where the true curve crosses the target")
    ap.add_argument("--scale", type=float, default=SCALE, help="the true logistic's scale in log rate")
    args = ap.parse_args()
    globals().update(CAPACITY=args.capacity, SCALE=args.scale)
    if args.place == "crossing":
        cfs._placed = at_crossing  # the earlier rule, for comparison
    started = time.monotonic()
    print(f"true capacity {CAPACITY:g} req/s at attainment {TARGET:g}; runs of {DURATION_S:g} s; start {START:g} "
          f"req/s; precision {PRECISION:.0%}; {args.searches} searches a design effect; a run stalls with "
          f"probability {args.stall:g}; scale {SCALE:g}; fitted runs placed {args.place}\n")
    print(f"{'design effect':>13} | {'fitted: holds':>13} {'runs':>5} {'width':>6} {'budget':>6} {'shape':>6} {'outlier':>7} | "
          f"{'bisect: holds':>13} {'runs':>5} {'width':>6}")
    shown = {}
    for design in (float(x) for x in args.designs.split(",")):
        rng = np.random.default_rng([args.seed, int(design)])
        f_hold, f_runs, f_width, budget, shape, aside, b_hold, b_runs, b_width = [], [], [], 0, 0, 0, [], [], []
        for _ in range(args.searches):
            runs, d = fitted_search(design, rng, args.stall)
            a = d.final
            f_hold.append(holds(a.low, a.high) if a.estimate is not None else False)
            f_runs.append(len(runs))
            f_width.append((a.high - a.low) / a.estimate if a.half_width is not None else math.inf)
            budget += d.stop == cfs.BUDGET_STOP
            shape += not a.shape_fits
            aside += bool(a.outliers)
            c = bisect_search(design, rng, args.stall)
            b_hold.append(c.rate is not None and holds(c.rate, c.high))
            b_runs.append(c.runs)
            b_width.append(c.high / c.rate - 1 if c.rate and c.high else math.inf)
        shown[f"design effect {design:g}"] = (runs, a)
        print(f"{design:>13g} | {np.mean(f_hold):>13.3f} {np.median(f_runs):>5.0f} {np.median(f_width):>6.0%} "
              f"{budget / args.searches:>6.1%} {shape / args.searches:>6.1%} {aside / args.searches:>7.1%} | {np.mean(b_hold):>13.3f} "
              f"{np.median(b_runs):>5.0f} "
              f"{np.median(b_width):>6.0%}")
    print("\nholds: the interval holds the true capacity (a side left open counts as holding); runs and width: "
          "medians over searches, width relative (fitted: (high - low) / estimate; bisect: U / L - 1); budget: "
          "fitted searches stopped at 40 runs; shape: fitted answers that say the logistic shape does not fit; "
          "outlier: fitted answers that set a run aside as an outlier")
    if args.figure:
        capacity_fits(shown, TARGET, args.figure)
        print(f"figure: {args.figure}")
    print(f"\n{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
