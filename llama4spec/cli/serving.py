"""``serve`` and ``bench``: a vLLM server from the config, and vLLM's serving benchmark against one.
Each is a one-step plan run by the same executor as runbooks."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, RUNS_DIR, add_overrides, gate, note, out
from llama4spec.cli.paths import check_output_dir, check_output_file


def _serve_arguments(p: argparse.ArgumentParser) -> None:
    add_overrides(p)
    p.add_argument("--dry-run", action="store_true", help="print the command and start nothing")
    p.add_argument("--force", action="store_true", help="start even when the doctor reports an error")
    p.add_argument("--log", type=Path, metavar="PATH", help="server log file (default: runs/serve/<timestamp>/server.log)")


def _serve_validate(args: argparse.Namespace) -> None:
    if args.log is not None:  # a dry run checks what the run would
        check_output_file(args.log, "--log")


def _serve(args: argparse.Namespace) -> int:
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import one_step_plan
    from llama4spec.runbook.render import command_text
    from llama4spec.runbook.rundir import new_run_dir
    from llama4spec.runbook.steps import make as make_step

    step = make_step("serve", "serve", log=args.log)  # the overrides come once, as the command line's
    plan = one_step_plan(step, new_run_dir(RUNS_DIR, "serve"), list(args.overrides))
    command_text(out, plan)  # redacted (engine.secrets)
    if args.dry_run:
        return 0
    return execute.run_command(plan, out, gate=gate(args.force), hold=True)


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    add_overrides(p)
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000")
    p.add_argument("--out", type=Path, metavar="DIR", help="where results go (default: runs/bench/<timestamp>/)")
    p.add_argument("--label", help="name of this result in tables (default: the draft's name or baseline)")
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="counted runs against the server (default 1); the record holds each and their medians")
    p.add_argument("--warmup", type=int, default=0, metavar="N",
                   help="warm-up requests in an unrecorded run before the counted ones (default 0)")


def _bench_validate(args: argparse.Namespace) -> None:
    from llama4spec.config.layout import url_problem
    from llama4spec.errors import UserError
    from llama4spec.runbook.fields import label_problem

    problems = [url_problem("--url", args.url), None if args.label is None else label_problem("", args.label, "--label")]
    if any(problems):
        raise UserError(*problems)
    if args.out is not None:
        check_output_dir(args.out, "--out")
    from llama4spec.runbook.schema import check_measurement

    check_measurement(args.repeats, args.warmup)


def _bench(args: argparse.Namespace) -> int:
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import one_step_plan
    from llama4spec.runbook.rundir import new_run_dir
    from llama4spec.runbook.steps import make as make_step

    overrides = list(args.overrides)
    label = args.label
    if label is None:
        from llama4spec.config.compose import compose_valid

        cfg = compose_valid(overrides).cfg
        label = cfg.draft.name if cfg.draft.method else "baseline"
    step = make_step("bench", "bench", url=args.url, label=label, repeats=args.repeats, warmup=args.warmup)
    out_dir = args.out or new_run_dir(RUNS_DIR, "bench")
    plan = one_step_plan(step, out_dir, overrides)
    note(f"benchmarking {args.url}; results in {out_dir}")
    return execute.run_command(plan, out)


COMMANDS = [
    Command("serve", "start vLLM's OpenAI-compatible server from the config (Ctrl-C stops it)", _serve_arguments,
            _serve, _serve_validate,
            examples=["llama4spec serve",
                      "llama4spec serve experiment=scout_eagle_reference --dry-run",
                      "llama4spec serve target=llama4_maverick parallel=two_nodes_tp8_pp2 cluster=two_nodes_ssh --dry-run"]),
    Command("bench", "run vLLM's serving benchmark against a running server", _bench_arguments, _bench,
            _bench_validate, examples=["llama4spec bench --url http://127.0.0.1:8000 bench.max_concurrency=16"]),
]
