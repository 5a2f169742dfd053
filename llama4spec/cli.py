"""The ``llama4spec`` command: thin wiring of compose -> plan -> execute -> report.

Heavy imports (vllm, torch) happen only inside the commands that run an engine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

from rich.console import Console

from llama4spec import __version__
from llama4spec.errors import UserError

OVERRIDES_HELP = "Hydra overrides, e.g. target=llama4_scout draft=eagle_llama4_scout lookahead=5"

# Modules with a ``register(sub, add)`` function adding their subcommands.
FEATURE_COMMANDS: list[str] = ["llama4spec.serving", "llama4spec.preflight.cli"]

out = Console()
err = Console(stderr=True)


def _composed(overrides: Sequence[str], check: bool = True):
    from llama4spec.config.compose import compose_config, compose_valid

    return compose_valid(overrides) if check else compose_config(overrides)


def cmd_show(args: argparse.Namespace) -> int:
    from llama4spec.engine.args import engine_env, llm_kwargs, serve_argv, shell_line
    from llama4spec.report import config_tree, engine_args_panel

    composed = _composed(args.overrides, check=False)
    config_tree(out, composed.raw, composed.choices)
    engine_args_panel(out, llm_kwargs(composed.cfg), shell_line(serve_argv(composed.cfg)), engine_env(composed.cfg))
    from llama4spec.config.validate import validate

    for problem in validate(composed.cfg):
        out.print(f"[yellow]warning:[/yellow] {problem} (see `llama4spec validate`)", highlight=False)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    _composed(args.overrides)
    out.print("[green]config is valid[/green]")
    return 0


def cmd_tiny_models(args: argparse.Namespace) -> int:
    from llama4spec.tiny.build import build, ensure_built

    root = build(Path(args.dir)) if args.dir else ensure_built()
    out.print(f"tiny Llama 4 pair in [bold]{root}[/bold]: target/, draft/, draft_imperfect/")
    return 0


def cmd_offline(args: argparse.Namespace) -> int:
    from llama4spec.offline import run_offline

    return run_offline(_composed(args.overrides), json_path=args.json, console=out, force=args.force)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llama4spec",
        description="Run and measure EAGLE speculative decoding for Llama 4 on vLLM.",
    )
    parser.add_argument("--version", action="version", version=f"llama4spec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(func=func)
        return p

    p = add("show", cmd_show, "print the resolved config and the engine arguments it implies")
    p.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    p = add("validate", cmd_validate, "check a config and report every problem at once (exit 2 on any)")
    p.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    p = add("tiny-models", cmd_tiny_models, "build the tiny Llama 4 target + EAGLE drafts (no network)")
    p.add_argument("dir", nargs="?", help="where to write them (default: the cache used by target=tiny)")
    p = add("offline", cmd_offline, "run offline inference with vLLM's LLM and print acceptance statistics")
    p.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    p.add_argument("--json", type=Path, metavar="PATH", help="write a run record (config, versions, stats) here")
    p.add_argument("--force", action="store_true", help="start even when the pre-flight doctor finds errors")

    # Feature areas register their own subcommands (each module keeps vllm/torch imports lazy).
    for module in FEATURE_COMMANDS:
        import importlib

        importlib.import_module(module).register(sub, add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except UserError as error:
        from llama4spec.report import problems

        problems(err, error.problems)
        return 2
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/yellow]")
        return 130


if __name__ == "__main__":
    sys.exit(main())
