"""Compose the config with Hydra from the package's ``llama4spec.conf`` (the repository's top-level
``conf/``, carried in the wheel as package data) plus the user's own config directories named by
``hydra.searchpath``; turn Hydra's errors into one clear line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from llama4spec.config.schema import Config, register
from llama4spec.errors import UserError
from llama4spec.tiny.paths import tiny_path


_GROUPS = ("target", "draft", "parallel", "memory", "serve", "bench", "dataset", "hardware", "cluster", "experiment")


def _example(group: str) -> str:
    return {"target": "llama4_scout", "draft": "none", "parallel": "tp4", "memory": "default"}.get(group, "...")


class ConfigError(UserError):
    """A user mistake in an override or config file; the message names the problem and the fix."""


CONF_MODULE = "llama4spec.conf"
SEARCHPATH = "hydra.searchpath"
# Targets whose defaults for other groups live in <group>/for/<target>.yaml.
TARGET_DEFAULTS = ("draft", "memory", "bench", "dataset", "hardware")


def conf_dir() -> Path:
    """The shipped config directory (inside the installed package, or the checkout's ``conf/``)."""
    import importlib.resources

    return Path(str(importlib.resources.files(CONF_MODULE)))


def _register_resolvers() -> None:
    if not OmegaConf.has_resolver("tiny_dir"):
        OmegaConf.register_new_resolver("tiny_dir", lambda which: str(tiny_path(which)))


def _searchpath_dirs(overrides: Sequence[str]) -> list[Path]:
    dirs: list[Path] = []
    for o in overrides:
        if o.startswith(SEARCHPATH + "="):
            for item in o.split("=", 1)[1].strip("[]").split(","):
                item = item.strip().strip("'\"")
                if item.startswith("file://"):
                    dirs.append(Path(item.removeprefix("file://")))
    return dirs


EXAMPLE_DEFAULTS = {"draft": "none", "memory": "default", "bench": "mtbench", "dataset": "mtbench",
                    "hardware": "h100_80gb"}


def _target_default(group: str, target: str, overrides: Sequence[str] = ()) -> str | None:
    """The option ``<group>/for/<target>.yaml`` stands for, or None when there is no such file."""
    for d in (conf_dir(), *_searchpath_dirs(overrides)):
        path = d / group / "for" / f"{target}.yaml"
        if path.is_file():
            m = re.search(rf"^\s*-\s*/{group}/([\w-]+)@_here_", path.read_text(errors="replace"), re.M)
            return m.group(1) if m else target
    return None


def group_options(group: str, overrides: Sequence[str] = ()) -> list[str]:
    """The options of a config group: shipped ones and those in ``hydra.searchpath`` directories."""
    found = {p.stem for d in (conf_dir(), *_searchpath_dirs(overrides)) for p in (d / group).glob("*.yaml")}
    return sorted(found)


def split_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """(overrides, problems): ``hydra.searchpath`` is the one ``hydra.*`` override accepted; others
    would be silently ignored by this tool, so they are refused with what to use instead."""
    kept, problems = [], []
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+~")
        if key == SEARCHPATH:
            value = o.split("=", 1)[1] if "=" in o else ""
            items = [i.strip().strip("'\"") for i in value.strip("[]").split(",") if i.strip()]
            bad = [i for i in items if not i.startswith(("file://", "pkg://"))]
            if bad or not items:
                problems.append(f"{o}: hydra.searchpath takes a list of config directories, "
                                f"e.g. hydra.searchpath=[file:///path/to/my_conf]")
            else:
                kept.append(o)
        elif key == "hydra" or key.startswith("hydra."):
            problems.append(f"'{o}': llama4spec does not use Hydra's {key} setting; the only hydra override it "
                            f"takes is hydra.searchpath=[file://DIR] (your own config groups); run directories "
                            f"are set with --runs-dir or --json")
        else:
            kept.append(o)
    return kept, problems


@dataclass
class Composed:
    cfg: Config  # typed object
    raw: DictConfig  # resolved DictConfig (for printing and run records)
    choices: dict[str, str]  # group -> chosen option
    overrides: list[str]


def _friendly(err: Exception, overrides: Sequence[str]) -> str:
    msg = str(err).strip()
    if msg.startswith("Error merging override") and err.__cause__ is not None:
        override = msg.removeprefix("Error merging override").strip()
        cause = str(err.__cause__).strip().splitlines()[0]
        return f"cannot apply override '{override}': {cause}"
    m = re.search(r"Could not find '([\w/]+)/for/([^']+)'", msg)
    if m:
        target = m.group(2)
        named = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
        missing = [g for g in TARGET_DEFAULTS if g not in named and _target_default(g, target, overrides) is None]
        example = " ".join(f"{g}={EXAMPLE_DEFAULTS[g]}" for g in missing)
        files = ", ".join(f"{g}/for/{target}.yaml" for g in missing)
        return (f"target={target} brings no defaults for {', '.join(missing)}: name them on the command line "
                f"(e.g. {example}) or add {files} to your config directory")
    m = re.search(r"Could not find '([\w/]+)/([^']+)'", msg) or re.search(
        r"In '[^']*': Could not find '([\w/]+)/([^']+)'", msg
    )
    if m:
        group, option = m.group(1).split("/")[-1], m.group(2)
        valid = ", ".join(group_options(group, overrides)) or "(none)"
        return f"unknown {group} option '{option}'; valid options: {valid}"
    m = re.search(r"Key '([^']+)' (?:is not in struct|not in '?(\w+)'?)", msg)
    if m or "not in struct" in msg:
        key = m.group(1) if m else "?"
        full = re.search(r"full_key: ([\w.]+)", msg)
        name = full.group(1) if full else key
        return f"unknown config key '{name}'; check the spelling (see `llama4spec show`), or add it with '+{name}=...'"
    m = re.search(r"Could not override '([^']+)'", msg)
    if m and "To append to your config" in msg:
        key = m.group(1)
        return f"unknown config key '{key}'; check the spelling (see `llama4spec show`), or add a new key with '+{key}=...'"
    if m:
        detail = msg.splitlines()[-1] if len(msg.splitlines()) > 1 else msg
        return f"cannot set '{m.group(1)}': {detail.strip()}"
    m = re.search(r"Value '([^']*)' (?:could not be converted to|is not a valid) (\w+)", msg)
    if m:
        full = re.search(r"full_key: ([\w.]+)", msg)
        where = f"'{full.group(1)}'" if full else "a key"
        return f"{where} expects {m.group(2)}, got '{m.group(1)}'"
    if "mismatched input" in msg or "no viable alternative" in msg or "Error parsing override" in msg:
        return f"cannot parse override: {msg.splitlines()[0]}; write overrides as key=value, e.g. lookahead=5"
    if "Missing mandatory value" in msg:
        full = re.search(r"full_key: ([\w.]+)", msg)
        key = full.group(1) if full else "a required key"
        return f"'{key}' must be set, e.g. {key}=..."
    return msg.splitlines()[0]


def compose_valid(overrides: Sequence[str] = ()) -> Composed:
    """Compose, then validate: every problem at once as one UserError."""
    from llama4spec.config.validate import validate

    composed = compose_config(overrides)
    problems = validate(composed.cfg)
    if problems:
        raise UserError(*problems)
    return composed


def compose_config(overrides: Sequence[str] = ()) -> Composed:
    """Compose ``conf/config.yaml`` with ``overrides``; raise ConfigError on a user mistake."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    register()
    _register_resolvers()
    overrides = list(overrides)
    kept, problems = split_overrides(overrides)
    for o in kept:
        group, _, option = o.partition("=")
        if group.lstrip("+~") in _GROUPS and ("/" in option or ".." in option or option.startswith("~")):
            problems.append(f"'{o}': a {group} option is a name such as {group}={_example(group)}, not a path; "
                            f"your own options go in a directory named by hydra.searchpath=[file://DIR]")
    if problems:
        raise ConfigError(*problems)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
            cfg = compose(config_name="config", overrides=kept, return_hydra_config=True)
            picked = OmegaConf.to_container(cfg.hydra.runtime.choices).items()
            # Hydra lists choices last-first; keep the defaults list's order (target, draft, ...).
            # A group left to the target's default shows the option it resolved to.
            choices = {k: v for k, v in reversed(list(picked)) if not k.startswith("hydra") and v is not None}
            for group, option in choices.items():
                if option.startswith("for/"):
                    choices[group] = _target_default(group, option.removeprefix("for/"), kept) or option
            order = {g: i for i, g in enumerate(_GROUPS)}
            choices = dict(sorted(choices.items(), key=lambda kv: order.get(kv[0], len(order))))
            with_hydra = cfg
            OmegaConf.set_struct(with_hydra, False)
            del with_hydra["hydra"]
            OmegaConf.resolve(with_hydra)
            typed = OmegaConf.to_object(with_hydra)
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        raise ConfigError(_friendly(err, overrides)) from None
    finally:
        GlobalHydra.instance().clear()
    return Composed(cfg=typed, raw=with_hydra, choices=choices, overrides=overrides)
