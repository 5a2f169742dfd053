"""Runbooks without an engine: loading, validation (every error at once), planning, dry run."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec.errors import UserError
from llama4spec.runbook.plan import plan_file
from llama4spec.engine.secrets import redact_env
from llama4spec.runbook.render import plan_text
from llama4spec.tiny.paths import tiny_root
from tests.helpers import REPO

RUNBOOKS = sorted((REPO / "runbooks").glob("*.yaml"))
GOLDEN = REPO / "tests" / "golden"
RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")


def _plan(path: Path, *overrides: str):
    return plan_file(path, lambda name: RUN_DIR, list(overrides))


def _dry_run_text(path: Path) -> str:
    console = Console(record=True, width=100, file=io.StringIO())
    plan_text(console, _plan(path))
    text = console.export_text()
    return text.replace(str(tiny_root()), "<tiny>").replace(sys.executable, "<python>").replace(str(REPO) + "/", "")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rb.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", RUNBOOKS, ids=lambda p: p.name)
def test_every_shipped_runbook_loads_and_plans(path: Path) -> None:
    plan = _plan(path)
    kinds = [p.kind for p in plan.steps]
    if set(kinds) == {"lossless"}:  # losslessness checks start their own engines (tests/unit/lossless)
        assert all(p.argv[:2] == ["llama4spec", "lossless"] for p in plan.steps)
        return
    assert kinds.count("serve") == kinds.count("stop") >= 2
    # the answer comes last: a comparison, capacities, a map, or a sweep's verdicts
    assert kinds[-1] in ("compare", "capacity", "breakeven", "sweep")
    for step in plan.steps:
        if step.kind == "serve":
            assert step.argv[:2] == ["vllm", "serve"] and step.url.startswith("http://127.0.0.1:")
        if step.kind == "bench":
            assert step.argv[:3] == ["vllm", "bench", "serve"] and "--save-result" in step.argv


@pytest.mark.parametrize("path", RUNBOOKS, ids=lambda p: p.name)
def test_every_shipped_runbook_starts_with_its_command(path: Path) -> None:
    first = path.read_text().splitlines()[0]
    assert first == f"# llama4spec run runbooks/{path.name}"


def test_scout_runbook_explains_the_flags_vllm_dropped() -> None:
    text = (REPO / "runbooks" / "llama4_scout_eagle_mtbench.yaml").read_text()
    for flag in ('"prefill_token_shift": false', "--num-lookahead-slots=3"):
        line = next(line for line in text.splitlines() if flag in line)
        assert line.lstrip().startswith("#") and "NO LONGER ACCEPTED" in line
    plan = _plan(REPO / "runbooks" / "llama4_scout_eagle_mtbench.yaml")
    eagle = plan.get("eagle")
    spec = json.loads(eagle.argv[eagle.argv.index("--speculative-config") + 1])
    assert spec == {"method": "eagle", "model": "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct",
                    "num_speculative_tokens": 3, "draft_tensor_parallel_size": 4, "max_model_len": 32768}
    assert "--num-lookahead-slots" not in " ".join(eagle.argv) and "prefill_token_shift" not in " ".join(eagle.argv)
    for sid in ("eagle", "baseline"):
        argv = plan.get(sid).argv
        assert argv[argv.index("--tensor-parallel-size") + 1] == "4" and "--no-enable-prefix-caching" in argv
    assert "--speculative-config" not in plan.get("baseline").argv
    bench = plan.get("bench_eagle").argv
    assert bench[bench.index("--dataset-path") + 1] == "philschmid/mt-bench"
    assert bench[bench.index("--max-concurrency") + 1] == "16"


@pytest.mark.parametrize("name,build", [("tiny_cpu_eagle_vs_baseline", "cpu"), ("llama4_scout_eagle_mtbench", "gpu")])
def test_dry_run_matches_golden(name: str, build: str, use_build) -> None:
    use_build(build)
    text = _dry_run_text(REPO / "runbooks" / f"{name}.yaml")
    golden = GOLDEN / f"runbook_{name}.dry_run.txt"
    assert text == golden.read_text()


def test_cpu_build_runs_the_api_server_module_and_gpu_build_the_vllm_cli(use_build) -> None:
    path = REPO / "runbooks" / "tiny_cpu_eagle_vs_baseline.yaml"
    cpu = _plan(path).get("eagle")
    use_build("gpu")
    gpu = _plan(path).get("eagle")
    assert cpu.exec_argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert gpu.exec_argv == gpu.argv and gpu.argv[:2] == ["vllm", "serve"]
    assert cpu.exec_argv[3:5] == ["--model", gpu.argv[2]] and cpu.exec_argv[5:] == gpu.argv[3:]


def test_execution_order_follows_needs_then_file_order(tmp_path: Path) -> None:
    path = _write(tmp_path, """
