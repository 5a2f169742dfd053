"""Interleaved against sequential: the width of the speedup interval at the same number of runs.

The shipped runbooks/tiny_cpu_interleaved.yaml (the imperfect pair's k=2 against no speculation at
concurrency 1 and 4, N pairs a concurrency) run six times, the designs alternated so that load
drifting over time falls on both: interleaved, sequential, interleaved, ... Each run is `llama4spec
run runbooks/tiny_cpu_interleaved.yaml serve.port=P --runs-dir DIR --repeats N`, the sequential
ones with the sweep step's `design: sequential` (a generated copy of the runbook): the same
servers, points, warm-ups and runs a point; in the sequential design each server runs alone on
every core, one after the other.

Per run and concurrency, from its records: the speedup the report gives (its interval: the paired t
for interleaved, Welch's for sequential, both with the between-start term, at Holm's level), and
the 95% interval of the same runs without the between-start term (within-start part alone:
`decide.paired_ratio` against `decide.welch_ratio`), whose width is what interleaving changes.
Then per design: the mean log width of both, and the spread (sd of the log speedup) over its three
runs, which measures what each design leaves between runs (drift and start-to-start offsets alike).

`--swap`: the device as a factor. The same runbook with the perfect pair (tiny_eagle, k=2), whose
speedup is large enough to be decided, run with `swap_devices: false` and `true` alternated
(`--swap-runs` times each): no speculation on core 0 and k=2 on core 1, then the other way round;
it prints each run's verdict against no speculation, which must not change with the swap.

Time: about 5 minutes a run on this machine's 2 cores (2 server starts, 2 x 2 x N runs), half an
hour for the six; do not run it beside other timed work. `--from` only reads run directories.

    .venv/bin/python benchmarks/interleaved.py [--repeats 5] [--port 8771] [--runs-dir runs]
    .venv/bin/python benchmarks/interleaved.py --swap [--swap-runs 1]
    .venv/bin/python benchmarks/interleaved.py --from RUN_DIR ...
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "runbooks" / "tiny_cpu_interleaved.yaml"
DESIGNS = ["interleaved", "sequential"] * 3  # alternated: drifting load lands on both
BASE = "sweep-none-k2"
CAND = "sweep-tiny_eagle_imperfect-k2"
PERFECT = "sweep-tiny_eagle-k2"


def runbook(design: str, swap: bool = False, perfect: bool = False) -> Path:
    """The shipped runbook, its sweep step's design set (a copy in a temporary directory); with
    ``perfect`` the perfect draft in place of the imperfect one (its compare step then left out)."""
    data = yaml.safe_load(SHIPPED.read_text())
    data["steps"][0].update(design=design, swap_devices=swap)
    if perfect:
        data["steps"][0]["matrix"]["draft"] = ["none", "tiny_eagle"]
        data["steps"] = data["steps"][:1]
    path = Path(tempfile.mkdtemp(prefix="interleaved-")) / "tiny_cpu_interleaved.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _runs(record: dict) -> list[dict]:
    return record.get("runs") or [record]


def verdicts(run_dir: Path) -> dict[int, str]:
    """Per concurrency, the perfect pair's verdict against no speculation with its interval."""
    sweep = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    out = {}
    for at in sweep["concurrency"]:
        c = at["concurrency"]
        (x,) = [x for x in at["comparisons"] if {x["first"], x["second"]} == {f"{BASE}-c{c}", f"{PERFECT}-c{c}"}]
        flip = x["first"] != f"{PERFECT}-c{c}"
        iv = x["interval"]
        ratio, low, high = (1 / iv["ratio"], 1 / iv["high"], 1 / iv["low"]) if flip else (iv["ratio"], iv["low"], iv["high"])
        verdict = {"faster": "slower", "slower": "faster"}.get(x["verdict"], x["verdict"]) if flip else x["verdict"]
        out[c] = f"{verdict} {ratio:.2f}x [{low:.2f}, {high:.2f}] ({x['method']})"
    return out


def swap_main(args) -> int:
    lines = []
    for n, swap in enumerate([False, True] * args.swap_runs, 1):
        runs_dir = args.runs_dir / "benchmark-interleaved-swap" / f"{n}-swap-{str(swap).lower()}"
        argv = [sys.executable, "-m", "llama4spec", "run", str(runbook("interleaved", swap, perfect=True)),
                f"serve.port={args.port}", "--runs-dir", str(runs_dir), "--repeats", str(args.repeats), "-q"]
        print(f"[{n}/{2 * args.swap_runs}] swap_devices: {str(swap).lower()}: {' '.join(argv)}", flush=True)
        if subprocess.run(argv, cwd=REPO).returncode != 0:
            print("  run failed; left out", flush=True)
            continue
        (run_dir,) = (runs_dir / "tiny_cpu_interleaved").iterdir()
        where = "k=2 on core 0, no speculation on core 1" if swap else "no speculation on core 0, k=2 on core 1"
        lines += [f"swap_devices: {str(swap).lower():<5} ({where}), c={c}: {v}" for c, v in verdicts(run_dir).items()]
    print("\n".join(lines))
    return 0


