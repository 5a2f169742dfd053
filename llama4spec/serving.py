"""The serving commands: ``serve``, ``bench``, ``run`` (runbooks) and ``compare``.

Registered by ``llama4spec.cli`` through ``register(sub, add)``; vLLM is imported only by the
processes these commands start.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console

from llama4spec.config.compose import Composed
from llama4spec.errors import UserError

out = Console()
RUNS_DIR = Path("runs")


def preflight_gate(composed: Composed, purpose: str, force: bool = False) -> None:
    """The doctor's gate, called before ``serve`` or a runbook's serve/offline steps start anything.

    Prints the doctor's findings; raises UserError on an error unless ``force``.
    """
    from llama4spec.preflight import gate

    with out.capture() as captured:
        gate(composed.cfg, out, force=force)
    findings = captured.get()
    if findings.strip():
        if purpose != "serve":
            out.print(f"doctor, {purpose}:", style="dim", highlight=False)
        out.file.write(findings)


def _composed(overrides: list[str]) -> Composed:
    from llama4spec.config.compose import compose_valid

    return compose_valid(overrides)


def _print_tail(lines: list[str]) -> None:
    for line in lines:
        out.print(f"  | {line}", markup=False, highlight=False, soft_wrap=True)


def cmd_serve(args: argparse.Namespace) -> int:
    from llama4spec.engine.args import engine_env, serve_argv, shell_line
    from llama4spec.server import (
        Server, ServerError, api_key_env, check_port_free, launch_argv, log_tail, sigterm_unwinds,
    )
    from llama4spec.tiny.build import ensure_for

    composed = _composed(args.overrides)
    cfg = composed.cfg
    from llama4spec.multinode.serve import is_multinode, serve_multinode

    if is_multinode(cfg):  # the leader here, headless followers through the cluster's launcher
        return serve_multinode(composed, args.dry_run, args.log, out,
                               gate=lambda c, purpose: preflight_gate(c, purpose, args.force))
    argv = launch_argv(cfg)
    out.print(shell_line(serve_argv(cfg)), markup=False, highlight=False, soft_wrap=True)
    env = engine_env(cfg)
    if argv != serve_argv(cfg):
        out.print(f"runs as: {shell_line(argv)}", markup=False, highlight=False, soft_wrap=True, style="dim")
    if env:
        from llama4spec.runbook.record import redact_env

        out.print("env: " + " ".join(f"{k}={v}" for k, v in redact_env(env).items()), markup=False, highlight=False)
    if args.dry_run:
        return 0
    preflight_gate(composed, "serve", args.force)
    check_port_free(cfg.serve.host, cfg.serve.port)
    ensure_for(cfg)
    env.update(api_key_env(cfg))
    log = args.log or RUNS_DIR / "serve" / f"{time.strftime('%Y%m%d-%H%M%S')}.log"
    server = Server(argv, host=cfg.serve.host, port=cfg.serve.port, log_path=log, env=env,
                    health_timeout_s=cfg.serve.health_timeout_s)
    out.print(f"starting; log: [bold]{log}[/bold]")
    with sigterm_unwinds():
        try:
            server.start()
        except ServerError as err:
            _print_tail(err.log_tail)
            raise
        try:
            out.print(f"[green]ready[/green] at {server.url} after {server.ready_after_s:.0f} s; Ctrl-C stops it")
            while server.alive():
                time.sleep(1)
            out.print(f"[red]server exited with code {server.proc.returncode}[/red]; log: {log}")
            _print_tail(log_tail(Path(log)))
            return 1
        finally:
            server.stop()


def cmd_bench(args: argparse.Namespace) -> int:
    from llama4spec import compare
    from llama4spec.bench import run_bench
    from llama4spec.server import is_healthy, log_tail, sigterm_unwinds

    composed = _composed(args.overrides)
    url = args.url.rstrip("/")
    out_dir = args.out or RUNS_DIR / "bench" / time.strftime("%Y%m%d-%H%M%S")
    label = args.label or (composed.cfg.draft.name if composed.cfg.draft.method else "baseline")
    if not is_healthy(url):
        raise UserError(f"no server answers at {url}/health; start one with `llama4spec serve` or fix --url")
    out.print(f"benchmarking {url}; results in [bold]{out_dir}[/bold]")
    with sigterm_unwinds():
        outcome = run_bench(composed.cfg, url, Path(out_dir), "bench", label=label)
    if not outcome.ok:
        _print_tail(log_tail(outcome.log_path, 15))
        out.print(f"[bold red]error:[/bold red] {outcome.failure}", highlight=False)
        return 1
    compare.render_single(out, compare.from_json(outcome.record, label))
    out.print(f"record: [bold]{outcome.record_path}[/bold]  vLLM result: {outcome.result_path}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import plan_file
    from llama4spec.runbook.record import new_run_dir
    from llama4spec.runbook.render import plan_text

    if args.resume is not None:  # the same run directory: measure only what is missing
        from llama4spec.sweep.step import resume_dir

        plan = plan_file(args.runbook, lambda name: resume_dir(args.resume, name), args.overrides)
    else:
        plan = plan_file(args.runbook, lambda name: new_run_dir(args.runs_dir, name), args.overrides)
    if args.dry_run:
        plan_text(out, plan)
        return 0
    return execute.run(plan, out, gate=lambda composed, step: preflight_gate(composed, f"step '{step}'", args.force),
                       resume=args.resume is not None)


def cmd_compare(args: argparse.Namespace) -> int:
    from llama4spec import compare

    base, cand = compare.load(args.baseline), compare.load(args.candidate)
    if args.markdown:
        out.print(compare.markdown(base, cand), markup=False, highlight=False, soft_wrap=True)
    else:
        compare.render(out, base, cand)
    return 0


def register(sub, add) -> None:
    from llama4spec.cli import OVERRIDES_HELP

    p = add("serve", cmd_serve, "start vLLM's OpenAI-compatible server from the config (Ctrl-C stops it)")
    p.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    p.add_argument("--dry-run", action="store_true", help="print the command and start nothing")
    p.add_argument("--force", action="store_true", help="start even when the doctor reports an error")
    p.add_argument("--log", type=Path, metavar="PATH", help="server log file (default: runs/serve/<timestamp>.log)")

    p = add("bench", cmd_bench, "run vLLM's serving benchmark against a running server")
    p.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000")
    p.add_argument("--out", type=Path, metavar="DIR", help="where results go (default: runs/bench/<timestamp>/)")
    p.add_argument("--label", help="name of this result in tables (default: the draft's name or baseline)")

    p = add("run", cmd_run, "execute a runbook YAML (servers, benchmarks, comparison) and record it")
    p.add_argument("runbook", type=Path, help="a runbook file, e.g. runbooks/tiny_cpu_eagle_vs_baseline.yaml")
    p.add_argument("overrides", nargs="*", help="Hydra overrides applied to every step, after the runbook's own")
    p.add_argument("--dry-run", action="store_true", help="print the full plan (argv, env, artifacts) and start nothing")
    p.add_argument("--force", action="store_true", help="start even when the doctor reports an error")
    p.add_argument("--runs-dir", type=Path, default=RUNS_DIR, metavar="DIR", help="where run records go (default: runs/)")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="continue the run in DIR (runs/<runbook>/<timestamp>): skip benchmarks already measured there")

    p = add("compare", cmd_compare, "EAGLE vs baseline table from two saved benchmark JSONs")
    p.add_argument("baseline", type=Path, help="the baseline result (llama4spec record or vllm bench serve JSON)")
    p.add_argument("candidate", type=Path, help="the speculative result, compared against the baseline")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table instead")
