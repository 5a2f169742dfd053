"""``run``: execute a runbook (servers, benchmarks, comparison) and record it."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from llama4spec.cli.common import Command, RUNS_DIR, gate, out, repeats_value
from llama4spec.launch.options import RunOptions
from llama4spec.cli.paths import check_output_dir, runbook_path


def add_plan_options(p: argparse.ArgumentParser, resume_help: str) -> None:
    """The options of every command that plans and executes a runbook (``run``, ``sweep``, ``capacity``,
    ``breakeven``)."""
    p.add_argument("--dry-run", action="store_true", help="print the full plan (argv, env, artifacts) and start nothing")
    p.add_argument("--force", action="store_true", help="start even when the doctor reports an error")
    p.add_argument("--runs-dir", type=Path, default=RUNS_DIR, metavar="DIR", help="where run records go (default: runs/)")
    p.add_argument("--resume", type=Path, metavar="DIR", help=resume_help)
    p.add_argument("--stop-on-error", action="store_true",
                   help="stop at the first failed step (default: skip only what depends on it, run the rest)")
    p.add_argument("--budget", metavar="AMOUNT",
                   help='what the whole run may spend: wall time ("10 min", "2 h") or GPU-hours ("50 gpu-h"), checked '
                        "against its least cost before anything starts (replaces the runbook's budget:)")
    p.add_argument("--json", action="store_true",
                   help="with --dry-run: the plan, its cost and budgets as one JSON document on stdout "
                        "(shape: docs/machine-readable-output.md)")


def add_run_options(p: argparse.ArgumentParser, resume_help: str) -> None:
    """The options of the commands that run a whole runbook (``run``, ``sweep``): the plan's, and the
    repeats and warm-up of every bench and sweep step."""
    add_plan_options(p, resume_help)
    p.add_argument("--repeats", type=repeats_value, metavar="N|auto",
                   help="counted benchmark runs per point, for every bench and sweep step (default: the runbook's; "
                        "sweeps 3, benches 1); auto: sweeps measure each point until its comparisons are decided")
    p.add_argument("--warmup", type=int, metavar="N",
                   help="warm-up requests per point, in an unrecorded run before the counted ones (default: the "
                        "runbook's)")


def validate_run_options(opts: RunOptions) -> None:
    """The output paths the run would write, checked for a dry run too (it promises the run; it writes nothing)."""
    if opts.json and not opts.dry_run:
        from llama4spec.errors import UserError

        raise UserError("--json prints the plan of a dry run; add --dry-run (a run's plan.json holds the same)")
    budget(opts)
    if opts.resume is None and opts.into is None:
        check_output_dir(opts.runs_dir, "--runs-dir")
    for path, flag in ((opts.resume, "--resume"), (opts.into, "--into")):
        if path is not None and path.is_dir():
            check_output_dir(path, flag)


def budget(opts: RunOptions):
    """--budget read (None when not given); UserError in one line when it is not a budget."""
    from llama4spec.cost.budget import parse_budget

    return parse_budget(opts.budget, "--budget") if opts.budget is not None else None


def with_budget(runbook, opts: RunOptions):
    """The runbook with --budget as its budget (unchanged without it)."""
    given = budget(opts)
    return runbook if given is None else dataclasses.replace(runbook, budget=given)


def run_dir_for(opts: RunOptions, name: str) -> Path:
    """A new run directory under --runs-dir, or the one --resume names (checked to be a run of ``name``),
    or the one --into names (a launcher's run: the group goes under it)."""
    from llama4spec.runbook.rundir import new_run_dir

    if opts.into is not None:
        return opts.into

    if opts.resume is not None:  # the same run directory: measure only what is missing
        from llama4spec.runbook.resume import resume_dir

        return resume_dir(opts.resume, name)
    return new_run_dir(opts.runs_dir, name)


def dry_run_or_execute(plan, opts: RunOptions) -> int:
    from llama4spec.runbook import execute
    from llama4spec.runbook.render import plan_text

    if opts.dry_run and opts.json:
        from llama4spec.cli.jsonout import emit
        from llama4spec.runbook.pricing import document

        emit(document(plan))
        return 0
    if opts.dry_run:
        plan_text(out, plan)
        return 0
    return execute.run(plan, out, gate=gate(opts.force), resume=opts.resume is not None,
                       stop_on_error=opts.stop_on_error)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runbook", type=Path,
                   help="a runbook file (runbooks/tiny_cpu_eagle_vs_baseline.yaml) or a shipped runbook's name")
    p.add_argument("overrides", nargs="*", help="Hydra overrides applied to every step, after the runbook's own")
    add_run_options(p, "continue the run in DIR (runs/<runbook>/<timestamp>): skip benchmarks already measured there "
                       "(with groups: re-run only the groups not done)")
    p.add_argument("--fail-on-lossless", action="store_true",
                   help="a lossless step whose verdict is lossy fails, so the run exits 1 (a CI gate for upgrades)")
    from llama4spec.cli.groups import add_options

    add_options(p)


def _validate(args: argparse.Namespace) -> None:
    from llama4spec.launch.submit import validate_options

    opts = RunOptions.from_cli_args(args)
    validate_run_options(opts)
    validate_options(opts)


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook.plan import plan_file

    opts = dataclasses.replace(RunOptions.from_cli_args(args), runbook=runbook_path(args.runbook))
    if opts.only_group:  # a group's job: that group alone is planned
        from llama4spec.launch.group import plan_only

        plan = plan_only(opts.runbook, lambda name: run_dir_for(opts, name), opts.only_group, list(opts.overrides),
                         repeats=opts.repeats, warmup=opts.warmup)
    else:
        plan = plan_file(opts.runbook, lambda name: run_dir_for(opts, name), list(opts.overrides),
                         repeats=opts.repeats, warmup=opts.warmup, budget=budget(opts))
    if opts.fail_on_lossless:
        from llama4spec.runbook.steps.lossless import fail_on_lossy

        fail_on_lossy(plan)
    from llama4spec.cli.groups import run_launched
    from llama4spec.launch.submit import launched

    if launched(opts, plan):  # server groups: one here, several at once, or as Slurm jobs
        return run_launched(opts, plan)
    return dry_run_or_execute(plan, opts)


COMMANDS = [Command(
    "run", "execute a runbook YAML (servers, benchmarks, comparison) and record it", _arguments, _run,
    _validate,
    examples=["llama4spec run runbooks/tiny_cpu_eagle_vs_baseline.yaml",
              "llama4spec run tiny_cpu_sweep --dry-run",
              "llama4spec run runbooks/tiny_cpu_sweep.yaml --resume runs/tiny_cpu_sweep/TIMESTAMP",
              "llama4spec run tiny_cpu_sweep --parallel 2",
              "llama4spec run tiny_cpu_sweep cluster=slurm_local --launcher slurm",
              "llama4spec run tiny_cpu_sweep --only-group sweep-tiny_eagle-k3 --into runs/tiny_cpu_sweep/TIMESTAMP"])]
