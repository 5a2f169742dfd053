"""The context-conditioned losslessness test in simulation (``llama4spec.lossless.simulate``): per
row, 1,000 checks of a lossless sampler (distinct random prompts, one sample each, a target whose
next-token distribution depends on the whole context) give the false-rejection rate and the median
stated deviation; 1,000 checks a direction with a sampler off by that deviation give the rate it is
found at; the test that conditions on the previous token alone is run on the lossless checks.

    .venv/bin/python benchmarks/lossless_simulation.py [--checks 1000]
"""

from __future__ import annotations

import argparse
import time

ROWS = (  # level, prompts, tokens, temperature, top_p
    (0.05, 32, 16, 0.8, 1.0), (0.01, 32, 16, 0.8, 1.0), (0.05, 64, 32, 0.6, 1.0), (0.05, 32, 16, 1.0, 0.9))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=1000)
    args = parser.parse_args()
    from llama4spec.lossless.simulate import table

    print("| level | prompts x tokens | T | top_p | lossless rejected | stated deviation (median [range]) | "
          "found, sharp | found, flat | previous-token test rejects lossless | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for level, prompts, tokens, t, top_p in ROWS:
        started = time.monotonic()
        r = table(args.checks, level, prompts, tokens, t, top_p)
        n = r["lossless"]
        print(f"| {level:g} | {prompts} x {tokens} | {t:g} | {top_p:g} | {n['rejected']:.3f} | {n['stated']:.3f} "
              f"[{n['stated_low']:.3f}, {n['stated_high']:.3f}] | {r['sharp']['rejected']:.3f} | "
              f"{r['flat']['rejected']:.3f} | {n['previous_only_rejected']:.3f} | {time.monotonic() - started:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
