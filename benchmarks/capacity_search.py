"""The request capacity search (llama4spec/capacity/probing.py) against a dense grid of request rates,
on simulated servers, and its error rates. No engine; about a minute.

A simulated server: mean attainment falls with the request rate as a logistic curve (its true
capacity is where it crosses the target); a run adds run-to-run noise (``--run-sd``) and binomial
sampling of the requests it sends (60 s x rate, at least 16); its result is written as vLLM's
result JSON would be (completed, failed, duration, request_goodput, output_throughput, P95s) and
read back through ``BenchRecord`` and ``capacity.run_of``, as a real probe would be. Four settings
(no speculation and EAGLE k=1, 3, 5; TTFT binds for k=5, TPOT elsewhere), each searched from a
start rate of 1 req/s and measured on the grid the capacity issue asks for: rates 5% apart over
[0.5, 2] x capacity, 3 runs each, its boundary the highest rate with mean attainment >= target.

Printed: per setting, how often the search's interval holds the true capacity and the grid's
boundary (allowing one grid step), its runs against the grid's; the error rates of single verdicts
at a rate whose mean attainment is exactly the target; how often a planted cliff is flagged; one
searched answer in words.

    .venv/bin/python benchmarks/capacity_search.py [--servers N] [--run-sd SD] [--seed N]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from llama4spec.results.bench import BenchRecord
from llama4spec.capacity.answer import capacity, to_json
from llama4spec.capacity.probing import Probe, Run, Settings, begin, next_probe, record_run, run_of
from llama4spec.capacity.verdict import verdict
from llama4spec.capacity.gain import describe, gain, headline

TARGET = 0.95
THRESHOLDS = {"ttft": 1000.0, "tpot": 50.0}
SETTINGS = {"no speculation": (7.0, "tpot"), "EAGLE k=1": (9.0, "tpot"), "EAGLE k=3": (11.5, "tpot"),
            "EAGLE k=5": (10.0, "ttft")}  # logistic midpoint (req/s) and the metric that binds
WIDTH = 0.06  # the logistic's width, relative to its midpoint


class Server:
    def __init__(self, mid: float, binds: str, run_sd: float, rng: np.random.Generator, dip=None):
        self.mid, self.width, self.binds, self.run_sd, self.rng, self.dip = mid, WIDTH * mid, binds, run_sd, rng, dip

    def mean(self, rate: float) -> float:
        if self.dip and self.dip[0] <= rate <= self.dip[1]:
            return 0.5
        return 1 / (1 + math.exp((rate - self.mid) / self.width))

    @property
    def capacity(self) -> float:
        return self.mid + self.width * math.log(1 / TARGET - 1)

    def record(self, rate: float) -> BenchRecord:
        """One run as vLLM's result JSON would report it."""
        p = min(1.0, max(0.0, self.mean(rate) + self.rng.normal(0, self.run_sd)))
        sent = max(16, math.ceil(60 * rate))
        failed = int(self.rng.binomial(sent, 0.002))
        good = int(self.rng.binomial(sent - failed, p))
        duration = sent / rate
        load = rate / self.capacity
        p95 = {m: THRESHOLDS[m] * load * (1.05 if m == self.binds else 0.8) for m in THRESHOLDS}
        result = {"completed": sent - failed, "failed": failed, "duration": duration, "request_goodput": good / duration,
                  "output_throughput": 30.0 * rate, **{f"p95_{m}_ms": v for m, v in p95.items()}}
        return BenchRecord(label="probe", returncode=0, result=result)

    def run(self, rate: float) -> Run:
        return run_of(self.record(rate), THRESHOLDS, TARGET)


def search(server: Server, start: float = 1.0):
    s = begin(Settings(start=start, target=TARGET))
    while (rate := next_probe(s)) is not None:
        s = record_run(s, rate, server.run(rate))
    return s


