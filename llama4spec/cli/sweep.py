"""``sweep``: a one-step sweep runbook from the command line. Overrides written as a Hydra sweep
(``lookahead=1,3,5``, ``bench.max_concurrency=range(1,17,5)``, ``draft=choice(none,tiny_eagle)``)
become the matrix's axes; every other override applies to every point. Planned and executed
exactly like ``llama4spec run`` plans a runbook file; the run directory is runs/sweep/<timestamp>."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path
from types import SimpleNamespace

from llama4spec.cli.common import Command
from llama4spec.launch.options import RunOptions
from llama4spec.cli.run import add_run_options, dry_run_or_execute, run_dir_for, validate_run_options, with_budget
from llama4spec.errors import UserError

NAME = "sweep"  # the runbook's name: runs/sweep/<timestamp>
STEP_ID = "sweep"
SOURCE = Path("<sweep>")  # what messages name as the runbook


def bands_value(text: str | None) -> list | None:
    """``--bands``: comma-separated lengths (16), LOW-HIGH token ranges (17-64) or SPEED-Bench subsets
    (throughput_1k), as the ``bands:`` key writes them (checked by its reader)."""
    if text is None:
        return None
    out: list = []
    for item in (part.strip() for part in text.split(",")):
        low, dash, high = item.partition("-")
        if low.isdigit() and (not dash or high.isdigit()):
            out.append([int(low), int(high)] if dash else int(low))
        else:
            out.append(item)
    return out


def sweep_runbook(overrides: list[str], noise: str | None = None, price: float | None = None,
                  bands: str | None = None):
    """The one-step sweep runbook the command line stands for (``price``: --gpu-hour-price, ``bands``:
    --bands, each read as the step's own key is); UserError listing every problem."""
    from llama4spec.runbook.bands import add_axis
    from llama4spec.runbook.matrix import check_matrix, command_line_matrix
    from llama4spec.runbook.spec import Runbook
    from llama4spec.runbook.steps import kind, make as make_step

    matrix, shared = command_line_matrix(overrides)
    checked, problems = check_matrix(matrix, f"{SOURCE}: step '{STEP_ID}'")
    found: list[str] = []
    readers = {f.name: f.metadata["read"] for f in dataclasses.fields(kind("sweep").Keys) if "read" in f.metadata}
    if price is not None:  # read by the step's own reader of its price: key
        readers["price"]({"price": price}, "price", f"{SOURCE}: step '{STEP_ID}'", found)
    banded = bands_value(bands)
    if banded is not None:  # and its bands: key, a client axis of the matrix as a runbook's becomes
        banded = readers["bands"]({"bands": banded}, "bands", f"{SOURCE}: step '{STEP_ID}': --bands", found)
        keys = SimpleNamespace(bands=banded, matrix=checked)
        add_axis(keys, f"{SOURCE}: step '{STEP_ID}': --bands", found)
        checked = keys.matrix
    problems = [*problems, *(p.replace("'price'", "--gpu-hour-price").replace(": --bands: bands:", ": --bands:")
                             for p in found)]
    if problems:
        raise UserError(*problems)
    step = make_step("sweep", STEP_ID, matrix=checked, description=f"sweep over {', '.join(checked)}", noise=noise,
                     price=price, **({"bands": banded} if banded else {}))
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
    p.add_argument("--bands", metavar="BANDS",
                   help="input-length bands, each analysed on its own with where speculation stops paying: lengths "
                        "of random prompts (16,128,512), LOW-HIGH token ranges of a prompt file (1-16,17-64) or "
                        "SPEED-Bench subsets (throughput_1k,throughput_8k)")
    add_run_options(p, "continue the sweep in DIR (runs/sweep/<timestamp>): skip benchmarks already measured there")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook.plan import make_plan
    from llama4spec.runbook.schema import with_measurement
    from llama4spec.runbook.to_yaml import to_yaml

    opts = RunOptions.from_cli_args(args)
    runbook = with_measurement(sweep_runbook(list(opts.overrides), args.noise, args.gpu_hour_price, args.bands),
                               opts.repeats, opts.warmup)
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
              "llama4spec sweep lookahead=1,3 --resume runs/sweep/TIMESTAMP",
              "llama4spec sweep draft=none,tiny_eagle_imperfect lookahead=3 bench=random_tiny --bands 16,128,512 "
              "--dry-run"])]
