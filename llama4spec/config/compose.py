"""Compose the config with Hydra from the package's ``llama4spec.conf`` (the repository's top-level
``conf/``, carried in the wheel as package data) plus the user's own config directories named by
``hydra.searchpath``; turn Hydra's errors into one clear line."""

from __future__ import annotations

import dataclasses
import functools
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

from llama4spec.config import hydra_adapter as hydra
from llama4spec.config.schema import Config, register
from llama4spec.errors import UserError
from llama4spec.files import shown
from llama4spec.tiny.paths import tiny_path


# The config groups, in the order a composition lists its choices (conf/config.yaml's defaults list).
GROUPS = ("target", "draft", "parallel", "memory", "serve", "bench", "dataset", "hardware", "slo", "cluster",
          "experiment")


def _example(group: str) -> str:
    return {"target": "llama4_scout", "draft": "none", "parallel": "tp4", "memory": "default"}.get(group, "...")


class ConfigError(UserError):
    """A user mistake in an override or config file; the message names the problem and the fix."""


CONF_MODULE = "llama4spec.conf"
SEARCHPATH = "hydra.searchpath"
# Hydra's override parser takes time quadratic in a list's length (1,000 characters: under 0.1 s;
# 100,000: minutes), so an override is refused beyond this length before anything parses it.
MAX_OVERRIDE_CHARS = 1_000
MAX_OVERRIDES = 200
# After a failed composition, overrides are tried one by one to name every failing one; beyond this
# many, only the composition's own error is reported.
_SEARCH_LIMIT = 32
# Targets whose defaults for other groups live in <group>/for/<target>.yaml.
TARGET_DEFAULTS = ("draft", "memory", "bench", "dataset", "hardware")


def conf_dir() -> Path:
    """The shipped config directory (inside the installed package, or the checkout's ``conf/``)."""
    import importlib.resources

    return Path(str(importlib.resources.files(CONF_MODULE)))


def _register_resolvers() -> None:
    if not OmegaConf.has_resolver("tiny_dir"):
        OmegaConf.register_new_resolver("tiny_dir", lambda which: str(tiny_path(which)))
    if not OmegaConf.has_resolver("prompt_file"):  # a shipped prompt file: ${prompt_file:tiny_contrast}
        OmegaConf.register_new_resolver("prompt_file", lambda name: str(conf_dir() / "dataset" / "prompts" / f"{name}.jsonl"))


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


class Composed:
    """One composition: the typed object (each caller's own), the resolved DictConfig (for printing
    and run records; made when first read, see ``_Raw``), the option chosen in each group, the overrides."""

    def __init__(self, cfg: Config, raw: DictConfig | _Raw, choices: dict[str, str], overrides: list[str]):
        self.cfg = cfg
        self._raw = raw if isinstance(raw, _Raw) else _Raw(raw)
        self.choices = choices  # group -> chosen option
        self.overrides = overrides

    @property
    def raw(self) -> DictConfig:
        return self._raw.get()

    def containers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The resolved config as plain data, resolved and unresolved (what ``OmegaConf.to_container``
        gives with ``resolve=True`` and ``False``): fresh (one object twice when they are equal, as
        they are without interpolations), and without making ``raw`` when it is not made."""
        return self._raw.containers()


class _Raw:
    """A composition's resolved DictConfig: given, or made when first read from its group choices'
    resolved tree and its leaf values (checked by ``_Groups.leaf`` to give what Hydra's application
    of them gives). Shared by every composition of the same overrides; read-only once ``seal``ed."""

    def __init__(self, cfg: DictConfig | None = None, base: _Finished | None = None,
                 values: Sequence[tuple[str, Any, Any]] = ()):
        self._cfg, self._base, self._values, self._sealed = cfg, base, tuple(values), False

    def seal(self) -> None:
        self._sealed = True
        if self._cfg is not None:
            OmegaConf.set_readonly(self._cfg, True)

    def get(self) -> DictConfig:
        if self._cfg is None:
            cfg = pickle.loads(self._base.tree)
            for key, value, _ in self._values:  # as Hydra applies a value override
                OmegaConf.update(cfg, key, value, merge=True)
            self._cfg = cfg
            if self._sealed:
                OmegaConf.set_readonly(cfg, True)
        return self._cfg

    def containers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if self._base is None:
            return OmegaConf.to_container(self._cfg, resolve=True), OmegaConf.to_container(self._cfg, resolve=False)
        data = self._plain(self._base.resolved)
        return data, data if self._base.unresolved is None else self._plain(self._base.unresolved)

    def _plain(self, pickled: bytes) -> dict[str, Any]:
        data = pickle.loads(pickled)
        for key, _, stored in self._values:
            *path, last = key.split(".")
            node = data
            for part in path:
                node = node[part]
            node[last] = stored
        return data


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
        missing = [g for g in TARGET_DEFAULTS if g not in named and _target_default(g, target, overrides) is None]
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
def _parsed(override: str):
    """Hydra's parse of one override (its parser is slow: the same override recurs in every step)."""
    return hydra.parse_override(override)


