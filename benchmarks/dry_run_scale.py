"""Wall time of planning large sweeps: `llama4spec run RUNBOOK --dry-run` for sweeps of 16, 128
and 992 servers of the tiny pair (lookaheads x `memory.max_num_seqs`, one concurrency each), and
of a launcher's child (`run RUNBOOK --only-group GROUP --into DIR --dry-run`: what a group's job
plans before its first step) on the largest; then the largest inputs that must be refused (each
must exit 2 with its one-line refusal, every count checked before anything is composed). Each
command runs in a fresh process, as a user would type it; no engine starts. Prints one line per
command: what it is, seconds.

    .venv/bin/python benchmarks/dry_run_scale.py [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {16: (8, 2), 128: (16, 8), 992: (32, 31)}  # servers: (lookaheads, max_num_seqs values)

RUNBOOK = """\
name: scale{servers}
overrides: [target=tiny, memory=cpu, bench=random_tiny, serve.port=8741]
steps:
  - id: sweep
    kind: sweep
    repeats: 1
    matrix:
      draft: [tiny_eagle]
      lookahead: [{lookaheads}]
      memory.max_num_seqs: [{seqs}]
      bench.max_concurrency: [1]
"""


def timed(argv: list[str], timeout: float, code: int = 0) -> float | None:
    """Seconds the command took; None when it did not finish within ``timeout``; exits when it ends
    with another exit code than ``code``."""
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != code:
        sys.exit(f"{' '.join(argv[2:])} ended with exit {done.returncode}, not {code}:\n"
                 + "\n".join(done.stderr.splitlines()[-15:]))
    return time.perf_counter() - start


def _steps(n: int, step: str) -> str:
    return "\n".join(step.format(i=i) for i in range(n))


# The largest inputs that must be refused: (what, arguments after `llama4spec`, files to write first).
# Each is refused by a count or size check that runs before any composition.
BENCH_STEP = "  - {{id: b{i}, kind: bench, url: 'http://127.0.0.1:9', overrides: [lookahead=3]}}"
SWEEP_STEP = ("  - {{id: s{i}, kind: sweep, matrix: {{lookahead: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "
              "bench.max_concurrency: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]}}}}")
REFUSALS = [
    ("sweep, a cartesian product of 1,000 x 1,000 x 1,000 points",
     ["sweep", "lookahead=range(1,1001)", "bench.max_concurrency=range(1,1001)", "memory.max_num_seqs=range(1,1001)"],
     {}),
    ("sweep, shuffle(range(1,100000000)) (Hydra would build the list)",
     ["sweep", "lookahead=shuffle(range(1,100000000))"], {}),
    ("sweep, range(1,inf)", ["sweep", "lookahead=range(1,inf)"], {}),
    ("runbook, 1,001 steps", ["run", "{dir}/steps.yaml"],
     {"steps.yaml": "name: steps\nsteps:\n" + _steps(1001, BENCH_STEP) + "\n"}),
    ("runbook, 999 bench steps and sweeps of 1,100 points together",
     ["run", "{dir}/points.yaml"],
     {"points.yaml": "name: points\nsteps:\n" + _steps(989, BENCH_STEP) + "\n"
      + _steps(11, SWEEP_STEP.replace("s{i}", "s{i}x")) + "\n"}),
    ("runbook, a matrix list of 1,001 values", ["run", "{dir}/list.yaml"],
     {"list.yaml": "name: list\nsteps:\n  - {id: s, kind: sweep, matrix: {lookahead: ["
                   + ", ".join(str(i) for i in range(1001)) + "]}}\n"}),
    ("runbook, a matrix string shuffle(range(1,100000000))", ["run", "{dir}/shuffle.yaml"],
     {"shuffle.yaml": "name: shuffle\nsteps:\n  - {id: s, kind: sweep, matrix: {lookahead: "
                      "'shuffle(range(1,100000000))'}}\n"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300, help="seconds one command may take (default 300)")
    args = parser.parse_args()
    tool = [sys.executable, "-m", "llama4spec"]
    with tempfile.TemporaryDirectory() as tmp:
        for servers, (lookaheads, seqs) in SIZES.items():
            path = Path(tmp) / f"scale{servers}.yaml"
            path.write_text(RUNBOOK.format(servers=servers, lookaheads=", ".join(str(k) for k in range(1, lookaheads + 1)),
                                           seqs=", ".join(str(8 * (i + 1)) for i in range(seqs))))
            seconds = timed([*tool, "run", str(path), "--dry-run", "--runs-dir", str(Path(tmp) / "runs")], args.timeout)
            shown = f"{seconds:.1f} s" if seconds is not None else f"more than {args.timeout:.0f} s"
            print(f"dry run, {servers} servers: {shown}", flush=True)
        group = f"sweep-tiny_eagle-k{SIZES[992][0]}-max_num_seqs-{8 * SIZES[992][1]}"  # the last server
        seconds = timed([*tool, "run", str(Path(tmp) / "scale992.yaml"), "--only-group", group, "--into",
                         str(Path(tmp) / "runs" / "scale992" / "job"), "--dry-run"], args.timeout)
        shown = f"{seconds:.1f} s" if seconds is not None else f"more than {args.timeout:.0f} s"
        print(f"--only-group of 992 servers, up to its first step: {shown}", flush=True)
        for what, argv, files in REFUSALS:
            for name, text in files.items():
                (Path(tmp) / name).write_text(text)
            argv = [a.format(dir=tmp) for a in argv]
            seconds = timed([*tool, *argv, "--dry-run", "--runs-dir", str(Path(tmp) / "runs")], args.timeout, code=2)
            shown = f"{seconds:.1f} s" if seconds is not None else f"more than {args.timeout:.0f} s"
            print(f"refused: {what}: {shown}", flush=True)


if __name__ == "__main__":
    main()
