"""Compose the config from ``conf/`` with Hydra and turn Hydra's errors into one clear line."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from llama4spec.config.schema import Config, register
from llama4spec.errors import UserError
from llama4spec.tiny.paths import tiny_path


class ConfigError(UserError):
    """A user mistake in an override or config file; the message names the problem and the fix."""


def conf_dir() -> Path:
    env = os.environ.get("LLAMA4SPEC_CONF")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2] / "conf"


def _register_resolvers() -> None:
    if not OmegaConf.has_resolver("tiny_dir"):
        OmegaConf.register_new_resolver("tiny_dir", lambda which: str(tiny_path(which)))


def group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


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
    m = re.search(r"Could not find '([\w/]+)/([^']+)'", msg) or re.search(
        r"In '[^']*': Could not find '([\w/]+)/([^']+)'", msg
    )
    if m:
        group, option = m.group(1).split("/")[-1], m.group(2)
        valid = ", ".join(group_options(group)) or "(none)"
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
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
            picked = OmegaConf.to_container(cfg.hydra.runtime.choices).items()
            # Hydra lists choices last-first; keep the defaults list's order (target, draft, ...).
            choices = {k: v for k, v in reversed(list(picked)) if not k.startswith("hydra") and v is not None}
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