def measure(run_dir: Path) -> dict:
    """One run's design and, per concurrency, the report's speedup interval and the within-start
    interval of the same runs."""
    from llama4spec.stats.ratio import paired_ratio, welch_ratio

    sweep = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    design = (sweep.get("design") or {}).get("design", "sequential")
    out = {"dir": str(run_dir), "design": design, "at": {}}
    for at in sweep["concurrency"]:
        c = at["concurrency"]
        base = json.loads((run_dir / f"{BASE}-c{c}" / "record.json").read_text())
        cand = json.loads((run_dir / f"{CAND}-c{c}" / "record.json").read_text())
        xs = [r["result"]["output_throughput"] for r in _runs(cand)]
        ys = [r["result"]["output_throughput"] for r in _runs(base) if design == "sequential"
              or r.get("pair") == f"{CAND}-c{c}"]
        within = (paired_ratio if design == "interleaved" else welch_ratio)(xs, ys)
        (comparison,) = [x for x in at["comparisons"] if {x["first"], x["second"]} == {f"{BASE}-c{c}", f"{CAND}-c{c}"}]
        iv = comparison["interval"]
        if comparison["first"] != f"{CAND}-c{c}":
            iv = {"ratio": 1 / iv["ratio"], "low": 1 / iv["high"], "high": 1 / iv["low"]}
        out["at"][c] = {"speedup": iv["ratio"], "low": iv["low"], "high": iv["high"],
                        "width": math.log(iv["high"] / iv["low"]), "method": comparison["method"],
                        "within_low": within.low, "within_high": within.high,
                        "within_width": math.log(within.high / within.low), "runs": len(xs)}
    return out


def report(results: list[dict]) -> str:
    lines = ["design       conc  runs  speedup [reported 95% interval]  log width  within-start log width"]
    for r in results:
        for c, m in sorted(r["at"].items()):
            lines.append(f"{r['design']:<12} {c:>4}  {m['runs']:>4}  {m['speedup']:.3f}x [{m['low']:.3f}, "
                         f"{m['high']:.3f}] ({m['method']})  {m['width']:.3f}     {m['within_width']:.3f}")
    lines.append("")
    lines.append("per design and concurrency: mean log width (reported, within-start), sd of the log speedup "
                 "over its runs")
    concurrencies = sorted({c for r in results for c in r["at"]})
    summary = {}
    for design in ("interleaved", "sequential"):
        for c in concurrencies:
            ms = [r["at"][c] for r in results if r["design"] == design and c in r["at"]]
            if not ms:
                continue
            spread = statistics.stdev(math.log(m["speedup"]) for m in ms) if len(ms) > 1 else float("nan")
            summary[(design, c)] = (statistics.mean(m["width"] for m in ms),
                                    statistics.mean(m["within_width"] for m in ms), spread)
            w, ww, sd = summary[(design, c)]
            lines.append(f"  {design:<12} c={c}: {len(ms)} runs, reported {w:.3f}, within-start {ww:.3f}, "
                         f"sd of log speedup {sd:.3f}")
    for c in concurrencies:
        if ("interleaved", c) in summary and ("sequential", c) in summary:
            i, s = summary[("interleaved", c)], summary[("sequential", c)]
            lines.append(f"  c={c}: interleaved / sequential: reported width {i[0] / s[0]:.2f}, within-start "
                         f"width {i[1] / s[1]:.2f}, spread over runs {i[2] / s[2]:.2f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="pairs (runs a point) per concurrency")
    parser.add_argument("--port", type=int, default=8771)
    parser.add_argument("--runs-dir", type=Path, default=REPO / "runs")
    parser.add_argument("--from", dest="dirs", nargs="+", type=Path, help="read these run directories only")
    parser.add_argument("--swap", action="store_true", help="the perfect pair with the devices swapped and not")
    parser.add_argument("--swap-runs", type=int, default=1, help="--swap: runs of each device assignment")
    args = parser.parse_args()
    if args.swap:
        return swap_main(args)
    if args.dirs:
        print(report([measure(d) for d in args.dirs]))
        return 0
    results = []
    for n, design in enumerate(DESIGNS, 1):
        path = runbook(design)
        runs_dir = args.runs_dir / "benchmark-interleaved" / f"{n}-{design}"
        argv = [sys.executable, "-m", "llama4spec", "run", str(path), f"serve.port={args.port}",
                "--runs-dir", str(runs_dir), "--repeats", str(args.repeats), "-q"]
        print(f"[{n}/{len(DESIGNS)}] {design}: {' '.join(argv)}", flush=True)
        done = subprocess.run(argv, cwd=REPO)
        if done.returncode != 0:
            print(f"  run failed (exit {done.returncode}); left out", flush=True)
            continue
        (run_dir,) = (runs_dir / "tiny_cpu_interleaved").iterdir()
        results.append(measure(run_dir))
        print(f"  {run_dir}", flush=True)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
