"""Within-start and between-start spread of output throughput on this machine.

Runs against one server start are not independent replicates of a setting: every run shares the
start's effect (where the engine landed, the load on the machine while it was up). This starts each
setting several times and measures each start at every client concurrency with the tool itself: a
generated runbook (serve / bench with repeats and a warm-up / stop per start, the settings
interleaved so that load drifting over time lands between starts, as it does between the starts of
a sweep), run by `llama4spec run`. From each bench step's record.json (each counted run's
`output_throughput`), per setting x concurrency, on log throughput:

- within-start sd: pooled sd of the runs around their start's mean (df = sum of runs - 1);
- raw sd of the start means;
- between-start sd: sqrt(raw variance of start means - within variance x mean(1/runs)), floored at 0;
- 1st run: mean log difference of a start's first counted run from its other runs (warm-up left over);

then the same pooled over concurrencies, over settings and over everything (variances weighted by
their degrees of freedom, floored after pooling), with approximate 95% chi-square intervals.

Workload: the sweeps' (tiny pair, 16 random prompts x 128 output tokens, --ignore-eos, a warm-up of
2 requests before each bench step's counted runs). Settings: none (no speculation), eagle (perfect
draft, k=3), imperfect (imperfect draft, k=2).

Time, measured on 2 shared cores under other work (load average 3-9): a server start 25-55 s; a
bench step (warm-up + 5 runs) 70-95 s for none at c=1, 30-60 s for eagle and imperfect at c=1,
11-28 s at c=4. The default (none and eagle, 3 starts, c=1 and 4, 5 runs: 6 starts, 60 counted runs)
took 12.0 min; `--settings imperfect` alone 6.5 min. `--from` only reads records (about 2 s).

    .venv/bin/python benchmarks/spreads.py [--starts 3] [--repeats 5] [--settings none,eagle] [--dry-run]
    .venv/bin/python benchmarks/spreads.py --from runs/spreads/<timestamp> [more run dirs]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NAME = "spreads"
SETTINGS = {  # name -> (what it is, the serve step's overrides)
    "none": ("no speculation", ["draft=none"]),
    "eagle": ("EAGLE k=3, perfect draft (tiny_eagle)", ["draft=tiny_eagle", "lookahead=3"]),
    "imperfect": ("EAGLE k=2, imperfect draft (tiny_eagle_imperfect)", ["draft=tiny_eagle_imperfect", "lookahead=2"]),
}
# The shipped tiny sweeps' workload (runbooks/tiny_cpu_sweep.yaml, tiny_cpu_imperfect_sweep.yaml).
OVERRIDES = ["target=tiny", "memory=cpu", "bench=random_tiny", "bench.num_prompts=16", "bench.output_len=128"]
BENCH_ID = re.compile(r"^(?P<setting>[a-z_]+)-s(?P<start>\d+)-c(?P<conc>\d+)$")


def bench_id(setting: str, start: int, concurrency: int) -> str:
    return f"{setting}-s{start}-c{concurrency}"


def runbook(settings: list[str], starts: int, repeats: int, warmup: int, concurrencies: list[int],
            port: int) -> dict:
    """The runbook: for each start, for each setting, serve / one bench per concurrency / stop."""
    steps: list[dict] = []
    for start in range(1, starts + 1):
        for setting in settings:
            server = f"{setting}-s{start}"
            steps.append({"id": server, "kind": "serve", "overrides": list(SETTINGS[setting][1])})
            for c in concurrencies:
                steps.append({"id": bench_id(setting, start, c), "kind": "bench", "server": server,
                              "overrides": [f"bench.max_concurrency={c}"], "repeats": repeats,
                              "warmup": warmup, "extra_args": ["--ignore-eos"]})
            steps.append({"id": f"{server}-stop", "kind": "stop", "server": server})
    return {"name": NAME,
            "description": (f"Within- and between-start spread: {', '.join(settings)} x {starts} starts x "
                            f"concurrency {concurrencies} x {repeats} runs (benchmarks/spreads.py)."),
            "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
            "overrides": [*OVERRIDES, f"serve.port={port}"],
            "steps": steps}


def read_runs(run_dirs: list[Path]) -> dict[tuple[str, int], list[list[float]]]:
    """(setting, concurrency) -> the counted runs' output throughputs of each start, from the bench
    records of one or more run directories (a start of each directory is a start of its own)."""
    from llama4spec.results.bench import BenchRecord

    found: dict[tuple[str, int], dict[tuple[int, int], list[float]]] = {}
    for d, run_dir in enumerate(run_dirs):
        for path in sorted(Path(run_dir).glob("*/record.json")):
            m = BENCH_ID.match(path.parent.name)
            if not m:
                continue
            record = BenchRecord.from_dict(json.loads(path.read_text()), path.parent.name)
            runs = record.samples("output_throughput") if record.counted or record.runs else []
            runs = [r for r in runs if r > 0]
            if runs:
                cell = found.setdefault((m["setting"], int(m["conc"])), {})
                cell[(d, int(m["start"]))] = runs
    return {key: [starts[s] for s in sorted(starts)] for key, starts in sorted(found.items())}


@dataclass
class Spread:
    """The two components of log-throughput noise for one cell (or several pooled)."""

    starts: int
    runs: list[int]  # counted runs of each start
    within_ss: float  # sum of squared log deviations from each start's mean
    within_df: int
    means_ss: float  # sum over cells of (starts - 1) x variance of the start means
    means_df: int
    between_ss: float  # the same, less each cell's within variance x mean(1/runs)
    first_offsets: list[float]  # each start's first run minus the mean of its others (log)
    median: float  # median throughput of every run (nan when pooled over cells)

    @property
    def within_sd(self) -> float:
        return math.sqrt(self.within_ss / self.within_df) if self.within_df else math.nan

    @property
    def raw_sd(self) -> float:
        return math.sqrt(self.means_ss / self.means_df) if self.means_df else math.nan

    @property
    def between_sd(self) -> float:
        return math.sqrt(max(self.between_ss / self.means_df, 0.0)) if self.means_df else math.nan

    @property
    def first_offset(self) -> float:
        return float(np.mean(self.first_offsets)) if self.first_offsets else math.nan

    def intervals(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """Approximate 95% intervals of the within and between sd (chi-square on each sum of
        squares; the between one treats the within part subtracted as known)."""
        from scipy.stats import chi2

        def sd_interval(ss: float, df: int, less: float = 0.0) -> tuple[float, float]:
            if not df:
                return math.nan, math.nan
            lo, hi = ss / chi2.ppf(0.975, df) - less, ss / chi2.ppf(0.025, df) - less
            return math.sqrt(max(lo, 0.0)), math.sqrt(max(hi, 0.0))

        less = (self.means_ss - self.between_ss) / self.means_df if self.means_df else 0.0
        return sd_interval(self.within_ss, self.within_df), sd_interval(self.means_ss, self.means_df, less)


def spread(starts: list[list[float]]) -> Spread:
    """The spread of one setting at one concurrency from each start's run throughputs."""
    logs = [np.log(np.asarray(s, dtype=float)) for s in starts if len(s)]
    within_ss = float(sum(((y - y.mean()) ** 2).sum() for y in logs))
    within_df = sum(len(y) - 1 for y in logs)
    means = np.array([y.mean() for y in logs])
    means_df = max(len(logs) - 1, 0)
    means_ss = float(((means - means.mean()) ** 2).sum()) if means_df else 0.0
    within_var = within_ss / within_df if within_df else 0.0
    between_ss = means_ss - means_df * within_var * float(np.mean([1.0 / len(y) for y in logs]))
    firsts = [float(y[0] - y[1:].mean()) for y in logs if len(y) > 1]
    everything = np.concatenate([np.asarray(s, dtype=float) for s in starts if len(s)])
    return Spread(len(logs), [len(y) for y in logs], within_ss, within_df, means_ss, means_df, between_ss,
                  firsts, float(np.median(everything)))


