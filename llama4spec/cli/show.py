"""``show``, ``validate`` and ``tiny-models``: configs and the tiny pair, no engine."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, add_overrides, compose, err, out, say
from llama4spec.cli.jsonout import add_json_flag, emit, finding, schema

# The first lines of `show --yaml`: a comment to YAML, and to Hydra the header that makes the file,
# saved as DIR/experiment/NAME.yaml, an experiment that sets every value.
YAML_HEADER = ("# @package _global_\n"
               "# llama4spec show --yaml: the resolved config (secrets as ***). Saved as DIR/experiment/NAME.yaml,\n"
               "# it loads back with: llama4spec show hydra.searchpath=[file://DIR] experiment=NAME\n")


def _show_arguments(p: argparse.ArgumentParser) -> None:
    add_overrides(p)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print choices, config, LLM(...) kwargs, serve argv and env "
                     "as one JSON document (schema llama4spec.show/1)")
    fmt.add_argument("--yaml", action="store_true", help="print the resolved config as YAML that loads back as an "
                     "experiment (save it as DIR/experiment/NAME.yaml; hydra.searchpath=[file://DIR] experiment=NAME)")


def show_document(composed) -> dict:
    """``show --json``: everything ``show`` prints, as data, redacted like the printed form."""
    import os

    from llama4spec.config.validate import validate
    from llama4spec.engine.args import engine_env, llm_kwargs, serve_argv, shell_line
    from llama4spec.engine.secrets import known_secrets, redact, redact_env
    from llama4spec.results.provenance import config_secrets, public_config

    kwargs, argv, env = llm_kwargs(composed.cfg), serve_argv(composed.cfg), engine_env(composed.cfg)
    secrets = (*config_secrets(composed.raw), *known_secrets({"env": env}, shell_line(argv), kwargs, environ=os.environ))
    return {
        "schema": schema("show"),
        "choices": redact(dict(composed.choices), secrets),
        "config": public_config(composed.raw, secrets),
        "llm_kwargs": redact(kwargs, secrets),
        "serve_argv": redact(list(argv), secrets),
        "serve_line": redact(shell_line(argv), secrets),
        "env": redact_env(env, secrets),
        "warnings": redact(validate(composed.cfg), secrets),
    }


def show_yaml(composed) -> str:
    """``show --yaml``: the public (redacted) resolved config as YAML, with the experiment header."""
    from omegaconf import OmegaConf

    from llama4spec.results.provenance import public_config

    return YAML_HEADER + OmegaConf.to_yaml(OmegaConf.create(public_config(composed.raw)))


def _show(args: argparse.Namespace) -> int:
    import sys

    from llama4spec.cli.render import config_tree, engine_args_panel
    from llama4spec.config.validate import validate
    from llama4spec.engine.args import engine_env, llm_kwargs, serve_argv, shell_line

    composed = compose(args.overrides, check=False)
    if args.json:
        emit(show_document(composed))
        return 0
    if args.yaml:
        sys.stdout.write(show_yaml(composed))
        for problem in validate(composed.cfg):
            err.print(f"warning: {problem} (see `llama4spec validate`)", markup=False, highlight=False, soft_wrap=True)
        return 0
    config_tree(out, composed.raw, composed.choices)
    engine_args_panel(out, llm_kwargs(composed.cfg), shell_line(serve_argv(composed.cfg)), engine_env(composed.cfg))
    for problem in validate(composed.cfg):
        say(f"warning: {problem} (see `llama4spec validate`)")
    return 0


def _validate_json(args: argparse.Namespace) -> int:
    """``validate --json``: {"valid": ..., "problems": [...], "doctor": {...}}; exit 2 when not valid."""
    import os

    from llama4spec.cli.render import problems as print_problems
    from llama4spec.engine.secrets import known_secrets, redact
    from llama4spec.errors import UserError
    from llama4spec.preflight import ERROR, examine, pairing

    doctor = {"ran": False, "skipped": None, "findings": []}
    try:
        composed = compose(args.overrides)
    except UserError as error:
        found_problems = list(error.problems)
        doctor["skipped"] = "the config has problems"
    else:
        found_problems = []
        try:
            found = examine(pairing(composed.cfg, network=False))
        except UserError as error:
            doctor["skipped"] = f"{'; '.join(error.problems)} (`llama4spec doctor` may fetch it)"
        else:
            doctor.update(ran=True, findings=[finding(f) for f in found])
            found_problems = [f"doctor: {f.line()}" for f in found if f.severity == ERROR]
    secrets = known_secrets(found_problems, environ=os.environ)
    emit(redact({"schema": schema("validate"), "valid": not found_problems, "problems": found_problems,
                 "doctor": doctor}, secrets))
    if found_problems:
        print_problems(err, found_problems)
        return 2
    return 0


def _validate(args: argparse.Namespace) -> int:
    """Both network-free layers: the config rules, then the doctor on local or bundled config.json."""
    from llama4spec.errors import UserError
    from llama4spec.preflight import ERROR, examine, pairing

    if args.json:
        return _validate_json(args)
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
    from llama4spec.tiny.paths import KINDS

    root = build_into(Path(args.dir), force=args.force) if args.dir else ensure_built()
    say(f"tiny Llama 4 pair in {root}: {', '.join(k + '/' for k in KINDS)}")
    return 0


def _validate_arguments(p: argparse.ArgumentParser) -> None:
    add_overrides(p)
    add_json_flag(p, "{\"valid\": ..., \"problems\": [...], \"doctor\": {...}} (schema llama4spec.validate/1)")


def _tiny_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", help="where to write them (default: the cache used by target=tiny)")
    p.add_argument("--force", action="store_true",
                   help="write into a directory that has other files (they are never deleted or changed)")


COMMANDS = [
    Command("show", "print the resolved config and the engine arguments it implies", _show_arguments, _show,
            examples=["llama4spec show experiment=scout_eagle_reference",
                      "llama4spec show lookahead=5 --json",
                      "llama4spec show target=llama4_scout --yaml > my_conf/experiment/mine.yaml",
                      "llama4spec show target=llama4_scout draft=none lookahead=5"]),
    Command("validate", "check a config and its model pairing without starting anything; every problem at once "
            "(exit 2 on any)", _validate_arguments, _validate,
            examples=["llama4spec validate target=llama4_scout parallel=tp8 lookahead=0"]),
    Command("tiny-models", "build the tiny Llama 4 target + EAGLE drafts (no network)", _tiny_arguments,
            _tiny_models, examples=["llama4spec tiny-models ./tiny"]),
]