def grid(server: Server, precision: float = 0.05, runs: int = 3) -> tuple[float | None, float, int]:
    """The dense grid's boundary, its step (relative) and its runs."""
    c = server.capacity
    rates = [0.5 * c * (1 + precision) ** i for i in range(int(math.log(4) / math.log(1 + precision)) + 1)]
    passing = [r for r in rates if np.mean([server.run(r).attainment for _ in range(runs)]) >= TARGET]
    return (max(passing) if passing else None), precision, runs * len(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=100, help="simulated servers per setting (default 100)")
    parser.add_argument("--run-sd", type=float, default=0.02, help="run-to-run sd of attainment (default 0.02)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    began = time.perf_counter()
    rng = np.random.default_rng(args.seed)

    print(f"{args.servers} servers a setting, run-to-run sd {args.run_sd}, target {TARGET}, start 1 req/s")
    print(f"{'setting':<15} {'capacity':>8} {'covers':>7} {'grid in':>7} {'runs':>6} {'grid runs':>9} {'ratio':>6}"
          f" {'width':>6} {'bound':>6}")
    answers = {}
    for name, (mid, binds) in SETTINGS.items():
        covers = inside = 0
        runs, grid_runs, widths, bounds = [], [], [], []
        for _ in range(args.servers):
            server = Server(mid, binds, args.run_sd, rng)
            answer = capacity(search(server))
            boundary, step, spent = grid(server)
            covers += answer.rate is not None and answer.rate <= server.capacity <= (answer.high or math.inf)
            inside += boundary is not None and answer.rate / (1 + step) <= boundary <= (answer.high or math.inf) * (1 + step)
            runs.append(answer.runs)
            grid_runs.append(spent)
            widths.append((answer.high or math.inf) / answer.rate - 1)
            bounds.append(answer.error_bound)
        answers[name] = answer
        print(f"{name:<15} {server.capacity:>8.2f} {covers / args.servers:>7.2f} {inside / args.servers:>7.2f}"
              f" {np.mean(runs):>6.1f} {np.mean(grid_runs):>9.1f} {np.mean(runs) / np.mean(grid_runs):>6.2f}"
              f" {np.median(widths):>6.1%} {np.mean(bounds):>6.2f}")
    print("covers: the interval holds the true capacity; grid in: the grid's boundary lies in it (one grid step"
          " allowed); width: median U/L - 1; bound: the stated Bonferroni bound on the interval's error")

    settings = Settings(start=1.0, target=TARGET)
    for n in (60, 600):
        for sd in (0.0, 0.02, 0.05):
            counts = {"holds": 0, "fails": 0}
            for _ in range(2000):
                runs: list[Run] = []
                while True:
                    p = min(1.0, max(0.0, TARGET + rng.normal(0, sd)))
                    runs.append(Run(rng.binomial(n, p) / n, n))
                    v = verdict(settings, Probe(1.0, tuple(runs)))
                    if v.state not in ("open",):
                        break
                counts[v.state] = counts.get(v.state, 0) + 1
            print(f"one rate at exactly the target, {n} requests a run, run sd {sd}: holds {counts['holds'] / 2000:.3f}"
                  f" (a wrong verdict: at most {1 - settings.confidence:.2f}), fails {counts['fails'] / 2000:.3f}")

    flagged = 0
    for _ in range(args.servers):
        server = Server(9.0, "tpot", args.run_sd, rng, dip=(3.5, 4.5))
        flagged += capacity(search(server)).cliff is not None
    print(f"a cliff planted (attainment 0.5 over 3.5-4.5 req/s, capacity 8.2 above it): flagged in "
          f"{flagged / args.servers:.2f} of searches")

    base = answers["no speculation"]
    print(headline({n: gain(a, base) for n, a in answers.items() if n != "no speculation"},
                   {n: a.binding for n, a in answers.items()}, "no speculation", "interactive"))
    for name, answer in answers.items():
        print("  " + describe(name, answer))
    last = to_json(search(Server(7.0, "tpot", args.run_sd, rng)))
    print(f"search.json of one search: {len(last['probes'])} probes; {last['next']['why']}")
    print(f"{time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
