"""The request capacity search against a dense grid of request rates, on the same real servers (the
tiny pair, vLLM's CPU build), their runs interleaved.

First a server without a draft is measured at concurrency 1 (the SLO's reference, as in
runbooks/tiny_cpu_capacity.yaml: TTFT <= 5x its median TTFT, TPOT <= 2x its median TPOT). Then,
for each setting (no speculation, EAGLE k=3), one server start: the search (the capacity step's default,
``capacity.fit``: the crossing of a logistic fitted to every run, each next run placed where
it most narrows the crossing's interval, ``capacity.place``; ``--search bisect``:
``capacity.probing``, a test per rate; the probes of the capacity step: open loop, no client
concurrency cap, ``--goodput``) and, on the same server, a grid
of request rates spaced by the search's precision (geometric, factor 1 + precision, or
``--grid-rates`` of them) over [0.5, 2] x the geometric middle of the search's first bracket (its
closest holding rate below a failing one), 3 runs each; the grid's boundary is the highest rate whose mean attainment is at least the target.

The two are interleaved so that a server that drifts over its life (or meets bursts) hits both
alike: once the search has bracketed, each search run is followed by the next grid run, the grid's
runs in a seeded random order (a fresh order of the rates for each of the 3 runs a rate, so every
rate is measured early and late); when the search stops, the rest of the grid follows. (Where the
search never brackets, the grid is centred on its answer and runs after it.) A grid whose top rate
held on average (or whose lowest failed) does not show its boundary: it is then extended a rate at
a time, a grid step beyond that end, 3 runs each, until it does (``--grid-extend``, at most 6 rates).

Printed per setting: the search's interval and runs, the grid's boundary and runs, whether the
search used at most a third of the grid's runs, whether the grid's boundary lies in the search's
interval allowing one grid step ([L / step, U x step]), and a drift check: the grid's runs in the
first half of their time against those in the second, as the isotonic crossing of each half and the mean change in attainment (second half less first) over the rates both halves
measured where attainment is not pinned (pooled mean in [0.02, 0.98]), with its paired t interval
over those rates (95%).

    .venv/bin/python benchmarks/capacity_vs_grid.py [--search fit|bisect] [--precision 0.1] [--max-runs 24]
        [--attainment 0.9] [--output-len 32] [--duration-s 15] [--start-rate 8] [--grid-rates N] [--grid-runs 3]
        [--seed 0] [--grid-extend 6] [--setting 'no speculation'|'EAGLE k=3' ...]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from llama4spec.config.compose import compose_config
from llama4spec.engine.bench_flags import probe_flags, probe_prompts, resolve_thresholds
from llama4spec.serving.benchmark import BenchFiles, free_result, run_bench, run_probe
from llama4spec.serving.bench_runner import BenchRunner
from llama4spec.serving.process import is_healthy, stop_group
from llama4spec.capacity import fit as cf
from llama4spec.capacity import curve as curve
from llama4spec.capacity import fit_search as cfs
from llama4spec.capacity import probing as cap
from llama4spec.capacity.answer import capacity

# serve.engine_nice: on 2 cores the engine's polling processes otherwise starve the API server and
# the load generator into stalls of seconds that make a run's attainment a coin toss (docs/capacity.md).
COMMON = ["target=tiny", "memory=cpu", "bench=random_tiny", "bench.num_prompts=8"]
SETTINGS = {"no speculation": ["draft=none"], "EAGLE k=3": ["draft=tiny_eagle", "lookahead=3"]}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(overrides: list[str], where: Path):
    """``llama4spec serve OVERRIDES`` on a free port until it answers; its group stopped at the end (SIGTERM,
    then SIGKILL after 60 s)."""
    port = free_port()
    log = where / f"serve-{port}.out"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama4spec", "serve", *overrides, f"serve.port={port}"],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while not is_healthy(url, timeout_s=2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start; see {log}")
            time.sleep(2)
        yield url
    finally:  # SIGTERM, which the tool unwinds as it does Ctrl-C (a shell's background job ignores SIGINT)
        stop_group(proc, 60)


def one_run(cfg, url: str, where: Path, rate: float, duration: float, thresholds, least: int, runner) -> cap.Run:
    """One open-loop run at ``rate``, as the search step runs it."""
    files = BenchFiles(where / "run=0.json", where / "record.json", where / "bench.log")
    result = free_result(files, 0)
    flags = probe_flags(cfg, url, result.parent, result.name, "grid", rate, duration, thresholds, ["--ignore-eos"],
                        least)
    one, _ = run_probe(cfg, url, flags, files, None, 0, label="probe", prompts=probe_prompts(cfg, rate, duration, least),
                       runner=runner)
    if one.returncode != 0:
        raise SystemExit(f"a run at {rate:g} req/s failed; see {files.log}")
    return cap.run_of(one, thresholds, cfg.slo.attainment)


def search(cfg, url, where, settings, duration, thresholds, runner, after: Callable[[float, float], None]) -> cap.Search:
    state, least = cap.begin(settings), cap.decidable_requests(settings)
    while (rate := cap.next_probe(state)) is not None:
        run = one_run(cfg, url, where / f"search-{rate:g}", rate, duration, thresholds, least, runner)
        state = cap.record_run(state, rate, run)
        print(f"    search: {rate:g} req/s attainment {run.attainment:.3f} ({cap.move(state).reason})", flush=True)
        after(rate, run.attainment)
    return state


@dataclass(frozen=True)
class Found:
    """A search's answer as this benchmark compares it with the grid."""

    estimate: float | None
    low: float | None
    high: float | None
    runs: int
    words: str
    isotonic: float | None = None  # the isotonic curve's crossing (a fitted search's), where no fit crosses


