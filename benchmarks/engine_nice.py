"""Stalls of the HTTP front end on a machine with few cores, with and without ``serve.engine_nice``
(the tiny pair without a draft, vLLM's CPU build).

On 2 cores the CPU build's engine core and its worker poll their queues without sleeping and take
both cores whenever a request is running; the API server and the load generator then get too little
CPU, and a run stalls for seconds (requests bunch up, TTFT reaches seconds, some connections drop)
at rates the engine itself carries easily. ``serve.engine_nice`` runs the engine's processes at a
lower priority once the server answers. For each setting one server start, then ``--runs`` open-loop
runs at ``--rate`` req/s (Poisson, 32-token outputs, ``--duration-s`` each).

Printed per setting: each run's median, P90 and worst TTFT and failed requests, and how many runs
stalled (worst TTFT above ``--stall-ms``).

    .venv/bin/python benchmarks/engine_nice.py [--rate 24] [--runs 6] [--nice 19]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capacity_vs_grid import server  # noqa: E402  (the same server start as the capacity benchmark)

from llama4spec.config.compose import compose_config  # noqa: E402
from llama4spec.engine.bench_flags import probe_flags, probe_prompts  # noqa: E402
from llama4spec.serving.benchmark import BenchFiles, free_result, run_probe  # noqa: E402
from llama4spec.serving.bench_runner import BenchRunner  # noqa: E402

COMMON = ["target=tiny", "memory=cpu", "bench=random_tiny", "bench.num_prompts=8", "draft=none"]
LOOSE = ["slo.ttft_ms=100000", "slo.tpot_ms=100000"]  # a probe needs an SLO; this one never binds


def runs(overrides: list[str], args, where: Path, runner) -> list[dict]:
    cfg = compose_config([*COMMON, *overrides, *LOOSE]).cfg
    out = []
    where.mkdir(parents=True, exist_ok=True)
    with server([*COMMON, *overrides], where) as url:
        for i in range(args.runs):
            files = BenchFiles(where / f"run{i}" / "run=0.json", where / f"run{i}" / "record.json",
                               where / f"run{i}" / "bench.log")
            result = free_result(files, 0)
            flags = probe_flags(cfg, url, result.parent, result.name, "stall", args.rate, args.duration_s, None,
                                ["--ignore-eos"])
            run_probe(cfg, url, flags, files, None, 0, label="probe",
                      prompts=probe_prompts(cfg, args.rate, args.duration_s), runner=runner)
            raw = json.loads(result.read_text())
            ttft = sorted(1000 * t for t in raw["ttfts"])
            out.append({"median": statistics.median(ttft), "p90": ttft[int(0.9 * (len(ttft) - 1))],
                        "worst": ttft[-1], "failed": raw["failed"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=24.0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--duration-s", type=float, default=8.0)
    ap.add_argument("--nice", type=int, default=19)
    ap.add_argument("--stall-ms", type=float, default=500.0)
    args = ap.parse_args()
    started = time.monotonic()
    settings = {"engine at the default priority": [], f"serve.engine_nice={args.nice}": [f"serve.engine_nice={args.nice}"]}
    with tempfile.TemporaryDirectory() as tmp, BenchRunner() as runner:
        for i, (name, overrides) in enumerate(settings.items()):
            measured = runs(overrides, args, Path(tmp) / str(i), runner)
            stalled = sum(r["worst"] > args.stall_ms for r in measured)
            print(f"{name}: {stalled} of {len(measured)} runs stalled (worst TTFT > {args.stall_ms:g} ms) at "
                  f"{args.rate:g} req/s", flush=True)
            for r in measured:
                print(f"  TTFT median {r['median']:7.1f} ms  P90 {r['p90']:7.1f} ms  worst {r['worst']:7.1f} ms  "
                      f"failed {r['failed']}", flush=True)
    print(f"\n{(time.monotonic() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