@functools.lru_cache(maxsize=4096)
def _parse_problem(override: str) -> str | None:
    """Why Hydra cannot parse this one override (None when it can), as one line."""
    if len(override) > MAX_OVERRIDE_CHARS:
        return (f"override '{_short(override)}' is {len(override):,} characters long; an override is at most "
                f"{MAX_OVERRIDE_CHARS:,}")
    hint = "write overrides as key=value, e.g. lookahead=5 (quote a value with spaces: key='a b')"
    try:
        _parsed(override)
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
            _compose(list(overrides), list(overrides))
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
    raw: _Raw
    choices: dict[str, str]


_COMPOSED: dict[tuple[str, ...], _Made] = {}
_COMPOSED_KEPT = 4096


def compose_config(overrides: Sequence[str] = ()) -> Composed:
    """Compose ``conf/config.yaml`` with ``overrides``; raise ConfigError on a user mistake, naming
    every bad override at once (one composition when all is well)."""
    register()
    _register_resolvers()
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
        composed = _compose(usable, overrides)
    except _compose_errors() as err:
        problems.extend(_each_failure(usable, _friendly(err, overrides)))
    if problems or composed is None:
        raise ConfigError(*dict.fromkeys(_one_line(p) for p in problems))
    return composed


# Composing once per distinct choice of config groups: Hydra builds the defaults tree of the group
# choices (about 0.1 s here), and the ``key=value`` overrides are applied to a copy of it by
# Hydra's own function for that, as a full composition applies them after building the tree.
# Most overrides set one leaf to a plain value (a sweep's lookahead, a port): those are checked
# once per choice of groups by that same function, and applied to the choice's tree resolved and
# typed once, unless an interpolation could read them (see _Groups.finished).
_GROUP_TREES: dict[tuple[str, ...], _Groups] = {}
_TREES_KEPT = 64
_LEAF_KEY = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# The interpolations a value override cannot change: the tiny models' place, nothing else.
_FIXED_INTERPOLATION = re.compile(r"\$\{tiny_dir:[^${}\\'\"]*\}")


@dataclass(frozen=True)
class _Finished:
    """A choice of groups resolved (``_finish``) with no value override: the resolved tree, the typed
    object and the plain data (resolved, unresolved: None when the same), each pickled."""

    tree: bytes
    typed: bytes
    resolved: bytes
    unresolved: bytes | None