def bisected(cfg, url, where, settings, duration, thresholds, runner, after) -> Found:
    a = capacity(search(cfg, url, where, settings, duration, thresholds, runner, after))
    return Found(a.rate, a.rate, a.high, a.runs, f"[{a.rate}, {a.high}]")


def fitted(cfg, url, where, settings: cf.Settings, duration, thresholds, runner, least: int, after) -> Found:
    """The fitted search (``capacity_fit.decide``): every run where it most narrows the crossing's
    interval until that interval is within ``precision`` or the budget is spent; ``after(rate,
    attainment)`` after each run."""
    runs: list[cf.Run] = []
    while (d := cfs.decide(settings, runs)).rate is not None:
        run = one_run(cfg, url, where / f"search-{len(runs)}-{d.rate:g}", d.rate, duration, thresholds, least, runner)
        runs.append(cf.Run(d.rate, run.attainment * run.requests, run.requests, run.per_metric))
        print(f"    search: {d.rate:g} req/s attainment {runs[-1].attainment:.3f} ({d.reason})", flush=True)
        after(d.rate, runs[-1].attainment)
    a = d.final
    print(f"    {cf.describe('fitted', a)} ({d.reason})", flush=True)
    return Found(a.estimate, a.low, a.high, a.runs, f"{a.estimate and round(a.estimate, 2)} [{a.low and round(a.low, 2)}, "
                 f"{a.high and round(a.high, 2)}]", a.isotonic)


def grid_size(precision: float) -> int:
    """The grid's rates by default: enough for a step of at most 1 + precision over a factor 4."""
    return math.ceil(math.log(4) / math.log(1 + precision)) + 1


def grid_rates(center: float, size: int) -> list[float]:
    """The grid: ``size`` rates, geometric, over [0.5, 2] x ``center``."""
    step = 4 ** (1 / (size - 1))
    return [round(0.5 * center * step ** i, 4) for i in range(size)]


def grid_order(rates: Sequence[float], replicates: int, seed: int) -> list[float]:
    """The grid's runs in time order: ``replicates`` passes over ``rates``, each in a fresh seeded random
    order, so every rate is measured early and late."""
    rng = np.random.default_rng(seed)
    return [float(rates[i]) for _ in range(replicates) for i in rng.permutation(len(rates))]


