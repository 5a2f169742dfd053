"""``fetch``: download what a config needs (target, EAGLE draft, separate tokenizer) into the Hugging
Face cache before any server starts; a one-step plan run by the same executor as runbooks."""

from __future__ import annotations

import argparse

from llama4spec.cli.common import Command, RUNS_DIR, add_overrides, out, say


def _arguments(p: argparse.ArgumentParser) -> None:
    add_overrides(p)
    p.add_argument("--dry-run", action="store_true",
                   help="list what would be fetched (repository, revision, files, cache) and download nothing")


def _fetch(args: argparse.Namespace) -> int:
    from llama4spec.models.download import fetch_plan, plan_lines
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import one_step_plan
    from llama4spec.runbook.steps import make as make_step

    step = make_step("fetch", "fetch")  # the overrides come once, as the command line's
    plan = one_step_plan(step, RUNS_DIR / "fetch", list(args.overrides))
    if args.dry_run:
        cfg = plan.steps[0].composed.cfg
        for line in plan_lines(cfg, fetch_plan(cfg)):
            say(line)
        return 0
    return execute.run_command(plan, out)


COMMANDS = [Command(
    "fetch", "download the target, draft and tokenizer a config needs into the Hugging Face cache (weights, "
    "configs and tokenizer files only; resumes; offline: checks the cache)", _arguments, _fetch,
    examples=["llama4spec fetch experiment=scout_eagle_reference --dry-run",
              "llama4spec fetch target=llama4_scout draft=eagle_llama4_scout target.revision=main",
              "HF_HUB_OFFLINE=1 llama4spec fetch target.model=ORG/NAME draft=none   # checks the local cache"])]
