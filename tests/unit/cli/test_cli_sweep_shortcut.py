"""`llama4spec sweep OVERRIDES`: overrides with a Hydra sweep are the matrix's axes, the rest apply to
every point; planned like a runbook file (runs/sweep/<timestamp>), no engine in a dry run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from llama4spec.cli.sweep import runbook_yaml, sweep_runbook
from llama4spec.runbook.matrix import command_line_matrix as split_overrides
from llama4spec.errors import UserError
from llama4spec.runbook.plan import make_plan
EXPECTED = [
    ("sweep-none", "serve"), ("sweep-none-c1", "bench"), ("sweep-none-c4", "bench"), ("sweep-none-stop", "stop"),
    ("sweep-k1-tiny_eagle", "serve"), ("sweep-k1-tiny_eagle-c1", "bench"), ("sweep-k1-tiny_eagle-c4", "bench"),
    ("sweep-k1-tiny_eagle-stop", "stop"),
    ("sweep-k3-tiny_eagle", "serve"), ("sweep-k3-tiny_eagle-c1", "bench"), ("sweep-k3-tiny_eagle-c4", "bench"),
    ("sweep-k3-tiny_eagle-stop", "stop"),
    ("sweep", "sweep"),
]
ARGS = ["lookahead=1,3", "bench.max_concurrency=1,4", "draft=none,tiny_eagle"]


def test_dry_run_prints_the_generated_steps(cli, tmp_path: Path) -> None:
    res = cli("sweep", *ARGS, "serve.port=8801", "--dry-run", "--runs-dir", str(tmp_path), timeout=180)
    assert res.returncode == 0, res.stderr
    steps = re.findall(r"^\[\d+/\d+\] ([\w-]+): (\w+)", res.stdout, re.M)
    assert steps == EXPECTED
    assert "runbook: sweep (<sweep>)" in res.stdout
    assert re.search(rf"run directory: {re.escape(str(tmp_path))}/sweep/\d{{8}}-\d{{6}}", res.stdout)
    assert "overrides for every step: serve.port=8801" in res.stdout
    assert "--port 8801" in res.stdout and "--max-concurrency 4" in res.stdout
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_plan_in_process(tmp_path: Path) -> None:
    runbook = sweep_runbook([*ARGS, "bench.num_prompts=8"])
    assert runbook.overrides == ["bench.num_prompts=8"] and runbook.path == Path("<sweep>")
    (step,) = runbook.steps
    assert step.kind == "sweep" and step.keys.matrix == {"lookahead": ["1", "3"], "bench.max_concurrency": ["1", "4"],
                                                    "draft": ["none", "tiny_eagle"]}
    plan = make_plan(runbook, tmp_path / "sweep" / "x")
    assert [(p.id, p.kind) for p in plan.steps] == EXPECTED
    bench = plan.get("sweep-k3-tiny_eagle-c4")
    assert bench.composed.cfg.bench.num_prompts == 8 and bench.composed.cfg.lookahead == 3


def test_hydra_sweep_forms() -> None:
    matrix, shared = split_overrides(["lookahead=range(1,4)", "draft=choice(none,tiny_eagle)", "serve.port=8802",
                                      "hydra.searchpath=[file:///tmp/x]"])
    assert matrix == {"lookahead": ["1", "2", "3"], "draft": ["none", "tiny_eagle"]}
    assert shared == ["serve.port=8802", "hydra.searchpath=[file:///tmp/x]"]


def test_generated_runbook_yaml_is_a_runbook() -> None:
    from llama4spec.runbook.schema import parse

    text = runbook_yaml({"lookahead": ["1", "3"]}, ["serve.port=8803"], ["lookahead=1,3", "serve.port=8803"])
    runbook, problems = parse(yaml.safe_load(text), Path("runbook.yaml"))
    assert problems == [] and runbook.name == "sweep" and runbook.steps[0].keys.matrix == {"lookahead": ["1", "3"]}


@pytest.mark.parametrize("args,expected", [
    (["lookahead=3"], "no sweep among the overrides"),
    (["lookahead=range(1,"], "cannot parse override 'lookahead=range(1,'"),
    (["draft=none,nonexistent"], "unknown option 'nonexistent'"),
    (["lookahed=1,3"], "is not a config key; did you mean 'lookahead'?"),
    (["+lookahead=1,3"], "a sweep axis is a plain key"),
    (["lookahead=1,3", "lookahead=4,5"], "lookahead is swept twice"),
])
def test_bad_sweeps_are_one_line(args: list[str], expected: str) -> None:
    with pytest.raises(UserError) as info:
        sweep_runbook(args)
    assert any(expected in p for p in info.value.problems), info.value.problems


def test_cli_bad_sweep_exit_2(cli) -> None:
    res = cli("sweep", "lookahead=1,3", "draft=none,nonexistent", "--dry-run", timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("error: ") and "Traceback" not in res.stderr


def test_resume_needs_a_sweep_run(cli, tmp_path: Path) -> None:
    res = cli("sweep", *ARGS, "--dry-run", "--resume", str(tmp_path), timeout=120)
    assert res.returncode == 2 and "not a run directory" in res.stderr
