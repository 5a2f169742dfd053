"""Compose the config with Hydra from the package's ``llama4spec.conf`` plus the user's own config
directories named by ``hydra.searchpath`` (``conf_dirs``), each distinct composition made once
(``group_trees``); turn Hydra's errors into one clear line, naming every bad override at once."""

from __future__ import annotations

import functools
import pickle
import re
from dataclasses import dataclass
from typing import Sequence

from llama4spec.config import group_trees
from llama4spec.config import hydra_adapter as hydra
from llama4spec.config.composed import Composed, Raw
from llama4spec.config.conf_dirs import (GROUPS, SEARCHPATH, TARGET_DEFAULTS, conf_dir, register_resolvers,
                                         searchpath_dirs, target_default)
from llama4spec.config.schema import register
from llama4spec.errors import UserError
from llama4spec.files import shown
from llama4spec.tiny.paths import tiny_path


def _example(group: str) -> str:
    return {"target": "llama4_scout", "draft": "none", "parallel": "tp4", "memory": "default"}.get(group, "...")


class ConfigError(UserError):
    """A user mistake in an override or config file; the message names the problem and the fix."""


# Hydra's override parser takes time quadratic in a list's length (1,000 characters: under 0.1 s;
# 100,000: minutes), so an override is refused beyond this length before anything parses it.
MAX_OVERRIDE_CHARS = 1_000
MAX_OVERRIDES = 200
# After a failed composition, overrides are tried one by one to name every failing one; beyond this
# many, only the composition's own error is reported.
_SEARCH_LIMIT = 32
EXAMPLE_DEFAULTS = {"draft": "none", "memory": "default", "bench": "mtbench", "dataset": "mtbench",
                    "hardware": "h100_80gb"}


def group_options(group: str, overrides: Sequence[str] = ()) -> list[str]:
    """The options of a config group: shipped ones and those in ``hydra.searchpath`` directories."""
    found = {p.stem for d in (conf_dir(), *searchpath_dirs(overrides)) for p in (d / group).glob("*.yaml")}
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


def _friendly(err: Exception, overrides: Sequence[str]) -> str:
    msg = str(err).strip()
    keyless = next((o for o in overrides if "=" in o and not o.split("=", 1)[0].lstrip("+~").strip()), None)
    if keyless is not None:  # Hydra: "Could not override ''", "An item is already at ''"
        return f"the override {shown(keyless)} has no key before '='; write overrides as key=value, e.g. lookahead=5"
    if msg.startswith("Error merging override") and err.__cause__ is not None:
        override = msg.removeprefix("Error merging override").strip()
        cause = str(err.__cause__).strip().splitlines()[0]
        return f"cannot apply override '{override}': {cause}"
    m = re.search(r"Could not find '([\w/]+)/for/([^']+)'", msg)
    if m:
        target = m.group(2)
        named = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
        missing = [g for g in TARGET_DEFAULTS if g not in named and target_default(g, target, overrides) is None]
        example = " ".join(f"{g}={EXAMPLE_DEFAULTS[g]}" for g in missing)
        files = ", ".join(f"{g}/for/{target}.yaml" for g in missing)
        return (f"target={target} brings no defaults for {', '.join(missing)}: name them on the command line "
                f"(e.g. {example}) or add {files} to your config directory")
    m = re.search(r"Could not find '([\w/]+)/([^']*)'", msg) or re.search(
        r"In '[^']*': Could not find '([\w/]+)/([^']*)'", msg
    )
    if m:
        group, option = m.group(1).split("/")[-1], m.group(2)
        valid = ", ".join(group_options(group, overrides)) or "(none)"
        if not option:
            return f"'{group}=' names no {group} option; give one of: {valid}"
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