def first_bracket(seen: Sequence[tuple[float, float]], target: float) -> float | None:
    """The geometric middle of the closest holding rate below a failing one among the (rate, attainment)
    runs ``seen``; None until a rate that held lies below one that failed."""
    holds = [r for r, a in seen if a >= target]
    fails = [r for r, a in seen if a < target]
    above = [r for r in fails if holds and r > min(holds)]
    if not above:
        return None
    upper = min(above)
    lower = max(r for r in holds if r < upper)
    return math.sqrt(lower * upper)


@dataclass(frozen=True)
class Drift:
    """The grid's runs in the first half of their time against those in the second."""

    first: float | None  # each half's isotonic crossing (req/s; None: none among the rates measured)
    second: float | None
    where: tuple[str, str]  # each half's isotonic crossing in words (where it lies when there is none)
    rates: int  # rates both halves measured where attainment is not pinned
    change: float | None  # mean attainment change, second half less first, over those rates
    low: float | None  # its paired t interval over the rates
    high: float | None

    def words(self) -> str:
        text = f"first half: {self.where[0]}; second half: {self.where[1]}"
        if self.change is None:
            return text + (f"; {self.rates} rate{'' if self.rates == 1 else 's'} both halves measured off 0 and 1, "
                           "too few for a paired change")
        return (text + f"; mean attainment change {self.change:+.3f} [{self.low:+.3f}, {self.high:+.3f}] "
                f"(second less first, paired t 95% over {self.rates} rates)")


def drift(runs: Sequence[tuple[float, float]], target: float, confidence: float = 0.95) -> Drift:
    """The drift check of the grid's ``runs``, (rate, attainment) in time order: the first half (the
    first ceil(n / 2) runs) against the rest."""
    from scipy import stats

    half = math.ceil(len(runs) / 2)
    parts = [runs[:half], runs[half:]]
    found = [curve.isotonic([cf.Run(r, a * 1000, 1000) for r, a in part], target) for part in parts]  # runs alike
    crossings = [c for c, _ in found]
    where = (found[0][1], found[1][1])
    means = [{} for _ in parts]
    for m, part in zip(means, parts):
        for r, a in part:
            m.setdefault(r, []).append(a)
    both = sorted(set(means[0]) & set(means[1]))
    pooled = {r: float(np.mean(means[0][r] + means[1][r])) for r in both}
    changes = [float(np.mean(means[1][r]) - np.mean(means[0][r])) for r in both if 0.02 <= pooled[r] <= 0.98]
    if len(changes) < 2:
        return Drift(*crossings, where, len(changes), None, None, None)
    mean, se = float(np.mean(changes)), float(np.std(changes, ddof=1) / math.sqrt(len(changes)))
    t = float(stats.t.ppf(0.5 + confidence / 2, len(changes) - 1))
    return Drift(*crossings, where, len(changes), mean, mean - t * se, mean + t * se)


