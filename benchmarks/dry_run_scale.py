"""Wall time of planning large sweeps: `llama4spec run RUNBOOK --dry-run` for sweeps of 16, 128
and 992 servers of the tiny pair (lookaheads x `memory.max_num_seqs`, one concurrency each), and
of a launcher's child (`run RUNBOOK --only-group GROUP --into DIR --dry-run`: what a group's job
plans before its first step) on the largest. Each command runs in a fresh process, as a user
would type it; no engine starts. Prints one line per command: servers, seconds.

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


def timed(argv: list[str], timeout: float) -> float | None:
    """Seconds the command took; None when it did not finish within ``timeout``; exits on failure."""
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[2:])} failed (exit {done.returncode}):\n" + "\n".join(done.stderr.splitlines()[-15:]))
    return time.perf_counter() - start


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


if __name__ == "__main__":
    main()
