"""``regress``: did the points of one run get slower in another (after an upgrade, say)?"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from llama4spec.cli.common import Command, out
from llama4spec.cli.jsonout import add_json_flag, emit, schema


def percentage(text: str) -> float:
    """--fail-on-regression: a percentage from 0 up to (not including) 100."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a percentage such as 5") from None
    if not math.isfinite(value) or not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage from 0 to below 100; give one such as 5")
    return value


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", type=Path, metavar="OLD_RUN", help="the run directory measured before (the reference)")
    p.add_argument("new", type=Path, metavar="NEW_RUN", help="the run directory measured after (an upgrade, say)")
    p.add_argument("--fail-on-regression", type=percentage, metavar="PCT",
                   help="exit 1 when any point regressed by more than PCT percent with confidence (a CI gate)")
    p.add_argument("--fail-on-lossless", action="store_true",
                   help="exit 1 when a lossless record got worse (a verdict that turned lossy, more greedy divergence)")
    add_json_flag(p, "the comparison (schema llama4spec.regress/1)")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook import pair_runs as regress
    from llama4spec.analysis import regress as stats

    r = regress.regress(args.old, args.new)
    pct = args.fail_on_regression
    failing = stats.gate(r.points, pct) if pct is not None else []
    worse = regress.lossless_worse(r)
    if args.fail_on_lossless:
        failing = [*failing, *worse]
    if args.json:
        emit({"schema": schema("regress"), "old": str(r.old), "new": str(r.new), "heading": regress.heading(r),
              "versions": {k: list(v) for k, v in r.versions.items()}, "host": {k: list(v) for k, v in r.host.items()},
              "environment": r.environment, "rule": stats.rule(r.noise),
              "points": [stats.point_record(pt) for pt in r.points],
              "not_comparable": [{"id": pid, "keys": keys} for pid, keys in r.not_comparable],
              "only_old": r.only_old, "only_new": r.only_new,
              "regressed": [pt.id for pt in r.points if pt.verdict == stats.REGRESSED],
              "fail_on_regression": pct, "failing": failing,
              "lossless": [{"id": c.id, "old": c.old, "new": c.new, "worse": c.worse} for c in r.lossless]})
    else:
        if r.points:
            stats.render(out, r.points, regress.heading(r), r.noise)
        else:
            for line in regress.heading(r):
                out.print(line, markup=False, highlight=False, soft_wrap=True)
        for line in [*regress.lossless_lines(r), *worse]:
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        for line in regress.notes(r):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        for line in failing:
            if line not in worse:
                out.print(f"regression beyond {pct:g}%: {line}", markup=False, highlight=False, soft_wrap=True)
    return 1 if failing else 0


COMMANDS = [Command("regress", "did the points of one run get slower in another (an upgrade's)? each point's "
                    "change with its interval and a verdict", _arguments, _run,
                    examples=["llama4spec regress runs/tiny_cpu_sweep/OLD runs/tiny_cpu_sweep/NEW",
                              "llama4spec regress OLD_RUN NEW_RUN --fail-on-regression 5 --json"])]
