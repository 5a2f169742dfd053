"""``lossless``: a one-step losslessness runbook from the command line (``runbook/steps/lossless.py``):
the overrides choose the target, draft and prompts; the options are the check's settings. Planned
and executed like ``llama4spec run``; the run directory is runs/lossless/<timestamp>."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from llama4spec.cli.common import Command, RUNS_DIR
from llama4spec.cli.run import dry_run_or_execute, run_dir_for, validate_run_options
from llama4spec.errors import UserError
from llama4spec.launch.options import RunOptions

NAME = "lossless"
STEP_ID = "lossless"
SOURCE = Path("<lossless>")
KEYS = {"temperatures": "--temperatures", "samples": "--samples", "level": "--level", "wide_gap": "--wide-gap",
        "top_p": "--top-p", "top_k": "--top-k", "min_p": "--min-p", "url": "--url"}


def temperature_list(text: str) -> list[float]:
    """--temperatures: numbers separated by commas (checked with the step's own reader)."""
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of numbers; give one such as 0,0.6,1.0") from None


def lossless_runbook(overrides: list[str], given: dict[str, Any]):
    """The one-step runbook the command line stands for; UserError listing every problem."""
    from llama4spec.runbook.fields import read_keys
    from llama4spec.runbook.spec import Runbook, Step
    from llama4spec.runbook.steps import kind

    problems: list[str] = []
    of = kind(NAME)
    keys = read_keys(of.Keys, {**given, "overrides": overrides}, f"{SOURCE}", problems)
    if problems:
        for key, flag in KEYS.items():
            problems = [p.replace(f"{SOURCE}: '{key}'", flag) for p in problems]
        raise UserError(*problems)
    step = Step(id=STEP_ID, kind_of=of, keys=keys, description="speculation against the target alone")
    return Runbook(name=NAME, path=SOURCE, description=f"llama4spec lossless {shlex.join(overrides)}", steps=[step])


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*", help="Hydra overrides: the target, the draft, the prompts (dataset.*), "
                                                "generation.max_tokens")
    p.add_argument("--temperatures", type=temperature_list, metavar="T,T,...",
                   help="0: greedy outputs against the target's own; above 0: the sampled tokens' distribution "
                        "(default 0,0.6,1.0)")
    p.add_argument("--samples", type=int, metavar="N", help="seeded requests per temperature above 0 (default 64)")
    p.add_argument("--level", type=float, metavar="ALPHA",
                   help="the joint level: the chance that any test rejects a lossless engine (default 0.01)")
    p.add_argument("--wide-gap", type=float, metavar="NATS",
                   help="a greedy divergence where the target's top-2 logprob gap is this wide is a defect "
                        "(default 0.5)")
    p.add_argument("--top-p", type=float, metavar="P",
                   help="above temperature 0: every request samples from this nucleus, and the reference is "
                        "processed the same way (0 < P <= 1; default 1: off)")
    p.add_argument("--top-k", type=int, metavar="K",
                   help="above temperature 0: every request samples from the top K tokens (0 or -1: off, the default)")
    p.add_argument("--min-p", type=float, metavar="P",
                   help="refused: vLLM 0.32 ignores min_p (and logit_bias) when a draft is set")
    p.add_argument("--url", metavar="URL",
                   help="the draft's side from this running server (seeded completions), scored by the target "
                        "in an engine here; the config names the target and draft it serves")
    p.add_argument("--fail-on-lossless", action="store_true", help="exit 1 when the verdict is lossy (a CI gate)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and start nothing")
    p.add_argument("--force", action="store_true", help="start even when the doctor reports an error")
    p.add_argument("--runs-dir", type=Path, default=RUNS_DIR, metavar="DIR", help="where run records go (default: runs/)")


def _given(args: argparse.Namespace) -> dict[str, Any]:
    given = {k: getattr(args, k) for k in KEYS if getattr(args, k) is not None}
    if args.fail_on_lossless:
        given["fail"] = True
    return given


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook.plan import make_plan
    from llama4spec.runbook.to_yaml import to_yaml

    opts = RunOptions.from_cli_args(args)
    given = _given(args)
    runbook = lossless_runbook(list(opts.overrides), given)
    try:
        plan = make_plan(runbook, run_dir_for(opts, NAME), source=to_yaml(runbook, NAME, list(opts.overrides)))
    except UserError as err:  # the command's own problems: without the one step's name
        raise UserError(*[p.replace(f"{SOURCE}: step '{STEP_ID}': ", "") for p in err.problems]) from None
    return dry_run_or_execute(plan, opts)


def _validate(args: argparse.Namespace) -> None:
    validate_run_options(RunOptions.from_cli_args(args))


COMMANDS = [Command(
    "lossless", "does speculation change what the target says? greedy outputs against the target's own (and its "
                "own divergence), sampled tokens against the target's distribution; lossless.json and a verdict",
    _arguments, _run, _validate,
    examples=["llama4spec lossless target=tiny_spread draft=tiny_eagle_spread --temperatures 0,0.6,1.0 --dry-run",
              "llama4spec lossless target=tiny_spread --temperatures 0.8 --samples 16 --fail-on-lossless",
              "llama4spec lossless target=tiny_spread --temperatures 0.8 --top-p 0.9 --url http://127.0.0.1:8000"])]
