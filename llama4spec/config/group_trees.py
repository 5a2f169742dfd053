"""Composing once per distinct choice of config groups: Hydra's tree of each choice kept, the
``key=value`` overrides that set one leaf to a plain value applied to it resolved and typed once,
anything else composed in full as Hydra would."""

from __future__ import annotations

import dataclasses
import functools
import pickle
import re
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

from llama4spec.config import hydra_adapter as hydra
from llama4spec.config.composed import Composed, Finished, Raw
from llama4spec.config.conf_dirs import CONF_MODULE, GROUPS, SEARCHPATH, conf_dir, searchpath_dirs, target_default
from llama4spec.tiny.paths import tiny_path


@functools.lru_cache(maxsize=4096)
def parsed_override(override: str):
    """Hydra's parse of one override (its parser is slow: the same override recurs in every step)."""
    return hydra.parse_override(override)


# Composing once per distinct choice of config groups: Hydra builds the defaults tree of the group
# choices (about 0.1 s here), and the ``key=value`` overrides are applied to a copy of it by
# Hydra's own function for that, as a full composition applies them after building the tree.
# Most overrides set one leaf to a plain value (a sweep's lookahead, a port): those are checked
# once per choice of groups by that same function, and applied to the choice's tree resolved and
# typed once, unless an interpolation could read them (see _Groups.finished).
GROUP_TREES: dict[tuple[str, ...], _Groups] = {}
_TREES_KEPT = 64
_LEAF_KEY = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# The interpolations a value override cannot change: the tiny models' place, nothing else.
_FIXED_INTERPOLATION = re.compile(r"\$\{tiny_dir:[^${}\\'\"]*\}")


class _Groups:
    """One choice of config groups, composed by Hydra once: its tree (pickled: 10x faster than
    deepcopy; OmegaConf pickles its flags and node types) and the option chosen in each group."""

    def __init__(self, tree: DictConfig, choices: dict[str, str]):
        self.tree, self.choices = pickle.dumps(tree), choices
        self._finished: dict[str, Finished | None] = {}  # by the tiny models' place (resolved into it)
        self._leaves: dict[str, tuple[str, Any, Any] | None] = {}  # override -> (key, value, value as stored)
        self._scratch: DictConfig | None = None
        self._fixed: bool | None = None

    def fresh(self) -> DictConfig:
        return pickle.loads(self.tree)

    def finished(self) -> Finished | None:
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
                done = finish(self.fresh(), dict(self.choices), [])
                raw = done.raw
                resolved = pickle.dumps(OmegaConf.to_container(raw, resolve=True))
                unresolved = pickle.dumps(OmegaConf.to_container(raw, resolve=False))
                self._finished[place] = Finished(pickle.dumps(raw), pickle.dumps(done.cfg), resolved,
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
    dirs = [conf_dir(), *searchpath_dirs(kept)]
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


def compose(kept: list[str], overrides: list[str]) -> Composed:
    """``kept`` composed as one Hydra composition would (Hydra's and OmegaConf's errors
    propagate), the group choices' tree taken from the memo when composed before."""
    split = _split_groups(kept)
    if split is None:
        return finish(*tree_and_choices(kept), overrides)
    groups, values = split
    parsed = [parsed_override(o) for o in values]
    if any(o.is_sweep_override() for o in parsed):  # Hydra refuses it while composing: its own words
        return finish(*tree_and_choices(kept), overrides)
    key = tuple(groups)
    if key not in GROUP_TREES:
        if len(GROUP_TREES) >= _TREES_KEPT:
            GROUP_TREES.clear()
        GROUP_TREES[key] = _Groups(*tree_and_choices(groups))
    chosen = GROUP_TREES[key]
    composed = _applied(chosen, values, parsed, overrides)
    if composed is not None:
        return composed
    cfg = chosen.fresh()
    if parsed:
        hydra.apply_overrides(parsed, cfg)
    return finish(cfg, dict(chosen.choices), overrides)


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
    return Composed(cfg=cfg, raw=Raw(base=finished, values=leaves), choices=dict(chosen.choices), overrides=overrides)


def tree_and_choices(kept: list[str]) -> tuple[DictConfig, dict[str, str]]:
    """Hydra's composition of ``kept`` (not yet resolved, in struct mode as Hydra leaves it) without
    its ``hydra`` node, and the option chosen in each group."""
    cfg, picked = hydra.compose_tree(CONF_MODULE, kept)
    # Hydra lists choices last-first; keep the defaults list's order (target, draft, ...).
    # A group left to the target's default shows the option it resolved to.
    choices = {k: v for k, v in reversed(list(picked)) if not k.startswith("hydra") and v is not None}
    for group, option in choices.items():
        if option.startswith("for/"):
            choices[group] = target_default(group, option.removeprefix("for/"), kept) or option
    order = {g: i for i, g in enumerate(GROUPS)}
    choices = dict(sorted(choices.items(), key=lambda kv: order.get(kv[0], len(order))))
    return cfg, choices


def finish(cfg: DictConfig, choices: dict[str, str], overrides: list[str]) -> Composed:
    """Interpolations resolved, the typed object."""
    OmegaConf.set_struct(cfg, False)
    OmegaConf.resolve(cfg)
    return Composed(cfg=OmegaConf.to_object(cfg), raw=cfg, choices=choices, overrides=overrides)
