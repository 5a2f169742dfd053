"""Where the config groups live: the shipped ``llama4spec.conf`` (the repository's top-level
``conf/``, carried in the wheel as package data) and the user's own directories named by
``hydra.searchpath``; the option a target's ``<group>/for/<target>.yaml`` stands for; the resolvers
the YAML files use."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from omegaconf import OmegaConf

from llama4spec.tiny.paths import tiny_path


# The config groups, in the order a composition lists its choices (conf/config.yaml's defaults list).
GROUPS = ("target", "draft", "parallel", "memory", "serve", "bench", "dataset", "hardware", "slo", "cluster",
          "experiment")
CONF_MODULE = "llama4spec.conf"
SEARCHPATH = "hydra.searchpath"
# Targets whose defaults for other groups live in <group>/for/<target>.yaml.
TARGET_DEFAULTS = ("draft", "memory", "bench", "dataset", "hardware")


def conf_dir() -> Path:
    """The shipped config directory (inside the installed package, or the checkout's ``conf/``)."""
    import importlib.resources

    return Path(str(importlib.resources.files(CONF_MODULE)))


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("tiny_dir"):
        OmegaConf.register_new_resolver("tiny_dir", lambda which: str(tiny_path(which)))
    if not OmegaConf.has_resolver("prompt_file"):  # a shipped prompt file: ${prompt_file:tiny_contrast}
        OmegaConf.register_new_resolver("prompt_file", lambda name: str(conf_dir() / "dataset" / "prompts" / f"{name}.jsonl"))


def searchpath_dirs(overrides: Sequence[str]) -> list[Path]:
    dirs: list[Path] = []
    for o in overrides:
        if o.startswith(SEARCHPATH + "="):
            for item in o.split("=", 1)[1].strip("[]").split(","):
                item = item.strip().strip("'\"")
                if item.startswith("file://"):
                    dirs.append(Path(item.removeprefix("file://")))
    return dirs


def target_default(group: str, target: str, overrides: Sequence[str] = ()) -> str | None:
    """The option ``<group>/for/<target>.yaml`` stands for, or None when there is no such file."""
    for d in (conf_dir(), *searchpath_dirs(overrides)):
        path = d / group / "for" / f"{target}.yaml"
        if path.is_file():
            m = re.search(rf"^\s*-\s*/{group}/([\w-]+)@_here_", path.read_text(errors="replace"), re.M)
            return m.group(1) if m else target
    return None
