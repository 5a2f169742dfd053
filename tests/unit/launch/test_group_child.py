"""A group's job (``run RUNBOOK --only-group NAME --into DIR``) plans its group alone: it composes
the sweep's servers once (what names the groups) and its own steps, never another group's
benchmarks, and its group plan (plan.json, the dry run) is the one planning the whole runbook gave."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec.config import compose
from llama4spec.launch import group as one
from llama4spec.runbook.groups import plan_groups
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.render import plan_text
from tests.helpers import REPO

SWEEP = REPO / "runbooks" / "tiny_cpu_sweep.yaml"
PAIR = REPO / "runbooks" / "tiny_cpu_eagle_vs_baseline.yaml"


@pytest.fixture
def composed(monkeypatch) -> list[tuple[str, ...]]:
    """The override lists composed from here on (each distinct one once: the memo starts empty)."""
    made: list[tuple[str, ...]] = []
    real = compose._compose_checked
    monkeypatch.setattr(compose, "_COMPOSED", {})
    monkeypatch.setattr(compose, "_compose_checked", lambda overrides: made.append(tuple(overrides)) or real(overrides))
    return made


def _text(plan) -> str:
    console = Console(file=io.StringIO(), width=160)
    plan_text(console, plan)
    return console.file.getvalue()


@pytest.mark.parametrize("path", [SWEEP, PAIR])
def test_a_group_plan_is_the_one_the_whole_runbook_gave(path: Path, tmp_path: Path) -> None:
    whole = plan_file(path, lambda name: tmp_path)
    for group in plan_groups(whole):
        old, _ = one.group_plan(whole, tmp_path, group.name, [], 9123)
        alone = one.plan_only(path, lambda name: tmp_path, group.name, [])
        new, _ = one.group_plan(alone, tmp_path, group.name, [], 9123)
        assert new.to_record() == old.to_record() and _text(new) == _text(old), group.name
        assert {p.id for p in alone.steps} == {s for g in plan_groups(alone) for s in g.steps}


def test_the_child_composes_no_other_groups_steps(cli, composed, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(one, "free_port", lambda host: 9123)
    whole = plan_file(SWEEP, lambda name: tmp_path)
    everything = set(composed)
    name = "sweep-tiny_eagle-k3"
    own = {tuple(p.composed.overrides) for p in whole.steps if p.composed is not None and name in (p.id, p.step.server)}
    others = {tuple(p.composed.overrides) for p in whole.steps
              if p.composed is not None and p.step.server is not None and p.step.server != name} - own
    assert others and others <= everything
    composed.clear()

    res = cli("run", str(SWEEP), "--only-group", name, "--into", str(tmp_path / "run"), "--dry-run")
    assert res.returncode == 0, res.stderr
    child = set(composed)
    assert not child & others  # no benchmark (or settle step) of another group
    # besides its own steps (also on the job's port): the matrix's server-side combinations, which name the groups
    benchmarks = {o for o in child if any(x.startswith("bench.max_concurrency=") for x in o)}
    assert {tuple(x for x in o if x != "serve.port=9123") for o in benchmarks} <= own
    assert len(child) < len(everything) and f"] {name}: serve" in res.stdout and "sweep-none" not in res.stdout


def test_a_childs_mistake_is_reported_as_run_reports_it(cli, tmp_path: Path) -> None:
    res = cli("run", str(SWEEP), "--only-group", "sweep-nope", "--into", str(tmp_path), "--dry-run")
    assert res.returncode == 2 and "--only-group sweep-nope: no such server group; the runbook's groups: sweep-none, " \
                                   "sweep-tiny_eagle-k1" in res.stderr
    res = cli("run", str(SWEEP), "memory.max_num_seqs=oops", "--only-group", "sweep-none", "--into", str(tmp_path),
              "--dry-run")
    assert res.returncode == 2 and "memory.max_num_seqs" in res.stderr
