"""``capacity``: a one-step capacity runbook from the command line. Overrides written as a Hydra sweep
(``draft=none,tiny_eagle``, ``lookahead=1,3``) are the server settings compared; every other override
(the SLO among them: ``slo=interactive``, ``slo.ttft_ms=500``) applies to every server. Planned and
executed exactly like ``llama4spec run`` plans a runbook file; the run directory is
runs/capacity/<timestamp>."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path
from typing import Any

from llama4spec.cli.common import Command, add_settings_flags, flag_of
from llama4spec.cli.run import add_plan_options, dry_run_or_execute, run_dir_for, validate_run_options, with_budget
from llama4spec.errors import UserError
from llama4spec.launch.options import RunOptions

NAME = "capacity"  # the runbook's name: runs/capacity/<timestamp>
STEP_ID = "capacity"
SOURCE = Path("<capacity>")


# the step's keys offered as flags of their own: key -> the flag's destination
DEMAND = {"load": "load", "price": "gpu_hour_price"}


def step_keys(args: dict[str, Any]) -> dict[str, Any]:
    """The step's keys the command line gives (those left out keep the kind's defaults)."""
    from llama4spec.capacity.search_settings import Settings

    given = {f.name: args[f.name] for f in dataclasses.fields(Settings) if args.get(f.name) is not None}
    return {**given, **{key: args[dest] for key, dest in DEMAND.items() if args.get(dest) is not None}}


def capacity_runbook(overrides: list[str], given: dict[str, Any]):
    """The one-step capacity runbook the command line stands for; UserError listing every problem."""
    from llama4spec.runbook.fields import read_keys
    from llama4spec.runbook.matrix import command_line_matrix
    from llama4spec.runbook.spec import Runbook, Step
    from llama4spec.runbook.steps import kind

    matrix, shared = command_line_matrix(overrides)
    at = f"{SOURCE}: step '{STEP_ID}'"
    problems: list[str] = []
    of = kind("capacity")
    keys = read_keys(of.Keys, {**given, "matrix": matrix}, at, problems)
    of.check(keys, at, problems, {})
    if problems:
        for key in given:
            problems = [p.replace(f"'{key}'", flag_of(DEMAND.get(key, key))) for p in problems]
        raise UserError(*problems)
    step = Step(id=STEP_ID, kind_of=of, keys=keys, description=f"request capacity over {', '.join(matrix)}")
    return Runbook(name=NAME, path=SOURCE, description=f"llama4spec capacity {shlex.join(overrides)}",
                   overrides=shared, steps=[step])


def _arguments(p: argparse.ArgumentParser) -> None:
    from llama4spec.capacity.search_settings import Settings

    p.add_argument("overrides", nargs="*",
                   help="Hydra overrides; those with a sweep (draft=none,tiny_eagle lookahead=1,3) are the server "
                        "settings compared, the rest (the SLO among them: slo=interactive) apply to every server")
    add_settings_flags(p, Settings)
    p.add_argument("--load", metavar="RPS", type=float,
                   help="a request rate to carry (req/s): the servers and GPUs each setting needs for it under the "
                        "SLO, with intervals, and the GPUs the draft saves (a CPU server counts as one device)")
    p.add_argument("--gpu-hour-price", metavar="PRICE", type=float,
                   help="what a GPU-hour costs you: the price per million output tokens at each setting's capacity "
                        "(none by default)")
    add_plan_options(p, "continue the searches in DIR (runs/capacity/<timestamp>): recorded probes are reused")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook.plan import make_plan
    from llama4spec.runbook.to_yaml import to_yaml

    opts = RunOptions.from_cli_args(args)
    given = step_keys(vars(args))
    runbook = capacity_runbook(list(opts.overrides), given)
    source = to_yaml(runbook, "capacity", list(opts.overrides))
    plan = make_plan(with_budget(runbook, opts), run_dir_for(opts, NAME), source=source)
    return dry_run_or_execute(plan, opts)


def _validate(args: argparse.Namespace) -> None:
    validate_run_options(RunOptions.from_cli_args(args))


COMMANDS = [Command(
    "capacity", "request capacity under a latency SLO: the largest request rate each server setting carries, "
                "and the gain over no speculation",
    _arguments, _run, _validate,
    examples=["llama4spec capacity draft=none,tiny_eagle lookahead=3 target=tiny memory=cpu bench=random_tiny "
              "slo.ttft_ms=500 slo.tpot_ms=50 --dry-run",
              "llama4spec capacity draft=none,eagle_llama4_scout lookahead=1,3,5 experiment=scout_eagle_reference "
              "slo=interactive",
              "llama4spec capacity draft=none,tiny_eagle lookahead=3 target=tiny memory=cpu bench=random_tiny "
              "slo.ttft_ms=500 slo.tpot_ms=50 --load 12 --gpu-hour-price 2.5 --dry-run",
              "llama4spec capacity draft=none,tiny_eagle --resume runs/capacity/TIMESTAMP"])]
