"""A sweep's rule for measuring until decided is declared once (``sweep.rule.Rule``): its
fields are the sweep step's runbook keys, the generated settle steps and the servers the sweep gates
carry that one object, and no generated step restates min_repeats, max_repeats or confidence."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from llama4spec.errors import UserError
from llama4spec.runbook.fields import runbook_keys
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.steps import kind
from llama4spec.sweep.gates import Dominance, Revisit
from llama4spec.sweep.rule import Rule
from tests.helpers import REPO

RULE = [f.name for f in dataclasses.fields(Rule)]


def _runbook(tmp_path: Path, **keys) -> Path:
    data = yaml.safe_load((REPO / "runbooks" / "tiny_cpu_sweep.yaml").read_text())
    sweep = data["steps"][0]
    sweep.pop("verify_schedule")
    sweep.update(matrix={"draft": ["none", "tiny_eagle"], "lookahead": [1, 3]}, repeats="auto", **keys)
    data["steps"] = [sweep]
    path = tmp_path / "rb.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_rule_is_keys_of_the_sweep_step_and_no_generated_step_restates_it() -> None:
    assert RULE == ["min_repeats", "max_repeats", "confidence"]
    assert set(RULE) <= runbook_keys(kind("sweep").Keys)
    for name in ("settle", "serve"):
        assert not set(RULE) & {f.name for f in dataclasses.fields(kind(name).Keys)}, name
    assert runbook_keys(kind("settle").Keys) == set()  # generated only


def test_the_sweep_hands_its_rule_whole_to_every_settle_step_and_gated_server(tmp_path: Path) -> None:
    path = _runbook(tmp_path, min_repeats=3, max_repeats=7, confidence=0.9, revisit=True)
    plan = plan_file(path, lambda name: tmp_path / "run", [])
    rule = plan.get("sweep").step.keys.rule
    assert rule == Rule(3, 7, 0.9)
    settles = [p.step.keys.rule for p in plan.steps if p.kind == "settle"]
    gates = [p.step.keys.gate for p in plan.steps if p.kind == "serve" and p.step.keys.gate is not None]
    assert len(settles) == 6 and all(r is rule for r in settles)  # 3 servers, each started twice
    assert {type(g) for g in gates} == {Dominance, Revisit} and all(g.rule is rule for g in gates)
    assert {p.step.keys.repeats for p in plan.steps if p.kind == "bench"} == {3}  # min_repeats counted first
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.min_repeats = 2  # type: ignore[misc]


def test_a_rule_that_contradicts_itself_is_one_line(tmp_path: Path) -> None:
    path = _runbook(tmp_path, min_repeats=5, max_repeats=3)
    with pytest.raises(UserError) as info:
        plan_file(path, lambda name: tmp_path / "run", [])
    assert info.value.problems == [f"{path}: step 'sweep': min_repeats (5) is larger than max_repeats (3); lower "
                                   f"min_repeats or raise max_repeats"]