def _one_line(text: str) -> str:
    """A message on one line: control characters (a newline in an override, ...) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _short(override: str, limit: int = 60) -> str:
    return override if len(override) <= limit else override[:limit] + "…"


@functools.lru_cache(maxsize=4096)
def _parse_problem(override: str) -> str | None:
    """Why Hydra cannot parse this one override (None when it can), as one line."""
    if len(override) > MAX_OVERRIDE_CHARS:
        return (f"override '{_short(override)}' is {len(override):,} characters long; an override is at most "
                f"{MAX_OVERRIDE_CHARS:,}")
    hint = "write overrides as key=value, e.g. lookahead=5 (quote a value with spaces: key='a b')"
    try:
        group_trees.parsed_override(override)
    except RecursionError:
        return f"cannot parse override '{_short(override)}': nested too deeply; {hint}"
    except Exception as err:  # noqa: BLE001 - Hydra's parser raises several kinds; each is a parse failure
        lines = [line for line in str(err).strip().splitlines() if line.strip()]
        detail = lines[0] if lines else type(err).__name__
        prefix = "LexerNoViableAltException: "
        if detail.startswith(prefix):
            caret = next((line for line in lines if line.strip() == "^"), "")
            col = caret.find("^") - len(prefix)
            detail = (f"unexpected character {override[col]!r} at position {col + 1}"
                      if 0 <= col < len(override) else "unexpected character")
        return f"cannot parse override '{_short(override)}': {detail}; {hint}"
    return None


def _path_problem(override: str) -> str | None:
    group, _, option = override.partition("=")
    if group.lstrip("+~") in GROUPS and ("/" in option or ".." in option or option.startswith("~")):
        return (f"'{override}': a {group} option is a name such as {group}={_example(group)}, not a path; "
                f"your own options go in a directory named by hydra.searchpath=[file://DIR]")
    return None


def _compose_errors() -> tuple[type[BaseException], ...]:
    return hydra.compose_errors()


_ATTEMPTS: dict[tuple[str, ...], str | None] = {}


def _attempt(overrides: tuple[str, ...]) -> str | None:
    """The one-line error of composing exactly these overrides (None if they compose); remembered,
    since a runbook composes the same shared overrides for many steps."""
    if overrides not in _ATTEMPTS:
        if len(_ATTEMPTS) >= 1024:
            _ATTEMPTS.clear()
        try:
            group_trees.compose(list(overrides), list(overrides))
            _ATTEMPTS[overrides] = None
        except _compose_errors() as err:
            _ATTEMPTS[overrides] = _friendly(err, overrides)
    return _ATTEMPTS[overrides]


def _each_failure(usable: list[str], first: str) -> list[str]:
    """After a failed composition: the error of every override that fails, in the given order. Each is
    composed on top of those that composed before it: hydra.searchpath first, then group choices
    (target and experiment last: a target's missing defaults depend on the groups named), then
    settings. ``first`` (the composition's own error) when no single override is to blame."""
    if len(usable) > _SEARCH_LIMIT or _attempt(()) is not None:
        return [first]

    def rank(o: str) -> int:
        key = o.split("=", 1)[0].lstrip("+~")
        if key == SEARCHPATH:
            return 0
        if "." in key:
            return 3
        return 2 if key in ("target", "experiment") else 1

    accepted: list[str] = []
    found: dict[int, str] = {}
    for i in sorted(range(len(usable)), key=lambda i: rank(usable[i])):
        message = _attempt((*accepted, usable[i]))
        if message is None:
            accepted.append(usable[i])
        else:
            found[i] = message
    return [found[i] for i in sorted(found)] or [first]


# Compositions already made in this process (a plan composes each server's overrides for the
# matrix, the serve step and its benchmarks): each caller gets its own copy of the typed config
# (kept pickled: copied in a fraction of a deepcopy's time); the resolved DictConfig is shared, read-only.
@dataclass(frozen=True)
class _Made:
    typed: bytes
    raw: Raw
    choices: dict[str, str]


_COMPOSED: dict[tuple[str, ...], _Made] = {}
_COMPOSED_KEPT = 4096


def compose_config(overrides: Sequence[str] = ()) -> Composed:
    """Compose ``conf/config.yaml`` with ``overrides``; raise ConfigError on a user mistake, naming
    every bad override at once (one composition when all is well)."""
    register()
    register_resolvers()
    overrides = list(overrides)
    key = (str(tiny_path("target")), *overrides)  # the tiny models' place is resolved into the config
    done = _COMPOSED.get(key)
    if done is not None:
        return Composed(cfg=pickle.loads(done.typed), raw=done.raw, choices=dict(done.choices), overrides=overrides)
    composed = _compose_checked(overrides)
    composed._raw.seal()
    if len(_COMPOSED) >= _COMPOSED_KEPT:
        _COMPOSED.clear()
    _COMPOSED[key] = _Made(pickle.dumps(composed.cfg), composed._raw, dict(composed.choices))
    return composed


def _compose_checked(overrides: list[str]) -> Composed:
    kept, problems = split_overrides(overrides)
    if len(kept) > MAX_OVERRIDES:
        raise ConfigError(f"{len(kept):,} overrides; at most {MAX_OVERRIDES} (use a config file of your own, "
                          f"hydra.searchpath=[file://DIR])")
    usable = []
    for o in kept:
        problem = _parse_problem(o) or _path_problem(o)
        if problem:
            problems.append(problem)
        else:
            usable.append(o)
    composed = None
    try:
        composed = group_trees.compose(usable, overrides)
    except _compose_errors() as err:
        problems.extend(_each_failure(usable, _friendly(err, overrides)))
    if problems or composed is None:
        raise ConfigError(*dict.fromkeys(_one_line(p) for p in problems))
    return composed
