"""Sweep steps without an engine: matrix checks, expansion, one server per server setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.errors import UserError
from llama4spec.runbook.plan import plan_file
from llama4spec.sweep.planned import design_of
from tests.helpers import REPO

RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")


def _plan(path: Path, *overrides: str):
    return plan_file(path, lambda name: RUN_DIR, list(overrides))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


def _spec(argv: list[str]) -> dict | None:
    return json.loads(argv[argv.index("--speculative-config") + 1]) if "--speculative-config" in argv else None


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_tiny_sweep_starts_three_servers_and_measures_each_at_every_concurrency() -> None:
    plan = _plan(REPO / "runbooks" / "tiny_cpu_sweep.yaml")
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert [p.id for p in serves] == ["sweep-none", "sweep-tiny_eagle-k1", "sweep-tiny_eagle-k3", "sweep-schedule"]
    # lookahead does not change a server without a draft: k=1 and k=3 share it
    assert [_spec(p.argv) and _spec(p.argv)["num_speculative_tokens"] for p in serves] == [None, 1, 3, 3]
    assert len({tuple(p.argv) for p in serves[:3]}) == 3
    # verify_schedule: a fourth server whose schedule is derived at run time from the six fixed points
    schedule = serves[-1]
    assert schedule.step.keys.gate.derive_from == [p.id for p in plan.steps if p.kind == "bench"][:6]
    assert schedule.needs == ["sweep-tiny_eagle-k3-stop"]
    for server in serves:
        benches = [p for p in plan.steps if p.kind == "bench" and p.step.server == server.id]
        assert [_flag(b.argv, "--max-concurrency") for b in benches] == ["1", "4"]
        assert all(b.argv[-1:] == ["--ignore-eos"] and _flag(b.argv, "--num-warmups") == "0"
                   and _flag(b.argv, "--num-prompts") == "16" and (b.step.keys.repeats, b.step.keys.warmup) == (2, 2)
                   for b in benches)  # repeats: auto: min_repeats each, then the server's settle step gives more
        ids = [p.id for p in plan.steps]
        assert max(ids.index(b.id) for b in benches) < ids.index(f"{server.id}-settle") < ids.index(f"{server.id}-stop")
        # the server starts, is measured, and is stopped before the next one starts
        assert ids.index(server.id) < min(ids.index(b.id) for b in benches)
        assert max(ids.index(b.id) for b in benches) < ids.index(f"{server.id}-stop")
    sweep = plan.get("sweep")
    assert sweep.step.expanded.points == [p.id for p in plan.steps if p.kind == "bench"] and len(sweep.step.expanded.points) == 8
    assert set(sweep.step.expanded.points) <= set(sweep.needs)
    assert sweep.artifacts["speedup"] == RUN_DIR / "sweep" / "speedup.png"
    assert [p.kind for p in plan.steps][-2:] == ["sweep", "compare"]


def test_scout_sweep_reuses_each_server_for_every_concurrency(tmp_path) -> None:
    from tests.helpers import scout_blocks_text

    (tmp_path / "scout.yaml").write_text(scout_blocks_text())  # the blocks: design: auto, repeats: auto
    plan = _plan(tmp_path / "scout.yaml")
    serves = [p for p in plan.steps if p.kind == "serve"]
    # design: auto on an 8-GPU node: back-to-back blocks, no speculation beside EAGLE at 1, 2, 3, 5, 7,
    # at most max_repeats (10) blocks each (repeats: auto), two TP 4 servers a block
    design = design_of(plan.get("sweep").step)
    assert design["asked"] == "auto" and design["design"] == "interleaved" and design["blocks"]["blocks"] == "auto"
    assert len(serves) == 2 * 5 * 10
    assert sorted(_spec(p.argv)["num_speculative_tokens"] for p in serves[1:10:2]) == [1, 2, 3, 5, 7]
    assert all(_flag(p.argv, "--tensor-parallel-size") == "4" and "--no-enable-prefix-caching" in p.argv
               for p in serves)
    points = plan.get("sweep").step.expanded.points
    assert len(points) == 24  # each server serves every concurrency
    benches = [p for p in plan.steps if p.kind == "bench"]
    assert sorted({_flag(b.argv, "--max-concurrency") for b in benches}, key=int) == ["1", "4", "16", "64"]
    cmp = plan.get("compare")
    assert cmp.inputs["candidate"] == RUN_DIR / "sweep-eagle_llama4_scout-k3-c16" / "record.json"


def test_client_only_matrix_uses_one_server(tmp_path: Path) -> None:
    path = _write(tmp_path, """
