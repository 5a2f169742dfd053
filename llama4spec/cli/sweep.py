"""``sweep``: a one-step sweep runbook from the command line. Overrides written as a Hydra sweep
(``lookahead=1,3,5``, ``bench.max_concurrency=range(1,17,5)``, ``draft=choice(none,tiny_eagle)``)
become the matrix's axes; every other override applies to every point. Planned and executed
exactly like ``llama4spec run`` plans a runbook file; the run directory is runs/sweep/<timestamp>."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path
from llama4spec.cli.common import Command
from llama4spec.launch.options import RunOptions
from llama4spec.cli.run import add_run_options, dry_run_or_execute, run_dir_for, validate_run_options, with_budget
from llama4spec.errors import UserError

NAME = "sweep"  # the runbook's name: runs/sweep/<timestamp>
STEP_ID = "sweep"
SOURCE = Path("<sweep>")  # what messages name as the runbook


def sweep_runbook(overrides: list[str], noise: str | None = None, price: float | None = None):
    """The one-step sweep runbook the command line stands for (``price``: --gpu-hour-price, read as
    the step's ``price:`` key is); UserError listing every problem."""
    from llama4spec.runbook.matrix import check_matrix, command_line_matrix
    from llama4spec.runbook.spec import Runbook
    from llama4spec.runbook.steps import kind, make as make_step

    matrix, shared = command_line_matrix(overrides)
    checked, problems = check_matrix(matrix, f"{SOURCE}: step '{STEP_ID}'")
    if price is not None:  # read by the step's own reader of its price: key
        read = next(f.metadata["read"] for f in dataclasses.fields(kind("sweep").Keys) if f.name == "price")
        found: list[str] = []
        read({"price": price}, "price", f"{SOURCE}: step '{STEP_ID}'", found)
        problems = [*problems, *(p.replace("'price'", "--gpu-hour-price") for p in found)]
    if problems:
        raise UserError(*problems)
    step = make_step("sweep", STEP_ID, matrix=checked, description=f"sweep over {', '.join(checked)}", noise=noise,
                     price=price)
    return Runbook(name=NAME, path=SOURCE, description=f"llama4spec sweep {shlex.join(overrides)}",
                   overrides=shared, steps=[step])


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*",
                   help="Hydra overrides; those with a sweep (lookahead=1,3,5, bench.max_concurrency=range(1,17,5), "
                        "draft=choice(none,tiny_eagle)) are the matrix's axes, the rest apply to every point")
    p.add_argument("--noise", metavar="PATH", help="a noise.json from `llama4spec calibrate` on this machine: the "
                   "prior of every comparison (default: the hardware config's)")
    p.add_argument("--gpu-hour-price", metavar="PRICE", type=float,
                   help="what a GPU-hour costs you (a CPU server counts as one device): the frontier's price per "
                        "million output tokens, with and without the draft (none by default)")
    add_run_options(p, "continue the sweep in DIR (runs/sweep/<timestamp>): skip benchmarks already measured there")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook.plan import make_plan
    from llama4spec.runbook.schema import with_measurement
    from llama4spec.runbook.to_yaml import to_yaml

    opts = RunOptions.from_cli_args(args)
    runbook = with_measurement(sweep_runbook(list(opts.overrides), args.noise, args.gpu_hour_price), opts.repeats,
                               opts.warmup)
    source = to_yaml(runbook, "sweep", list(opts.overrides))
    plan = make_plan(with_budget(runbook, opts), run_dir_for(opts, NAME), source=source)
    return dry_run_or_execute(plan, opts)


def _validate(args: argparse.Namespace) -> None:
    validate_run_options(RunOptions.from_cli_args(args))


COMMANDS = [Command(
    "sweep", "sweep a matrix from the command line: overrides with a Hydra sweep (lookahead=1,3,5) are its axes",
    _arguments, _run, _validate,
    examples=["llama4spec sweep lookahead=1,3 bench.max_concurrency=1,4 draft=none,tiny_eagle --dry-run",
              "llama4spec sweep 'lookahead=range(1,4)' bench=random_tiny serve.port=8800",
              "llama4spec sweep lookahead=1,3 --resume runs/sweep/TIMESTAMP"])]