class _Groups:
    """One choice of config groups, composed by Hydra once: its tree (pickled: 10x faster than
    deepcopy; OmegaConf pickles its flags and node types) and the option chosen in each group."""

    def __init__(self, tree: DictConfig, choices: dict[str, str]):
        self.tree, self.choices = pickle.dumps(tree), choices
        self._finished: dict[str, _Finished | None] = {}  # by the tiny models' place (resolved into it)
        self._leaves: dict[str, tuple[str, Any, Any] | None] = {}  # override -> (key, value, value as stored)
        self._scratch: DictConfig | None = None
        self._fixed: bool | None = None

    def fresh(self) -> DictConfig:
        return pickle.loads(self.tree)

    def finished(self) -> _Finished | None:
        """The tree resolved and typed, for leaf values to be applied to; None when it does not
        resolve alone, or when an interpolation in it could read a value override (anything but
        ``${tiny_dir:...}``): then every composition of these groups resolves in full."""
        if self._fixed is None:
            strings: list[str] = []
            _strings(OmegaConf.to_container(self.fresh(), resolve=False), strings)
            self._fixed = not any("${" in _FIXED_INTERPOLATION.sub("", text) for text in strings)
        place = str(tiny_path("target"))
        if self._fixed and place not in self._finished:
            try:
                done = _finish(self.fresh(), dict(self.choices), [])
                raw = done.raw
                resolved = pickle.dumps(OmegaConf.to_container(raw, resolve=True))
                unresolved = pickle.dumps(OmegaConf.to_container(raw, resolve=False))
                self._finished[place] = _Finished(pickle.dumps(raw), pickle.dumps(done.cfg), resolved,
                                                  None if unresolved == resolved else unresolved)
            except Exception:  # noqa: BLE001 - not resolvable alone (a value override may complete it)
                self._finished[place] = None
        return self._finished.get(place) if self._fixed else None

    def leaf(self, override: str, parsed) -> tuple[str, Any, Any] | None:
        """(key, value, value as stored) when ``override`` sets an existing leaf of the tree to a plain
        value, checked by applying it as a full composition would (Hydra's function, OmegaConf's
        validation and conversion) to a scratch copy, then undone; None otherwise (a ``+``, ``~`` or
        list override, a new key, an interpolation, a value the leaf refuses...)."""
        if override not in self._leaves:
            if len(self._leaves) >= 4096:
                self._leaves.clear()
            self._leaves[override] = self._check(parsed)
        return self._leaves[override]

    def _check(self, parsed) -> tuple[str, Any, Any] | None:
        if not hydra.is_plain_change(parsed):
            return None
        key, value = parsed.key_or_group, parsed.value()
        if not _LEAF_KEY.fullmatch(key) or not _plain_value(value):
            return None
        if self._scratch is None:
            self._scratch = self.fresh()
        try:
            found = hydra.leaf(self._scratch, key)
            if found is None:
                return None
            parent, last, node = found
            before = hydra.node_value(node)
            hydra.apply_overrides([parsed], self._scratch)
            if not hydra.same_node(parent, last, node):
                self._scratch = None
                return None
            stored = hydra.node_value(node)
            hydra.set_node_value(node, before)
        except Exception:  # noqa: BLE001 - refused (the full composition reports it in Hydra's words)
            self._scratch = None
            return None
        return key, value, stored


def _strings(data: Any, out: list[str]) -> None:
    if isinstance(data, dict):
        for v in data.values():
            _strings(v, out)
    elif isinstance(data, list):
        for v in data:
            _strings(v, out)
    elif isinstance(data, str):
        out.append(data)


def _plain_value(value: Any) -> bool:
    """A value a leaf takes as it is: a number, a boolean, null, a string that is neither an
    interpolation nor ``???``."""
    if isinstance(value, str):
        return "${" not in value and value != "???"
    return value is None or isinstance(value, (bool, int, float))


def _set_typed(cfg: Any, key: str, value: Any) -> bool:
    """Set ``key`` (dotted) of a typed config (dataclasses, dicts) to ``value``; False if it is not there."""
    *path, last = key.split(".")
    node = cfg
    for part in [*path, last]:
        parent = node
        if dataclasses.is_dataclass(node) and not isinstance(node, type) and part in _field_names(type(node)):
            node = getattr(node, part)
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    if isinstance(parent, dict):
        parent[last] = value
    else:
        setattr(parent, last, value)
    return True


@functools.lru_cache(maxsize=None)
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _group_key(override: str) -> str:
    """The key or group an override names (``+draft@x=...`` -> ``draft``)."""
    return override.split("=", 1)[0].lstrip("+~").split("@", 1)[0]


