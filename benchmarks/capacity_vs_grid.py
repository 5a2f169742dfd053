"""The request capacity search against a dense grid of request rates, on the same real servers (the
tiny pair, vLLM's CPU build).

First a server without a draft is measured at concurrency 1 (the SLO's reference, as in
runbooks/tiny_cpu_capacity.yaml: TTFT <= 5x its median TTFT, TPOT <= 2x its median TPOT). Then,
for each setting (no speculation, EAGLE k=3), one server start: the search (the capacity step's default,
``analysis.capacity_fit``: the crossing of a logistic fitted to every run, each next run placed at the
fitted crossing; ``--search bisect``: ``analysis.capacity_search``, a test per rate; the probes of the
capacity step: open loop, no client concurrency cap, ``--goodput``), then on the same
server a grid of request rates spaced by the search's precision (geometric, factor 1 + precision)
over [0.5, 2] x the search's capacity, 3 runs each; the grid's boundary is the highest rate whose
mean attainment is at least the target.

Printed per setting: the search's interval and runs, the grid's boundary and runs, whether the
search used at most a third of the grid's runs, and whether the grid's boundary lies in the search's
interval allowing one grid step ([L / (1 + precision), U x (1 + precision)]).

    .venv/bin/python benchmarks/capacity_vs_grid.py [--search fit|bisect] [--precision 0.1] [--max-runs 24]
        [--attainment 0.9] [--output-len 32] [--duration-s 15] [--start-rate 8]
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llama4spec.config.compose import compose_config
from llama4spec.engine.bench_flags import probe_flags, probe_prompts, resolve_thresholds
from llama4spec.serving.benchmark import BenchFiles, free_result, run_bench, run_probe
from llama4spec.serving.bench_runner import BenchRunner
from llama4spec.serving.process import is_healthy
from llama4spec.analysis import capacity_fit as cf
from llama4spec.analysis import capacity_search as cap

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
    """``llama4spec serve OVERRIDES`` on a free port until it answers; stopped (its group) at the end."""
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
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


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


def search(cfg, url, where, settings, duration, thresholds, runner) -> cap.Search:
    state, least = cap.begin(settings), cap.decidable_requests(settings)
    while (rate := cap.next_probe(state)) is not None:
        run = one_run(cfg, url, where / f"search-{rate:g}", rate, duration, thresholds, least, runner)
        state = cap.record_run(state, rate, run)
        print(f"    search: {rate:g} req/s attainment {run.attainment:.3f} ({cap.move(state).reason})", flush=True)
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


def bisected(cfg, url, where, settings, duration, thresholds, runner) -> Found:
    a = cap.capacity(search(cfg, url, where, settings, duration, thresholds, runner))
    return Found(a.rate, a.rate, a.high, a.runs, f"[{a.rate}, {a.high}]")


def fitted(cfg, url, where, settings: cf.Settings, duration, thresholds, runner, least: int) -> Found:
    """The fitted search (``capacity_fit.decide``): every run at the fitted crossing until the interval is
    within ``precision`` or the budget is spent."""
    runs: list[cf.Run] = []
    while (d := cf.decide(settings, runs)).rate is not None:
        run = one_run(cfg, url, where / f"search-{len(runs)}-{d.rate:g}", d.rate, duration, thresholds, least, runner)
        runs.append(cf.Run(d.rate, run.attainment * run.requests, run.requests, run.per_metric))
        print(f"    search: {d.rate:g} req/s attainment {runs[-1].attainment:.3f} ({d.reason})", flush=True)
    a = d.final
    print(f"    {cf.describe('fitted', a)} ({d.reason})", flush=True)
    return Found(a.estimate, a.low, a.high, a.runs, f"{a.estimate and round(a.estimate, 2)} [{a.low and round(a.low, 2)}, "
                 f"{a.high and round(a.high, 2)}]", a.isotonic)


def grid(cfg, url, where, settings, center: float, duration, thresholds, runner) -> tuple[list[float], dict]:
    step = 1 + settings.precision
    n = math.ceil(math.log(4) / math.log(step))
    rates = [round(0.5 * center * step ** i, 4) for i in range(n + 1)]
    means, least = {}, cap.decidable_requests(settings)
    for rate in rates:
        runs = [one_run(cfg, url, where / f"grid-{rate:g}", rate, duration, thresholds, least, runner).attainment
                for _ in range(3)]
        means[rate] = float(np.mean(runs))
        print(f"    grid: {rate:g} req/s mean attainment {means[rate]:.3f}", flush=True)
    return rates, means


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--search", choices=("fit", "bisect"), default="fit")
    ap.add_argument("--precision", type=float, default=0.1)
    ap.add_argument("--max-runs", type=int, default=24, help="the fitted search's probe budget")
    ap.add_argument("--attainment", type=float, default=0.9)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--duration-s", type=float, default=15.0)
    ap.add_argument("--start-rate", type=float, default=8.0)
    ap.add_argument("--engine-nice", type=int, default=19,
                    help="serve.engine_nice: the engines' nice value (with this script at nice -10, 0 keeps the same "
                         "order and puts other work at nice 19 below the engine)")
    ap.add_argument("--ttft", type=float, default=5.0, help="the SLO's TTFT: this many times the baseline's median")
    ap.add_argument("--tpot", type=float, default=2.0, help="the SLO's TPOT: this many times the baseline's median")
    args = ap.parse_args()
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
        for name, overrides in SETTINGS.items():
            cfg = compose_config([*common, *overrides]).cfg
            settings = cap.Settings(start=args.start_rate, target=args.attainment, precision=args.precision,
                                    confirm=None)
            print(f"{name}:", flush=True)
            with server([*serving, *overrides], work) as url:
                if args.search == "fit":
                    fit_settings = cf.Settings(start=args.start_rate, target=args.attainment, precision=args.precision,
                                               max_runs=args.max_runs)
                    found = fitted(cfg, url, work / name, fit_settings, args.duration_s, thresholds, runner,
                                   cap.decidable_requests(settings))
                else:
                    found = bisected(cfg, url, work / name, settings, args.duration_s, thresholds, runner)
                center = next((c for c in (found.estimate, found.isotonic) if c is not None),
                              (found.high or args.start_rate) / 2)  # the grid around the search's answer
                rates, means = grid(cfg, url, work / name, settings, center, args.duration_s, thresholds, runner)
            held = [r for r in rates if means[r] >= args.attainment]
            boundary = max(held) if held else None
            step = 1 + args.precision
            inside = (boundary is not None and found.low is not None and found.high is not None
                      and found.low / step <= boundary <= found.high * step)
            rows.append((name, found, boundary, 3 * len(rates), inside))
    print(f"\nsearch: {args.search}, precision {args.precision:g}, runs of {args.duration_s:g} s")
    print(f"{'setting':16} {'search: capacity [interval] (req/s)':36} {'search runs':>11} {'grid boundary':>13} "
          f"{'grid runs':>9} {'runs ratio':>10}  boundary in interval (one grid step)")
    for name, found, boundary, grid_runs, inside in rows:
        print(f"{name:16} {found.words:36} {found.runs:>11} {boundary if boundary is not None else '-':>13} "
              f"{grid_runs:>9} {found.runs / grid_runs:>10.2f}  {'yes' if inside else 'no'}")
    print(f"\n{(time.monotonic() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
