"""The sweep's designs as strategies: each a class registered by name (``sweep.registry``),
its arguments frozen, run by the expansion in the order of its phase where it applies, with its
stop reason where it has one. A runbook here is only planned; no engine runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from llama4spec.runbook.plan import plan_file
from llama4spec.sweep.design import Design
from llama4spec.sweep.design_auto import Auto
from llama4spec.sweep.registry import DESIGN_KEYS, DESIGNS, REGISTRY, in_phase_order
from llama4spec.sweep.planned import design_of

SWEEP = {"id": "sweep", "kind": "sweep", "repeats": 2,
         "matrix": {"draft": ["none", "tiny_eagle"], "lookahead": [1, 3]}}


def _plan(tmp_path: Path, **keys):
    data = {"name": "designs", "overrides": ["target=tiny", "memory=cpu", "bench=random_tiny", "serve.port=8791"],
            "steps": [{**SWEEP, **keys}]}
    path = tmp_path / "designs.yaml"
    path.write_text(yaml.safe_dump(data))
    return plan_file(path, lambda name: tmp_path / "run")


def test_the_design_key_offers_the_registered_choices_with_auto_first() -> None:
    assert DESIGNS == ("auto", "sequential", "interleaved")
    assert DESIGN_KEYS == {"interleaved": ("gap_s", "swap_devices")}
    assert all(issubclass(cls, Design) and cls.name == name for name, cls in REGISTRY.items())


def test_the_expansion_runs_the_designs_in_phase_order() -> None:
    names = [cls.name for cls in in_phase_order()]
    assert names == ["auto", "interleaved", "starts", "sequential", "revisit", "schedule"]


def test_a_designs_arguments_are_frozen_and_its_state_its_own() -> None:
    one, two = Auto(3, 2), Auto(3, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.starts = 4  # type: ignore[misc]
    one.state.stop = "why"
    assert two.state.stop is None and one == two


def test_auto_on_cpu_takes_the_sequential_design_and_says_why(tmp_path: Path) -> None:
    record = design_of(_plan(tmp_path).get("sweep").step)
    assert record["design"] == "sequential" and record["asked"] == "auto"
    assert "half the cores" in record["auto"]
