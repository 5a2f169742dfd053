"""``show``, ``validate`` and ``tiny-models``: configs and the tiny pair, no engine."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, add_overrides, compose, out, say


def _show(args: argparse.Namespace) -> int:
    from llama4spec.cli.render import config_tree, engine_args_panel
    from llama4spec.config.validate import validate
    from llama4spec.engine.args import engine_env, llm_kwargs, serve_argv, shell_line

    composed = compose(args.overrides, check=False)
    config_tree(out, composed.raw, composed.choices)
    engine_args_panel(out, llm_kwargs(composed.cfg), shell_line(serve_argv(composed.cfg)), engine_env(composed.cfg))
    for problem in validate(composed.cfg):
        say(f"warning: {problem} (see `llama4spec validate`)")
    return 0


def _validate(args: argparse.Namespace) -> int:
    """Both network-free layers: the config rules, then the doctor on local or bundled config.json."""
    from llama4spec.errors import UserError
    from llama4spec.preflight import ERROR, examine, pairing

    composed = compose(args.overrides)
    try:
        found = examine(pairing(composed.cfg, network=False))
    except UserError as error:
        say(f"config is valid; doctor skipped: {'; '.join(error.problems)} (`llama4spec doctor` may fetch it)")
        return 0
    errors = [f"doctor: {f.line()}" for f in found if f.severity == ERROR]
    if errors:
        raise UserError(*errors)
    out.print("[green]config is valid[/green]")
    return 0


def _tiny_models(args: argparse.Namespace) -> int:
    from llama4spec.tiny.build import build_into, ensure_built

    root = build_into(Path(args.dir), force=args.force) if args.dir else ensure_built()
    say(f"tiny Llama 4 pair in {root}: target/, draft/, draft_imperfect/")
    return 0


def _tiny_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", help="where to write them (default: the cache used by target=tiny)")
    p.add_argument("--force", action="store_true",
                   help="write into a directory that has other files (they are never deleted or changed)")


COMMANDS = [
    Command("show", "print the resolved config and the engine arguments it implies", add_overrides, _show,
            examples=["llama4spec show experiment=scout_eagle_reference",
                      "llama4spec show target=llama4_scout draft=none lookahead=5"]),
    Command("validate", "check a config and its model pairing without starting anything; every problem at once "
            "(exit 2 on any)", add_overrides, _validate,
            examples=["llama4spec validate target=llama4_scout parallel=tp8 lookahead=0"]),
    Command("tiny-models", "build the tiny Llama 4 target + EAGLE drafts (no network)", _tiny_arguments,
            _tiny_models, examples=["llama4spec tiny-models ./tiny"]),
]