def pooled(cells: list[Spread]) -> Spread:
    """Several cells' spreads pooled: sums of squares and degrees of freedom added (so each
    variance is weighted by its df), the between part floored only after pooling."""
    return Spread(sum(c.starts for c in cells), [n for c in cells for n in c.runs],
                  sum(c.within_ss for c in cells), sum(c.within_df for c in cells),
                  sum(c.means_ss for c in cells), sum(c.means_df for c in cells),
                  sum(c.between_ss for c in cells), [f for c in cells for f in c.first_offsets], math.nan)


def _runs_text(runs: list[int]) -> str:
    return str(runs[0]) if len(set(runs)) == 1 else f"{min(runs)}-{max(runs)}"


def table(data: dict[tuple[str, int], list[list[float]]]) -> str:
    """The printed table: one row per setting x concurrency, then the pooled rows."""
    cells = {key: spread(starts) for key, starts in data.items()}
    head = (f"{'setting':<10} {'conc':>4} {'starts':>6} {'runs/start':>10} {'within':>7} {'between':>7} "
            f"{'raw sd':>7} {'1st run':>8} {'median tok/s':>12}")
    legend = "; ".join(f"{k} = {SETTINGS[k][0]}" for k in dict.fromkeys(k[0] for k in cells) if k in SETTINGS)
    lines = [legend, "log-sd of output throughput (natural log; 0.10 is about 10%)", head, "-" * len(head)]
    for (setting, c), s in cells.items():
        lines.append(f"{setting:<10} {c:>4} {s.starts:>6} {_runs_text(s.runs):>10} {s.within_sd:>7.3f} "
                     f"{s.between_sd:>7.3f} {s.raw_sd:>7.3f} {s.first_offset:>+8.3f} {s.median:>12.1f}")
    groups: list[tuple[str, list[Spread]]] = []
    settings = list(dict.fromkeys(k[0] for k in cells))
    concurrencies = sorted({k[1] for k in cells})
    if len(concurrencies) > 1:
        groups += [(f"{s}, all c", [v for k, v in cells.items() if k[0] == s]) for s in settings]
    if len(settings) > 1:
        groups += [(f"c={c}, all settings", [v for k, v in cells.items() if k[1] == c]) for c in concurrencies]
    groups.append(("all", list(cells.values())))
    lines += ["", f"{'pooled':<22} {'df w/b':>6} {'within [95%]':>22} {'between [95%, approx]':>22} "
                  f"{'raw sd':>7} {'1st run':>8}"]
    for name, members in groups:
        p = pooled(members)
        (wlo, whi), (blo, bhi) = p.intervals()
        lines.append(f"{name:<22} {f'{p.within_df}/{p.means_df}':>6} {p.within_sd:>7.3f} [{wlo:.3f}, {whi:.3f}] "
                     f"{p.between_sd:>7.3f} [{blo:.3f}, {bhi:.3f}] {p.raw_sd:>7.3f} {p.first_offset:>+8.3f}")
    lines += ["", "df w/b: degrees of freedom of the within and between parts (a start's c=1 and c=4 cells",
              "share its server, so pooled over concurrencies they are not independent)."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=3, help="server starts per setting (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="counted runs per start and concurrency (default 5)")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up requests before each bench step (default 2)")
    parser.add_argument("--settings", default="none,eagle", help=f"comma-separated, of {', '.join(SETTINGS)} "
                                                                 "(default none,eagle)")
    parser.add_argument("--concurrency", default="1,4", help="client concurrencies, comma-separated (default 1,4)")
    parser.add_argument("--port", type=int, default=8767, help="the servers' port (default 8767)")
    parser.add_argument("--runs-dir", default="runs", help="where the run record goes (default runs/)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan of the generated runbook only")
    parser.add_argument("--from", dest="from_dirs", nargs="+", metavar="RUN_DIR",
                        help="only recompute the table from existing run directories")
    args = parser.parse_args()

    if args.from_dirs:
        data = read_runs([Path(d) for d in args.from_dirs])
        if not data:
            print(f"no bench record named <setting>-s<start>-c<concurrency> in {', '.join(args.from_dirs)}")
            return 1
        print(table(data))
        return 0

    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown or not settings or args.starts < 2 or args.repeats < 2:
        parser.error(f"settings from {', '.join(SETTINGS)} (unknown: {', '.join(unknown) or '-'}); "
                     "at least 2 starts and 2 repeats")
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    book = runbook(settings, args.starts, args.repeats, args.warmup, concurrencies, args.port)
    runs_root = Path(args.runs_dir) / NAME
    before = set(runs_root.glob("*")) if runs_root.exists() else set()
    with tempfile.TemporaryDirectory(prefix="spreads-") as tmp:
        path = Path(tmp) / f"{NAME}.yaml"
        path.write_text(json.dumps(book, indent=1) + "\n")  # JSON is YAML
        argv = [sys.executable, "-m", "llama4spec", "run", str(path), "--runs-dir", args.runs_dir]
        if args.dry_run:
            argv.append("--dry-run")
        began = time.monotonic()
        code = subprocess.run(argv).returncode
        elapsed = time.monotonic() - began
    if args.dry_run:
        return code
    made = sorted(set(runs_root.glob("*")) - before)
    if not made:
        print(f"llama4spec run exited {code} and left no run directory under {runs_root}")
        return code or 1
    run_dir = made[-1]
    print(f"\n{' '.join(argv)}: exit {code}, wall time {elapsed / 60:.1f} min; record {run_dir}\n")
    print(f"16 random prompts x 128 tokens per run, warm-up {args.warmup} requests per bench step\n")
    print(table(read_runs([run_dir])))
    return code


if __name__ == "__main__":
    sys.exit(main())
