"""``breakeven``: a one-step break-even runbook from the command line. The overrides (the draft whose
cost is measured among them) apply to every server; the lookaheads, concurrencies and the grid are
the step's own keys. Planned and executed exactly like ``llama4spec run`` plans a runbook file; the
run directory is runs/breakeven/<timestamp>."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from llama4spec.cli.common import Command
from llama4spec.cli.run import add_plan_options, dry_run_or_execute, run_dir_for, validate_run_options, with_budget
from llama4spec.errors import UserError
from llama4spec.launch.options import RunOptions

NAME = "breakeven"  # the runbook's name: runs/breakeven/<timestamp>
STEP_ID = "breakeven"
SOURCE = Path("<breakeven>")
KEYS = {"lookaheads": "--lookaheads", "concurrencies": "--concurrencies", "grid": "--grid", "repeats": "--repeats",
        "warmup": "--warmup", "place": "--no-place", "draft_from": "--draft-from", "blocks": "--blocks"}


def _list(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give whole numbers separated by commas, e.g. 1,3") from None


def step_keys(args: dict[str, Any]) -> dict[str, Any]:
    """The step's keys the command line gives (those left out keep the kind's defaults)."""
    return {k: args[k] for k in KEYS if args.get(k) is not None}


def breakeven_runbook(overrides: list[str], given: dict[str, Any]):
    """The one-step runbook the command line stands for; UserError listing every problem."""
    from llama4spec.runbook.fields import read_keys
    from llama4spec.runbook.spec import Runbook, Step
    from llama4spec.runbook.steps import kind

    at = f"{SOURCE}: step '{STEP_ID}'"
    problems: list[str] = []
    of = kind(NAME)
    keys = read_keys(of.Keys, dict(given), at, problems)
    of.check(keys, at, problems, {})
    if problems:
        for key, flag in KEYS.items():
            problems = [p.replace(f"'{key}'", flag) for p in problems]
        raise UserError(*problems)
    step = Step(id=STEP_ID, kind_of=of, keys=keys, description="break-even map over synthetic acceptance")
    return Runbook(name=NAME, path=SOURCE, description=f"llama4spec breakeven {shlex.join(overrides)}",
                   overrides=list(overrides), steps=[step])


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*",
                   help="Hydra overrides for every server, the draft whose cost is measured among them "
                        "(draft=tiny_eagle_imperfect)")
    p.add_argument("--lookaheads", type=_list, metavar="K,K", help="lookaheads to map, e.g. 1,3")
    p.add_argument("--concurrencies", type=_list, metavar="C,C", help="client concurrencies, e.g. 1,4")
    p.add_argument("--grid", type=int, metavar="N",
                   help="acceptance lengths a lookahead, evenly from 1.0 to k + 1 (default 4)")
    p.add_argument("--repeats", type=int, metavar="N", help="counted runs per server and concurrency (default 3)")
    p.add_argument("--warmup", type=int, metavar="N", help="unrecorded warm-up requests before each point (default 0)")
    p.add_argument("--no-place", dest="place", action="store_const", const=False,
                   help="do not measure the draft itself (no placement, no self-check)")
    p.add_argument("--draft-from", metavar="PATH",
                   help="also place a draft measured earlier: a bench step's directory of a run, its record.json, "
                        "or a sweep's sweep.json")
    p.add_argument("--blocks", type=int, metavar="J",
                   help="measure the map in J back-to-back blocks: each server started J times beside a fresh server "
                        "without speculation, each speedup from the blocks' own spread (default 0: one start each)")
    add_plan_options(p, "continue the map in DIR (runs/breakeven/<timestamp>): recorded points are reused")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook.plan import make_plan
    from llama4spec.runbook.to_yaml import to_yaml

    opts = RunOptions.from_cli_args(args)
    given = step_keys(vars(args))
    runbook = breakeven_runbook(list(opts.overrides), given)
    source = to_yaml(runbook, NAME, list(opts.overrides))
    plan = make_plan(with_budget(runbook, opts), run_dir_for(opts, NAME), source=source)
    return dry_run_or_execute(plan, opts)


def _validate(args: argparse.Namespace) -> None:
    validate_run_options(RunOptions.from_cli_args(args))


COMMANDS = [Command(
    "breakeven", "what speculation costs this engine apart from the draft: speedup against acceptance length "
                 "(vLLM's synthetic acceptance), the break-even acceptance length and the cost of k=0",
    _arguments, _run, _validate,
    examples=["llama4spec breakeven draft=tiny_eagle_imperfect target=tiny memory=cpu bench=random_tiny "
              "--lookaheads 1,3 --concurrencies 1,4 --dry-run",
              "llama4spec breakeven experiment=scout_eagle_reference --lookaheads 1,3,5 --concurrencies 1,16,64 "
              "--grid 5"])]
