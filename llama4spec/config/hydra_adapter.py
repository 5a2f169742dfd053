"""The one place that reaches into Hydra's internals (and OmegaConf's node API): the override
parser and its types, Hydra's application of value overrides to a composed tree, a composition
with its ``hydra`` node, and one leaf node of a tree read and set in place.

``config.compose`` memoises compositions on exactly these behaviours (a choice of groups composed
once, value overrides applied to a copy as a full composition would apply them); matrix expansion
reads sweep overrides through them. tests/unit/config/test_hydra_adapter.py pins each one, so
that a Hydra or OmegaConf upgrade that changes them fails there, with a message saying so.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf, ValueNode, open_dict

_PARSER = None


def parse_override(text: str) -> Any:
    """One override as Hydra's own parser reads it (its exceptions propagate); the parser is made once."""
    global _PARSER
    if _PARSER is None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        _PARSER = OverridesParser.create()
    return _PARSER.parse_overrides([text])[0]


def is_plain_change(parsed: Any) -> bool:
    """``key=value`` with one value (no ``+``/``~``, no sweep, no ``@package``)."""
    from hydra.core.override_parser.types import OverrideType, ValueType

    return parsed.type == OverrideType.CHANGE and parsed.value_type == ValueType.ELEMENT and parsed.package is None


def choices_of(value: Any) -> list[Any] | None:
    """The values of a ``choice(...)`` sweep (a list value as it is); None for anything else."""
    from hydra.core.override_parser.types import ChoiceSweep

    if isinstance(value, list):
        return value
    return value.list if isinstance(value, ChoiceSweep) else None


def range_of(value: Any) -> tuple[Any, Any, Any] | None:
    """(start, stop, step) of a ``range(...)`` sweep; None for anything else."""
    from hydra.core.override_parser.types import RangeSweep

    return (value.start, value.stop, value.step) if isinstance(value, RangeSweep) else None


def apply_overrides(parsed: list[Any], cfg: DictConfig) -> None:
    """Apply parsed value overrides to a composed tree in place, as Hydra's composition does after
    building the defaults tree (its errors propagate)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    ConfigLoaderImpl._apply_overrides_to_config(parsed, cfg)


def compose_errors() -> tuple[type[BaseException], ...]:
    """What a composition raises for a user's mistake."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    return HydraException, OmegaConfBaseException, ValueError


def compose_tree(config_module: str, overrides: list[str]) -> tuple[DictConfig, list[tuple[str, str | None]]]:
    """Hydra's composition of ``config`` in ``config_module`` with ``overrides`` (not yet resolved, in
    struct mode as Hydra leaves it) without its ``hydra`` node, and the choice of each group as
    Hydra lists them (last chosen first, its own groups among them)."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=config_module, version_base="1.3"):
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    picked = list(OmegaConf.to_container(cfg.hydra.runtime.choices).items())
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, picked


def leaf(tree: DictConfig, key: str) -> tuple[DictConfig, str, ValueNode] | None:
    """(parent, last key, node) of the value node a dotted ``key`` names; None when a node on the way
    is not a plain mapping (missing, None, an interpolation) or the key is not a value node."""
    *path, last = key.split(".")
    parent = tree
    for part in path:
        parent = parent._get_node(part)
        if not isinstance(parent, DictConfig) or parent._is_none() or parent._is_missing() \
                or parent._is_interpolation():
            return None
    node = parent._get_node(last)
    return (parent, last, node) if isinstance(node, ValueNode) else None


def same_node(parent: DictConfig, last: str, node: ValueNode) -> bool:
    """Whether ``parent[last]`` is still ``node`` (an override set its value in place)."""
    return parent._get_node(last) is node


def node_value(node: ValueNode) -> Any:
    return node._value()


def set_node_value(node: ValueNode, value: Any) -> None:
    node._set_value(value)
