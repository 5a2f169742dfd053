"""The Hydra (and OmegaConf) behaviours the config memo and the sweep expansion rely on, pinned
through the one adapter that uses them (llama4spec/config/hydra_adapter.py). A failure here means
that a Hydra or OmegaConf upgrade changed one of them: fix the adapter (or pin the old version)
before trusting any composition."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import pytest
from omegaconf import OmegaConf

from llama4spec.config import hydra_adapter as hydra

UPGRADE = ("a Hydra upgrade changed the behaviour the config memo relies on "
           "(llama4spec/config/hydra_adapter.py): ")


@contextlib.contextmanager
def pinned(what: str):
    """Fail with the upgrade message when ``what`` raises or does not hold."""
    try:
        yield
    except AssertionError as err:
        pytest.fail(f"{UPGRADE}{what}: {err}", pytrace=False)
    except Exception as err:  # noqa: BLE001 - any error of Hydra's is the upgrade's
        pytest.fail(f"{UPGRADE}{what}: {type(err).__name__}: {err}", pytrace=False)


@dataclass
class _Serve:
    port: int = 8000
    host: str = "127.0.0.1"


@dataclass
class _Tree:
    lookahead: int = 3
    serve: _Serve = field(default_factory=_Serve)


def test_the_parser_reads_plain_changes_sweeps_and_additions() -> None:
    with pinned("the override parser"):
        plain = hydra.parse_override("lookahead=5")
        assert (plain.key_or_group, plain.value(), hydra.is_plain_change(plain)) == ("lookahead", 5, True)
        assert not hydra.is_plain_change(hydra.parse_override("+serve.extra=1"))
        assert not hydra.is_plain_change(hydra.parse_override("~draft.model"))
        swept = hydra.parse_override("lookahead=1,3")
        assert swept.is_sweep_override() and hydra.choices_of(swept.value()) == [1, 3]
        assert hydra.choices_of(hydra.parse_override("draft=choice(none,tiny_eagle)").value()) == ["none", "tiny_eagle"]
        assert hydra.range_of(hydra.parse_override("lookahead=range(1,5)").value()) == (1, 5, 1)
        assert hydra.range_of(swept.value()) is None
        assert list(hydra.parse_override("lookahead=range(1,7,2)").sweep_string_iterator()) == ["1", "3", "5"]


def test_a_value_override_is_applied_in_place_typed_and_refused_in_words() -> None:
    with pinned("applying a value override to a composed tree"):
        tree = OmegaConf.structured(_Tree)
        OmegaConf.set_struct(tree, True)
        parent, last, node = hydra.leaf(tree, "serve.port")
        hydra.apply_overrides([hydra.parse_override("serve.port='9000'")], tree)
        assert hydra.same_node(parent, last, node), "the leaf was replaced, not set in place"
        assert hydra.node_value(node) == 9000 and tree.serve.port == 9000, "the typed leaf did not convert"
        hydra.set_node_value(node, 8000)
        assert tree.serve.port == 8000
        assert hydra.leaf(tree, "serve") is None, "a mapping is not a leaf"
        with pytest.raises(hydra.compose_errors()):
            hydra.apply_overrides([hydra.parse_override("serve.nope=1")], tree)
        with pytest.raises(hydra.compose_errors()):
            hydra.apply_overrides([hydra.parse_override("lookahead=not_a_number")], tree)


def _config_module(tmp_path, monkeypatch) -> str:
    """A config package of its own (a group with two options, settings beside), so that what is pinned
    is Hydra's behaviour, not the shipped configs."""
    root = tmp_path / "hydra_pin_conf"
    (root / "size").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "config.yaml").write_text("defaults:\n  - size: small\n  - _self_\nlookahead: 3\nserve:\n  port: 8000\n")
    (root / "size" / "small.yaml").write_text("layers: 2\n")
    (root / "size" / "large.yaml").write_text("layers: 48\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "hydra_pin_conf"


def test_groups_composed_then_values_applied_equal_one_full_composition(tmp_path, monkeypatch) -> None:
    module = _config_module(tmp_path, monkeypatch)
    groups, values = ["size=large"], ["lookahead=2", "serve.port=8811"]
    with pinned("composing groups once, then applying value overrides"):
        full, full_choices = hydra.compose_tree(module, groups + values)
        tree, choices = hydra.compose_tree(module, groups)
        hydra.apply_overrides([hydra.parse_override(v) for v in values], tree)
        assert "hydra" not in tree and OmegaConf.is_struct(tree)
        assert OmegaConf.to_container(tree) == OmegaConf.to_container(full) == {
            "size": {"layers": 48}, "lookahead": 2, "serve": {"port": 8811}}
        assert choices == full_choices and dict(choices)["size"] == "large"
        assert any(group.startswith("hydra") for group, _ in choices), "Hydra's own groups are listed"