name: conc
overrides: [serve.port=8123]
steps:
  - id: s
    kind: sweep
    matrix: {bench.max_concurrency: [1, 2, 8], bench.num_prompts: [4]}
""")
    plan = _plan(path)
    assert [p.id for p in plan.steps] == ["s-server", "s-server-c1-n4", "s-server-c2-n4", "s-server-c8-n4",
                                          "s-server-stop", "s"]


def test_cli_override_reaches_every_point(tmp_path: Path) -> None:
    plan = _plan(REPO / "runbooks" / "tiny_cpu_sweep.yaml", "bench.output_len=8")
    assert {_flag(p.argv, "--output-len") for p in plan.steps if p.kind == "bench"} == {"8"}


def test_bad_matrices_are_reported_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path, """
name: bad
steps:
  - id: a
    kind: sweep
    matrix: {lookahed: [1, 2], draft: [none, eagel], bench.max_concurrency: [], lookahead: [1, 1]}
  - id: b
    kind: sweep
  - id: c
    kind: sweep
    matrix: {lookahead: [abc]}
""")
    with pytest.raises(UserError) as info:
        _plan(path)
    problems = info.value.problems
    expected = [
        "step 'a': matrix key 'lookahed' is not a config key; did you mean 'lookahead'?",
        "step 'a': matrix 'draft': unknown option 'eagel'; valid options:",
        "step 'a': matrix 'bench.max_concurrency' must be a non-empty list of values",
        "step 'a': matrix 'lookahead' lists a value twice",
        "step 'b': a sweep step needs 'matrix'",
        "step 'c': matrix: cannot apply override 'lookahead=abc'",
    ]
    for fragment in expected:
        assert sum(fragment in p for p in problems) == 1, (fragment, problems)
    assert len(problems) == len(expected)


def test_generated_id_clashing_with_a_step_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, """
name: clash
steps:
  - {id: s-server, kind: serve, overrides: [serve.port=8124]}
  - {id: s-server-stop0, kind: stop, server: s-server}
  - {id: s, kind: sweep, needs: [s-server-stop0], matrix: {bench.max_concurrency: [1]}}
""")
    with pytest.raises(UserError, match="generated step id 's-server' is already used"):
        _plan(path)


def test_cli_bad_matrix_key_is_one_line_and_exit_2(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, """
name: cli_bad
steps:
  - {id: s, kind: sweep, matrix: {bench.max_concurency: [1, 4]}}
""")
    done = cli("run", str(path), "--dry-run", timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [f"error: {path}: step 's': matrix key 'bench.max_concurency' is not a config key; "
                     f"did you mean 'bench.max_concurrency'?"]
    assert "Traceback" not in done.stderr + done.stdout


def test_resume_dir_must_be_a_run_of_this_runbook(cli, tmp_path: Path) -> None:
    missing = cli("run", "runbooks/tiny_cpu_sweep.yaml", "--resume", str(tmp_path / "nope"), timeout=120)
    assert missing.returncode == 2 and "no such run directory" in missing.stderr
    other = tmp_path / "other"
    other.mkdir()
    (other / "summary.json").write_text(json.dumps({"runbook": "tiny_cpu_eagle_vs_baseline"}))
    wrong = cli("run", "runbooks/tiny_cpu_sweep.yaml", "--resume", str(other), timeout=120)
    assert wrong.returncode == 2
    assert "a run of runbook 'tiny_cpu_eagle_vs_baseline', not 'tiny_cpu_sweep'" in wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_verify_schedule_needs_one_draft(tmp_path: Path) -> None:
    from llama4spec.errors import UserError

    path = tmp_path / "two.yaml"
    path.write_text("""
name: two
overrides: [serve.port=8790]
steps:
  - id: s
    kind: sweep
    verify_schedule: true
    matrix: {draft: [tiny_eagle, tiny_eagle_imperfect], lookahead: [1, 2]}
""")
    with pytest.raises(UserError) as err:
        _plan(path)
    assert any("verify_schedule: needs exactly one draft" in p for p in err.value.problems)
