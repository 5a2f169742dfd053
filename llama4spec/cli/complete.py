"""Shell completion (argcomplete): commands, config groups and their options (``draft=tiny_eagle``),
config keys (``memory.max_num_seqs=``) from the schema dataclasses.

Install once per shell: ``eval "$(register-python-argcomplete llama4spec)"``. Nothing here is
imported unless the shell asks for completions (``_ARGCOMPLETE`` set), so it costs normal runs
nothing."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any, Iterable, Sequence

# config.conf_dirs.GROUPS, spelled out here: completing must not import Hydra (a test keeps them equal)
GROUPS = ("target", "draft", "parallel", "memory", "serve", "bench", "dataset", "hardware", "slo", "cluster",
          "experiment")
SEARCHPATH = "hydra.searchpath"


def config_keys() -> dict[str, str]:
    """Every settable key (``lookahead``, ``draft.model``, ...) and its annotation, from the schema."""
    from llama4spec.config.schema import Config

    keys: dict[str, str] = {}

    def walk(cls: Any, prefix: str) -> None:
        for f in dataclasses.fields(cls):
            factory = f.default_factory if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]
            sub = factory() if factory is not None else None
            if dataclasses.is_dataclass(sub):
                walk(type(sub), f"{prefix}{f.name}.")
            elif not isinstance(sub, (dict, list)):  # env, hosts, extra_args: written whole, not completed
                keys[f"{prefix}{f.name}"] = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    walk(Config, "")
    return keys


def _searchpath(typed: Iterable[str]) -> list[str]:
    return [o for o in typed if isinstance(o, str) and o.startswith(SEARCHPATH + "=")]


def override_completions(prefix: str, typed: Sequence[str] = ()) -> list[str]:
    """What ``prefix`` (one override being typed) may become. ``typed``: the overrides already on the
    line (a ``hydra.searchpath`` there adds its groups' options)."""
    if "=" not in prefix:
        words = [f"{g}=" for g in GROUPS] + [f"{k}=" for k in config_keys()] + [f"{SEARCHPATH}=[file://"]
        return sorted(w for w in dict.fromkeys(words) if w.startswith(prefix))
    key, value = prefix.split("=", 1)
    if key in GROUPS:
        from llama4spec.config.compose import group_options

        try:
            options = group_options(key, _searchpath(typed))
        except Exception:  # a half-typed searchpath: complete from the shipped options
            options = group_options(key)
        if key in ("cluster", "experiment"):
            options = [*options, "null"]
        return [f"{key}={o}" for o in options if o.startswith(value)]
    if config_keys().get(key) == "bool":
        return [f"{key}={v}" for v in ("true", "false") if v.startswith(value)]
    return []


def complete_overrides(prefix: str, parsed_args: argparse.Namespace | None = None, **_: Any) -> list[str]:
    """argcomplete's completer for the ``overrides`` positional of every command that takes them."""
    typed = getattr(parsed_args, "overrides", None) or []
    return override_completions(prefix, typed)


def attach(parser: argparse.ArgumentParser) -> None:
    """Give every ``overrides`` positional (in every subcommand) the override completer."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                attach(sub)
        elif action.dest == "overrides":
            action.completer = complete_overrides  # type: ignore[attr-defined]


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit, when there is one (``_ARGCOMPLETE`` set)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    attach(parser)
    argcomplete.autocomplete(parser)
