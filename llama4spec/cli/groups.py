"""``run`` with server groups: the options, and the hand-over to ``launch.submit`` (one group
here, several at once on this machine, or every group as a Slurm job), which prints on this
command's console and checks engine steps with its doctor's gate."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli import common
from llama4spec.launch.options import RunOptions
from llama4spec.launch.here import Here


# -- options (added to `run` by cli/run.py) ---------------------------------------------------
def add_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("server groups (a server with all its benchmarks, started and stopped once)")
    g.add_argument("--only-group", metavar="NAME",
                   help="run one group (a serve step's id, e.g. sweep-tiny_eagle-k3) into RUN_DIR/groups/NAME/")
    g.add_argument("--shard", metavar="I/N", help="run the I-th of N equal shares of the groups, one after another")
    g.add_argument("--into", type=Path, metavar="RUN_DIR",
                   help="with --only-group/--shard: the run directory the group goes under (default: a new one)")
    g.add_argument("--parallel", type=int, metavar="N",
                   help="run up to N groups at once on this machine, each with its own port and devices")
    g.add_argument("--launcher", choices=("local", "slurm"),
                   help="slurm: every group as a Slurm job through submitit (partition, account, time limit "
                        "from cluster.slurm); local: here (default: the runbook's cluster.slurm.submit)")
    g.add_argument("--detach", action="store_true",
                   help="with --launcher slurm: return once the jobs are submitted (llama4spec report RUN_DIR "
                        "merges later, llama4spec cancel RUN_DIR cancels them)")


def run_launched(opts: RunOptions, plan) -> int:
    """The plan's server groups, where ``opts`` says (``launch.submit``)."""
    from llama4spec.launch import submit

    here = Here(console=common.out, check=common.gate(opts.force), quiet=common.current_verbosity() <= common.QUIET)
    return submit.run_launched(opts, plan, here)
