"""Where an offline run's record goes comes from planning: ``llama4spec offline --json PATH`` plans
its one step with PATH (none without ``--json``), a runbook's ``offline`` step its own
``record.json``; nothing edits a plan after it is made."""

from __future__ import annotations

from pathlib import Path

from llama4spec.runbook.plan import make_plan, one_step_plan
from llama4spec.runbook.spec import Runbook
from llama4spec.runbook.steps import make as make_step

OVERRIDES = ["draft=tiny_eagle", "lookahead=3"]


def test_the_command_plans_its_json_path() -> None:
    step = make_step("offline", "offline", record=Path("out/run.json"))
    p = one_step_plan(step, Path("runs/offline"), OVERRIDES).steps[0]
    assert p.artifacts == {"record": Path("out/run.json"), "config_file": Path("runs/offline/config.yaml")}
    assert p.argv == ["llama4spec", "offline", *OVERRIDES, "--json", "out/run.json"]


def test_without_json_the_command_plans_no_record() -> None:
    p = one_step_plan(make_step("offline", "offline"), Path("runs/offline"), OVERRIDES).steps[0]
    assert p.artifacts == {"config_file": Path("runs/offline/config.yaml")}
    assert p.argv == ["llama4spec", "offline", *OVERRIDES]


def test_a_runbook_step_writes_its_record_in_its_directory() -> None:
    runbook = Runbook(name="r", path=Path("r.yaml"), steps=[make_step("offline", "perfect", overrides=OVERRIDES)])
    p = make_plan(runbook, Path("runs/r/1")).steps[0]
    record = Path("runs/r/1/perfect/record.json")
    assert p.artifacts == {"record": record, "config_file": Path("runs/r/1/perfect/config.yaml")}
    assert p.argv == ["llama4spec", "offline", *OVERRIDES, "--json", str(record)]
