"""``calibrate``: this machine's noise, measured: one setting (the overrides) started m times with r
runs each, one after another or back to back; noise.json (components with intervals and df, costs,
fingerprint) in the run directory, and an A/A check. ``--check PATH`` reads a profile back."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from llama4spec.calibrate.settings import DESIGNS, Settings
from llama4spec.cli.common import Command, RUNS_DIR, out
from llama4spec.cli.run import dry_run_or_execute, run_dir_for, validate_run_options
from llama4spec.console import say
from llama4spec.launch.options import RunOptions

NAME = "calibrate"


def _arguments(p: argparse.ArgumentParser) -> None:
    d = Settings()
    p.add_argument("overrides", nargs="*", help="Hydra overrides: the setting a sweep will measure (target, draft, "
                                                "lookahead, bench.max_concurrency, the prompts)")
    p.add_argument("--starts", type=int, default=d.starts, metavar="M",
                   help=f"server starts (back to back: start pairs) (default {d.starts})")
    p.add_argument("--runs", type=int, default=d.runs, metavar="R", help=f"counted runs a start (default {d.runs})")
    p.add_argument("--design", choices=DESIGNS, default=d.design,
                   help="the design a sweep will use: one server at a time, or two started together with their runs "
                        f"in turn (default {d.design})")
    p.add_argument("--warmup", type=int, default=d.warmup, metavar="N",
                   help=f"warm-up requests before a start's counted runs (default {d.warmup})")
    p.add_argument("--confidence", type=float, default=d.confidence, metavar="LEVEL",
                   help=f"of the intervals and the A/A check (default {d.confidence})")
    p.add_argument("--port", type=int, default=d.port, help=f"the server's port (back to back: and the next) "
                                                            f"(default {d.port})")
    p.add_argument("--margin", type=float, default=d.margin, metavar="M",
                   help=f"the A/A check also counts pairs equivalent within +-M (default {d.margin})")
    p.add_argument("--precision", type=float, default=d.precision, metavar="P",
                   help="the report says the starts a comparison of two settings needs to reach a relative "
                        f"half-width P (default {d.precision}: +-5%%)")
    p.add_argument("--check", type=Path, metavar="NOISE_JSON",
                   help="start nothing: read a profile, check it against this machine and the overrides, show it")
    p.add_argument("--dry-run", action="store_true", help="print the plan and start nothing")
    p.add_argument("--force", action="store_true", help="start even when the doctor reports an error")
    p.add_argument("--runs-dir", type=Path, default=RUNS_DIR, metavar="DIR", help="where run records go (default: runs/)")


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(args.starts, args.runs, args.design, args.warmup, args.confidence, args.port, args.margin,
                    args.precision)


def _validate(args: argparse.Namespace) -> None:
    from llama4spec.calibrate.settings import problems
    from llama4spec.errors import UserError

    if args.check is not None:  # a profile read back uses --precision alone: the starts a comparison needs
        from llama4spec.stats.checks import precision_problem

        bad = [p for p in (precision_problem(args.precision, "--precision"),) if p]
    else:
        bad = problems(_settings(args))
    if bad:
        raise UserError(*bad)
    validate_run_options(RunOptions.from_cli_args(args))


def _check(args: argparse.Namespace) -> int:
    from llama4spec.stats.profile import read_profile
    from llama4spec.runbook.noise_prior import cpu_flags, fingerprint
    from llama4spec.calibrate.noise_table import render
    from llama4spec.cli.common import compose
    from llama4spec.results.provenance import host, versions

    try:
        flags = cpu_flags(Path("/proc/cpuinfo").read_text())
    except OSError:
        flags = ""
    here = fingerprint(compose(list(args.overrides)).cfg, host(), versions(), flags)
    here = dataclasses.replace(here, target=here.target if args.overrides else "")
    profile = read_profile(args.check, here)
    render(out, profile, args.check, args.precision, "read and checked against this machine")
    return 0


def _run(args: argparse.Namespace) -> int:
    from llama4spec.calibrate import design as calibration
    from llama4spec.calibrate.noise_table import render
    from llama4spec.calibrate.measure import finish, make

    if args.check is not None:
        return _check(args)
    opts = RunOptions.from_cli_args(args)
    settings = _settings(args)
    plan = make(settings, list(opts.overrides), run_dir_for(opts, NAME))
    if opts.dry_run:
        say(out, f"calibration: {calibration.describe(settings)}")
    code = dry_run_or_execute(plan, opts)
    if opts.dry_run or code:
        return code
    profile, path = finish(plan, settings)
    render(out, profile, path, settings.precision)
    return 0


COMMANDS = [Command(
    "calibrate", "measure this machine's noise: one setting started several times, its between- and within-start "
                 "spread with df, the costs and where it ran in noise.json, and an A/A check",
    _arguments, _run, _validate,
    examples=["llama4spec calibrate target=tiny memory=cpu bench=random_tiny --dry-run",
              "llama4spec calibrate target=tiny memory=cpu bench=random_tiny --starts 6 --runs 4",
              "llama4spec calibrate --check runs/calibrate/<timestamp>/noise.json"])]