name: order
steps:
  - {id: cmp, kind: compare, baseline: b1, candidate: b2}
  - {id: s1, kind: serve, overrides: [serve.port=8101]}
  - {id: b1, kind: bench, server: s1}
  - {id: stop1, kind: stop, server: s1}
  - {id: s2, kind: serve, needs: [stop1], overrides: [draft=none, serve.port=8101]}
  - {id: b2, kind: bench, server: s2}
""")
    plan = _plan(path)
    assert [p.id for p in plan.steps] == ["s1", "b1", "stop1", "s2", "b2", "cmp"]
    assert plan.get("cmp").needs == ["b1", "b2"] and plan.get("b2").needs == ["s2"]
    assert plan.get("cmp").inputs == {"baseline": RUN_DIR / "b1" / "record.json",
                                      "candidate": RUN_DIR / "b2" / "record.json"}


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path, """
name: broken
colour: blue
steps:
  - {id: a, kind: serve, overrides: [lookahead=abc], port: 9}
  - {id: b, kind: bench, server: a, needs: [c, ghost]}
  - {id: c, kind: bench, server: a, needs: [b]}
  - {id: d, kind: compare, baseline: b, candidate: missing.json}
  - {id: e, kind: stop, server: d}
  - {id: f, kind: teleport}
  - {id: g, kind: offline, overrides: [target.model=/no/such/model]}
""")
    with pytest.raises(UserError) as info:
        _plan(path)
    text = "\n".join(info.value.problems)
    expected = [
        "unknown key 'colour'",
        "step 'a': unknown key 'port' for a serve step",
        "step 'f': kind 'teleport' is not one of",
        "step 'b': needs unknown step 'ghost'",
        "step 'd': candidate 'missing.json' is neither a bench step nor an existing file",
        "step 'e': server 'd' is a compare step",
        "cycle (b -> c -> b)",
        "step 'a': cannot apply override 'lookahead=abc'",
        "step 'g': target.model: local model directory '/no/such/model' does not exist",
    ]
    for fragment in expected:
        assert fragment in text
    assert len(info.value.problems) == len(expected)


def test_two_live_servers_on_one_port_and_a_bench_after_stop_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, """
name: clash
steps:
  - {id: s1, kind: serve}
  - {id: s2, kind: serve, overrides: [draft=none]}
  - {id: stop1, kind: stop, server: s1}
  - {id: late, kind: bench, server: s1}
""")
    with pytest.raises(UserError) as info:
        _plan(path)
    assert any("step 's2': http://127.0.0.1:8000 is still taken by server 's1'" in p for p in info.value.problems)
    assert any("step 'late': server 's1' is already stopped" in p for p in info.value.problems)


def test_bad_yaml_and_missing_file_are_one_line_each(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such runbook file"):
        _plan(tmp_path / "nope.yaml")
    with pytest.raises(UserError, match="not valid YAML at line 2"):
        _plan(_write(tmp_path, "name: x\nsteps: [a, : b\n  - c\n"))


def test_api_key_is_named_never_shown(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "the-key-itself")
    path = _write(tmp_path, """
name: keyed
env: {HF_TOKEN: hf_secret_value_123, MY_SETTING: visible}
overrides: [serve.api_key_env=MY_API_KEY]
steps:
  - {id: s, kind: serve}
  - {id: b, kind: bench, server: s}
""")
    console = Console(record=True, width=100, file=io.StringIO())
    plan_text(console, _plan(path))
    text = console.export_text()
    assert "hf_secret_value_123" not in text and "the-key-itself" not in text and "HF_TOKEN=***" in text and "MY_SETTING=visible" in text
    assert "VLLM_API_KEY=$MY_API_KEY (redacted)" in text and "OPENAI_API_KEY=$MY_API_KEY (redacted)" in text
    assert redact_env({"A_TOKEN": "x", "PLAIN": "sekrit-value"}, ("sekrit-value",)) == {"A_TOKEN": "***", "PLAIN": "***"}


def test_cli_reports_runbook_errors_without_traceback(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\nsteps:\n  - {id: a, kind: serve, overrides: [no_such_key=1]}\n  - {id: b, kind: stop, server: zz}\n")
    res = cli("run", str(path), "--dry-run", timeout=120)
    assert res.returncode == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines)
    assert "unknown config key 'no_such_key'" in res.stderr and "server 'zz' is unknown step" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout


def test_cli_dry_run_starts_nothing_and_writes_nothing(cli, tmp_path: Path) -> None:
    res = cli("run", "runbooks/tiny_cpu_eagle_vs_baseline.yaml", "--dry-run", "--runs-dir", str(tmp_path), timeout=120)
    assert res.returncode == 0, res.stderr
    assert "[7/7] compare: compare (needs bench_baseline, bench_eagle)" in res.stdout
    assert list(tmp_path.iterdir()) == []