@dataclass
class Grid:
    """The grid's runs on one server, interleaved with the search's (``after_search_run``) and finished
    after it (``finish``)."""

    run: Callable[[float, int], float]  # (rate, index) -> the attainment of one grid run
    settings: cap.Settings
    size: int  # rates
    replicates: int
    seed: int
    seen: list[tuple[float, float]] = field(default_factory=list)  # the search's runs
    queue: list[float] | None = None  # the grid's runs still to make, in order
    rates: list[float] = field(default_factory=list)
    done: list[tuple[float, float]] = field(default_factory=list)  # (rate, attainment), in time order
    extensions: int = 0  # rates the grid may add beyond an end that does not show the boundary

    def _plan(self, center: float) -> None:
        self.rates = grid_rates(center, self.size)
        self.queue = grid_order(self.rates, self.replicates, self.seed)
        print(f"    grid: {len(self.queue)} runs at {len(self.rates)} rates from {self.rates[0]:g} to "
              f"{self.rates[-1]:g} req/s (centred on {center:.4g})", flush=True)

    def _one(self) -> None:
        rate = self.queue.pop(0)
        attainment = self.run(rate, len(self.done))
        self.done.append((rate, attainment))
        print(f"    grid: {rate:g} req/s attainment {attainment:.3f} (grid run {len(self.done)})", flush=True)

    def after_search_run(self, rate: float, attainment: float) -> None:
        self.seen.append((rate, attainment))
        if self.queue is None and (center := first_bracket(self.seen, self.settings.target)) is not None:
            self._plan(center)
        elif self.queue:
            self._one()

    def finish(self, center: float) -> dict[float, float]:
        """The rest of the grid (all of it, centred on ``center``, where the search never bracketed); each
        rate's mean attainment."""
        if self.queue is None:
            self._plan(center)
        while self.queue:
            self._one()
        means = self.means()
        while self.extensions > 0 and (means[max(self.rates)] >= self.settings.target
                                       or means[min(self.rates)] < self.settings.target):
            # a grid that held at its top rate (or failed at its lowest) does not show the boundary: one
            # more rate a step beyond that end, grid_runs runs of it
            up = means[max(self.rates)] >= self.settings.target
            step = self.rates[1] / self.rates[0]
            rate = round(max(self.rates) * step if up else min(self.rates) / step, 4)
            print(f"    grid: extended {'up' if up else 'down'} to {rate:g} req/s (its "
                  f"{'top rate held' if up else 'lowest rate failed'})", flush=True)
            self.rates = sorted([*self.rates, rate])
            self.queue = [rate] * self.replicates
            self.extensions -= 1
            while self.queue:
                self._one()
            means = self.means()
        for r in self.rates:
            print(f"    grid: {r:g} req/s mean attainment {means[r]:.3f}", flush=True)
        return means

    def means(self) -> dict[float, float]:
        return {r: float(np.mean([a for x, a in self.done if x == r])) for r in self.rates}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--search", choices=("fit", "bisect"), default="fit")
    ap.add_argument("--precision", type=float, default=0.1)
    ap.add_argument("--max-runs", type=int, default=24, help="the fitted search's probe budget")
    ap.add_argument("--attainment", type=float, default=0.9)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--duration-s", type=float, default=15.0)
    ap.add_argument("--start-rate", type=float, default=8.0)
    ap.add_argument("--grid-rates", type=int, help="the grid's rates over [0.5, 2] x its centre (default: a step of "
                    "1 + precision, 16 at 0.1)")
    ap.add_argument("--grid-runs", type=int, default=3, help="the grid's runs at each rate")
    ap.add_argument("--seed", type=int, default=0, help="the seed of the grid's run order")
    ap.add_argument("--grid-extend", type=int, default=6, help="at most this many rates added a step beyond the "
                    "grid's top while its top rate held (below its lowest while that failed)")
    ap.add_argument("--engine-nice", type=int, default=19,
                    help="serve.engine_nice: the engines' nice value (with this script at nice -10, 0 keeps the same "
                         "order and puts other work at nice 19 below the engine)")
    ap.add_argument("--ttft", type=float, default=5.0, help="the SLO's TTFT: this many times the baseline's median")
    ap.add_argument("--tpot", type=float, default=2.0, help="the SLO's TPOT: this many times the baseline's median")
    ap.add_argument("--setting", action="append", choices=list(SETTINGS),
                    help="measure only this setting (repeat for several; default: every one), e.g. a half of the "
                         "benchmark a session")
    args = ap.parse_args()
    size = args.grid_rates or grid_size(args.precision)
    if size < 2 or args.grid_runs < 1:
        ap.error("the grid needs at least 2 rates and 1 run a rate")
    serving = [*COMMON, f"serve.engine_nice={args.engine_nice}"]
    common = [*serving, f"bench.output_len={args.output_len}", f"slo.attainment={args.attainment}",
              "slo.relative_to=baseline", f"slo.ttft={args.ttft}", f"slo.tpot={args.tpot}"]
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, BenchRunner() as runner:
        work = Path(tmp)
        base_cfg = compose_config([*common, "draft=none", "bench.max_concurrency=1"]).cfg
        with server([*serving, "draft=none"], work) as url:
            files = BenchFiles(work / "base" / "run=0.json", work / "base" / "record.json", work / "base" / "bench.log")
            record = run_bench(base_cfg, url, files, label="baseline", extra_args=["--ignore-eos"], warmup=2,
                               runner=runner)
        medians = {m: record.figure(f"median_{m}_ms") for m in ("ttft", "tpot")}
        thresholds = resolve_thresholds(base_cfg, medians)
        print(f"SLO: {', '.join(f'{m.upper()} <= {v:.1f} ms' for m, v in thresholds.items())} for "
              f"{args.attainment:.0%} of requests ({args.ttft:g}x and {args.tpot:g}x the baseline's medians)", flush=True)
        rows = []
        for name, overrides in {n: SETTINGS[n] for n in args.setting or SETTINGS}.items():
            cfg = compose_config([*common, *overrides]).cfg
            settings = cap.Settings(start=args.start_rate, target=args.attainment, precision=args.precision,
                                    confirm=None)
            print(f"{name}:", flush=True)
            with server([*serving, *overrides], work) as url:
                least = cap.decidable_requests(settings)

                def grid_run(rate: float, i: int, cfg=cfg, url=url, name=name, least=least) -> float:
                    return one_run(cfg, url, work / name / f"grid-{i}-{rate:g}", rate, args.duration_s, thresholds,
                                   least, runner).attainment

                grid = Grid(grid_run, settings, size, args.grid_runs, args.seed, extensions=args.grid_extend)
                if args.search == "fit":
                    fit_settings = cf.Settings(start=args.start_rate, target=args.attainment, precision=args.precision,
                                               max_runs=args.max_runs)
                    found = fitted(cfg, url, work / name, fit_settings, args.duration_s, thresholds, runner, least,
                                   grid.after_search_run)
                else:
                    found = bisected(cfg, url, work / name, settings, args.duration_s, thresholds, runner,
                                     grid.after_search_run)
                center = next((c for c in (found.estimate, found.isotonic) if c is not None),
                              (found.high or args.start_rate) / 2)  # where the search never bracketed
                means = grid.finish(center)
            rates = grid.rates
            held = [r for r in rates if means[r] >= args.attainment]
            boundary = max(held) if held else None
            step = rates[1] / rates[0]  # one grid step
            inside = (boundary is not None and found.low is not None and found.high is not None
                      and found.low / step <= boundary <= found.high * step)
            check = drift(grid.done, args.attainment)
            print(f"    drift check: {check.words()}", flush=True)
            rows.append((name, found, boundary, len(grid.done), inside, check))
    print(f"\nsearch: {args.search}, precision {args.precision:g}, runs of {args.duration_s:g} s")
    print(f"{'setting':16} {'search: capacity [interval] (req/s)':36} {'search runs':>11} {'grid boundary':>13} "
          f"{'grid runs':>9} {'runs ratio':>10}  boundary in interval (one grid step)")
    for name, found, boundary, grid_runs, inside, _ in rows:
        print(f"{name:16} {found.words:36} {found.runs:>11} {boundary if boundary is not None else '-':>13} "
              f"{grid_runs:>9} {found.runs / grid_runs:>10.2f}  {'yes' if inside else 'no'}")
    print("\ndrift check: the grid's runs in the first half of their time against the second")
    for name, *_, check in rows:
        print(f"{name:16} {check.words()}")
    print(f"\n{(time.monotonic() - started) / 60:.1f} min")


if __name__ == "__main__":
    # SIGTERM (a batch system, kill) unwinds like Ctrl-C: the servers it started are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
