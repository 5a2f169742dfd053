"""Regressions of the restructuring, each through the CLI as a user runs it (no engine starts)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.helpers import run_cli

CPU_UTILISATION = re.compile(r"gpu[-_]memory[-_]utili[sz]ation[\s=:]*0\.4\b")


def _one_error_line(result) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{result.stderr}"
    assert lines[0].startswith("error:"), lines[0]
    return lines[0]


def _no_tiny_defaults(output: str) -> None:
    tiny = os.environ["LLAMA4SPEC_TINY_DIR"]
    assert tiny not in output, f"the tiny cache path leaks into a real model's output:\n{output}"
    assert not CPU_UTILISATION.search(output), f"the CPU utilisation 0.4 leaks into a real model's output:\n{output}"
    assert "VLLM_CPU_KVCACHE_SPACE" not in output, output
    assert "memory=cpu" not in output and "hardware=cpu" not in output, output


# a. A multi-node layout without hosts: validate and serve --dry-run say the same, in one line.

TWO_NODES_NO_HOSTS = ["target=llama4_scout", "draft=none", "parallel=two_nodes_tp8_pp2", "memory=default"]


def test_validate_and_serve_dry_run_agree_on_missing_hosts(cli):
    validate = cli("validate", *TWO_NODES_NO_HOSTS, timeout=120)
    serve = cli("serve", *TWO_NODES_NO_HOSTS, "--dry-run", timeout=120)
    assert validate.returncode == 2, validate.stdout + validate.stderr
    assert serve.returncode == 2, serve.stdout + serve.stderr
    v, s = _one_error_line(validate), _one_error_line(serve)
    assert "needs 2 hosts" in v, v
    assert v == s


# b. `run --force` with an offline step: the doctor runs once, --force reaches it, and the run then
#    fails on the bad JSONL line before any engine starts.

@pytest.fixture
def offline_runbook(tmp_path: Path) -> tuple[Path, Path]:
    bad = tmp_path / "prompts.jsonl"
    bad.write_text('{"prompt": "w4 w5 w6"}\n{"prompt": \n{"prompt": "w7"}\n')
    runbook = tmp_path / "offline_doctor_force.yaml"
    runbook.write_text(
        "name: offline_doctor_force\n"
        "description: a doctor error (max_model_len beyond the target's positions) and a malformed JSONL line\n"
        f"overrides: [memory.max_model_len=4096, dataset=jsonl, 'dataset.path={bad}']\n"
        "steps:\n"
        "  - id: prompts\n"
        "    kind: offline\n")
    # Any import of vllm or torch fails loudly: proof that no engine starts.
    for name in ("vllm", "torch"):
        (tmp_path / "no_engine" / name).mkdir(parents=True)
        (tmp_path / "no_engine" / name / "__init__.py").write_text(f"raise RuntimeError('ENGINE IMPORTED: {name}')\n")
    return runbook, tmp_path


def _no_engine_env(tmp_path: Path) -> dict:
    return {"PYTHONPATH": str(tmp_path / "no_engine")}


def test_the_doctor_finding_fires_for_max_model_len(cli):
    result = cli("doctor", "memory.max_model_len=4096", timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "max-model-len" in result.stdout


def test_run_force_carries_to_the_doctor_of_an_offline_step(offline_runbook):
    runbook, tmp_path = offline_runbook
    # a subprocess: PYTHONPATH puts the poisoned vllm/torch first, which only a fresh interpreter honours
    result = run_cli("run", str(runbook), "--force", "--runs-dir", str(tmp_path / "runs"),
                     env=_no_engine_env(tmp_path), timeout=120)
    output = result.stdout + result.stderr
    assert "ENGINE IMPORTED" not in output and "Traceback" not in output, output
    assert result.returncode != 0, output
    assert "run anyway with --force" not in output, output
    # the doctor ran exactly once and said it was forced
    assert output.count("memory.max_model_len=4096 exceeds") == 1, output
    assert output.count("doctor: 1 error(s)") == 1, output
    assert "--force: starting despite 1 doctor error(s)" in output
    # then the step failed on the malformed line, naming it, and the run records it as failed
    assert re.search(r"step 'prompts' failed: .*prompts\.jsonl:2\b", output), output
    assert "not valid JSON" in output, output
    import json

    (status,) = (tmp_path / "runs").glob("*/*/status.json")
    data = json.loads(status.read_text())
    assert data["status"] == "failed" and data["steps"][0]["status"] == "failed"


def test_run_without_force_refuses_with_the_doctor_finding(offline_runbook):
    runbook, tmp_path = offline_runbook
    # a subprocess: PYTHONPATH puts the poisoned vllm/torch first, which only a fresh interpreter honours
    result = run_cli("run", str(runbook), "--runs-dir", str(tmp_path / "runs"),
                     env=_no_engine_env(tmp_path), timeout=120)
    output = result.stdout + result.stderr
    assert "ENGINE IMPORTED" not in output and "Traceback" not in output, output
    assert result.returncode == 2, output
    assert "memory.max_model_len=4096 exceeds" in result.stderr and "run anyway with --force" in result.stderr, output
    assert "not valid JSON" not in output, "the refused run read the prompts"
    assert not (tmp_path / "runs").exists(), "a refused run left a run directory"


# c. The tiny defaults (cache path, CPU memory) do not leak into real targets.

@pytest.mark.parametrize("args", [
    ["show", "target=llama4_scout"],
    ["memory", "target=llama4_scout", "hardware=h100_80gb"],
    ["plan", "target=llama4_scout", "hardware=h100_80gb"],
], ids=" ".join)
def test_real_targets_get_no_tiny_defaults(cli, args):
    result = cli(*args, timeout=120)
    output = result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    # memory/plan exit 1 when the plan does not fit (documented in `llama4spec memory --help`)
    assert result.returncode in ((0,) if args[0] == "show" else (0, 1)), output
    assert "meta-llama/Llama-4-Scout-17B-16E-Instruct" in output
    _no_tiny_defaults(output)


def test_maverick_on_two_nodes_pairs_with_the_eagle3_head(cli):
    result = cli("show", "target=llama4_maverick", "parallel=two_nodes_tp8_pp2", "cluster=two_nodes_ssh",
                     timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "draft=eagle3_llama4_maverick" in out
    assert "nvidia/Llama-4-Maverick-17B-128E-Eagle3" in out
    assert '"method":"eagle3"' in out
    _no_tiny_defaults(out + result.stderr)


# d. hydra.* overrides: only hydra.searchpath, and a user's own target composes.

def test_hydra_run_dir_is_refused_in_one_line(cli):
    result = cli("show", "hydra.run.dir=x", timeout=120)
    assert result.returncode == 2
    line = _one_error_line(result)
    assert "hydra.run.dir" in line and "hydra.searchpath" in line, line


@pytest.fixture
def own_conf(tmp_path: Path) -> str:
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "mine.yaml").write_text("name: mine\nmodel: some/model\n")
    return f"hydra.searchpath=[file://{tmp_path}]"


def test_own_target_through_the_searchpath(cli, own_conf):
    result = cli("show", own_conf, "target=mine", "draft=none", "memory=default", "bench=mtbench",
                     "dataset=mtbench", "hardware=h100_80gb", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "model: some/model" in result.stdout
    assert "vllm serve some/model" in result.stdout
    _no_tiny_defaults(result.stdout + result.stderr)


def test_own_target_alone_asks_for_a_draft(cli, own_conf):
    result = cli("show", own_conf, "target=mine", timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    line = _one_error_line(result)
    assert "target=mine" in line, line
    assert "draft" in line, f"the message should tell the user to name a draft (draft=...): {line}"


# e. A path as a group option is refused.

@pytest.mark.parametrize("command", ["show", "validate"])
def test_a_path_as_group_option_is_refused(cli, command):
    result = cli(command, "target=../../x", timeout=120)
    assert result.returncode == 2
    line = _one_error_line(result)
    assert "target=../../x" in line and "not a path" in line, line


def test_one_step_commands_apply_their_overrides_once(cli) -> None:
    """`serve +env.X=1` used to compose the override twice ("An item is already at 'env.X'")."""
    res = cli("serve", "+env.L4S_ONCE=1", "--dry-run", timeout=120)
    assert res.returncode == 0, res.stderr
    assert "L4S_ONCE=1" in res.stdout and "already at" not in res.stderr
