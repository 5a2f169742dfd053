"""``offline``: vLLM's ``LLM`` on the config, acceptance statistics from its own counters."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, RUNS_DIR, add_overrides, gate, out
from llama4spec.cli.paths import check_output_file


def _arguments(p: argparse.ArgumentParser) -> None:
    add_overrides(p)
    p.add_argument("--json", type=Path, metavar="PATH", help="write a run record (config, versions, stats) here")
    p.add_argument("--force", action="store_true", help="start even when the pre-flight doctor finds errors")


def _validate(args: argparse.Namespace) -> None:
    if args.json is not None:
        check_output_file(args.json, "--json")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import one_step_plan
    from llama4spec.runbook.steps import make as make_step

    step = make_step("offline", "offline", record=args.json)  # the overrides come once, as the command line's
    plan = one_step_plan(step, RUNS_DIR / "offline", list(args.overrides))
    return execute.run_command(plan, out, gate=gate(args.force))


COMMAND = Command(
    "offline", "run offline inference with vLLM's LLM and print acceptance statistics", _arguments, _run, _validate,
    examples=["llama4spec offline",
              "llama4spec offline offline.baseline=true --json run.json   # also without a draft: speedup + greedy check",
              "llama4spec offline draft=tiny_eagle_imperfect lookahead=5"])
COMMANDS = [COMMAND]