def _split_groups(kept: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """(group choices and hydra.searchpath, value overrides), as Hydra tells them apart (a key that
    names a config group directory is a choice); None when that cannot be told here (a
    ``pkg://`` search path, a dict value): such a list is composed in full."""
    dirs = [conf_dir(), *_searchpath_dirs(kept)]
    groups, values = [], []
    for o in kept:
        key, value = _group_key(o), o.split("=", 1)[1] if "=" in o else ""
        if key == SEARCHPATH:
            if "pkg://" in value:
                return None
            groups.append(o)
        elif value.lstrip().startswith("{"):
            return None
        elif key and all(part.replace("-", "_").isidentifier() for part in key.split("/")) \
                and any((d / key).is_dir() for d in dirs):
            groups.append(o)
        else:
            values.append(o)
    return groups, values


def _compose(kept: list[str], overrides: list[str]) -> Composed:
    """``kept`` composed as one Hydra composition would (Hydra's and OmegaConf's errors
    propagate), the group choices' tree taken from the memo when composed before."""
    split = _split_groups(kept)
    if split is None:
        return _finish(*_tree_and_choices(kept), overrides)
    groups, values = split
    parsed = [_parsed(o) for o in values]
    if any(o.is_sweep_override() for o in parsed):  # Hydra refuses it while composing: its own words
        return _finish(*_tree_and_choices(kept), overrides)
    key = tuple(groups)
    if key not in _GROUP_TREES:
        if len(_GROUP_TREES) >= _TREES_KEPT:
            _GROUP_TREES.clear()
        _GROUP_TREES[key] = _Groups(*_tree_and_choices(groups))
    chosen = _GROUP_TREES[key]
    composed = _applied(chosen, values, parsed, overrides)
    if composed is not None:
        return composed
    cfg = chosen.fresh()
    if parsed:
        hydra.apply_overrides(parsed, cfg)
    return _finish(cfg, dict(chosen.choices), overrides)


def _applied(chosen: _Groups, values: list[str], parsed: list, overrides: list[str]) -> Composed | None:
    """The composition as leaf values on the groups' resolved, typed tree; None when it must be made in full."""
    finished = chosen.finished()
    if finished is None:
        return None
    leaves = [chosen.leaf(o, p) for o, p in zip(values, parsed)]
    if None in leaves:
        return None
    cfg = pickle.loads(finished.typed)
    for key, _, stored in leaves:
        if not _set_typed(cfg, key, stored):
            return None
    return Composed(cfg=cfg, raw=_Raw(base=finished, values=leaves), choices=dict(chosen.choices), overrides=overrides)


def _tree_and_choices(kept: list[str]) -> tuple[DictConfig, dict[str, str]]:
    """Hydra's composition of ``kept`` (not yet resolved, in struct mode as Hydra leaves it) without
    its ``hydra`` node, and the option chosen in each group."""
    cfg, picked = hydra.compose_tree(CONF_MODULE, kept)
    # Hydra lists choices last-first; keep the defaults list's order (target, draft, ...).
    # A group left to the target's default shows the option it resolved to.
    choices = {k: v for k, v in reversed(list(picked)) if not k.startswith("hydra") and v is not None}
    for group, option in choices.items():
        if option.startswith("for/"):
            choices[group] = _target_default(group, option.removeprefix("for/"), kept) or option
    order = {g: i for i, g in enumerate(GROUPS)}
    choices = dict(sorted(choices.items(), key=lambda kv: order.get(kv[0], len(order))))
    return cfg, choices


def _finish(cfg: DictConfig, choices: dict[str, str], overrides: list[str]) -> Composed:
    """Interpolations resolved, the typed object."""
    OmegaConf.set_struct(cfg, False)
    OmegaConf.resolve(cfg)
    return Composed(cfg=OmegaConf.to_object(cfg), raw=cfg, choices=choices, overrides=overrides)
