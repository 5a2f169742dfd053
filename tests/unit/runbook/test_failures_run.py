"""A failed step costs only what depends on it: on a real sweep plan, through the executor (steps
that fail before any engine starts), in the sweep's report, and when the run is resumed. No
engine runs here; tests/engine/test_sweep_failures_engine.py does the same with real vLLM servers."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from llama4spec.runbook import execute
from llama4spec.runbook.failures import blocked_by
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.resume import finished_steps
from llama4spec.runbook.steps.compare import missing_input
from llama4spec.sweep.kind import run_report
from tests.unit.sweep.test_sweep_resume import _point, write_record

SWEEP = """
name: failures_sweep
overrides: [target=tiny, memory=cpu, bench=random_tiny, bench.num_prompts=16, serve.port=8741]
steps:
  - id: sweep
    kind: sweep
    verify_schedule: true
    repeats: 1
    matrix:
      draft: [none, tiny_eagle]
      lookahead: [1, 3]
      bench.max_concurrency: [1, 4]
  - id: compare
    kind: compare
    baseline: sweep-none-c4
    candidate: sweep-tiny_eagle-k3-c4
"""


def _sweep_plan(run_dir: Path, *overrides: str):
    """The tiny CPU sweep's shape (3 servers x 2 concurrencies, a schedule server, a compare), measured once."""
    runbook = run_dir.parent / f"{run_dir.name}.yaml"
    runbook.write_text(SWEEP)
    return plan_file(runbook, lambda name: run_dir, list(overrides))


def _simulate(plan, failing: set[str]) -> dict[str, dict]:
    """Walk the plan as the executor does: blocked steps skipped, ``failing`` ones failed."""
    statuses = {p.id: {"status": "pending"} for p in plan.steps}
    kinds = {p.id: p.kind for p in plan.steps}
    for p in plan.steps:
        why = blocked_by(p, statuses, kinds)
        if why:
            statuses[p.id] = {"status": "skipped", "reason": why}
        else:
            statuses[p.id] = {"status": "failed" if p.id in failing else "done"}
    return statuses


def test_a_failed_server_of_a_sweep_costs_only_its_own_points(tmp_path: Path) -> None:
    plan = _sweep_plan(tmp_path)
    st = _simulate(plan, {"sweep-tiny_eagle-k1"})
    group = [p.id for p in plan.steps if p.step.server == "sweep-tiny_eagle-k1"]
    assert sorted(group) == ["sweep-tiny_eagle-k1-c1", "sweep-tiny_eagle-k1-c4", "sweep-tiny_eagle-k1-stop"]
    for sid in group:
        assert st[sid] == {"status": "skipped", "reason": "server 'sweep-tiny_eagle-k1' failed"}
    others = [p.id for p in plan.steps if p.id not in group and p.id != "sweep-tiny_eagle-k1"]
    assert all(st[sid]["status"] == "done" for sid in others), {s: st[s] for s in others}
    assert st["sweep-tiny_eagle-k3"]["status"] == "done"  # the next group, after a skipped stop
    assert st["sweep"]["status"] == st["compare"]["status"] == "done"


def test_compare_is_skipped_when_its_candidate_group_failed(tmp_path: Path) -> None:
    st = _simulate(_sweep_plan(tmp_path), {"sweep-tiny_eagle-k3"})
    assert st["compare"] == {"status": "skipped", "reason": "candidate 'sweep-tiny_eagle-k3-c4' was skipped "
                                                           "(server 'sweep-tiny_eagle-k3' failed)"}
    assert st["sweep-schedule"]["status"] == "done" and st["sweep"]["status"] == "done"


def test_a_failed_point_leaves_its_servers_other_points(tmp_path: Path) -> None:
    st = _simulate(_sweep_plan(tmp_path), {"sweep-none-c1"})
    assert st["sweep-none-c4"]["status"] == st["sweep-none-stop"]["status"] == "done"
    assert [s for s, e in st.items() if e["status"] != "done"] == ["sweep-none-c1"]


# -- the executor, with steps that fail on their input before any engine starts -------------------
def _offline_runbook(tmp_path: Path) -> Path:
    bad = tmp_path / "prompts.jsonl"
    bad.write_text('{"prompt": "w4 w5 w6"}\n{"prompt": \n')
    runbook = tmp_path / "two_failures.yaml"
    runbook.write_text(f"""
name: two_failures
overrides: [target=tiny, draft=none, memory=cpu, dataset=jsonl, 'dataset.path={bad}']
steps:
  - {{id: first, kind: offline}}
  - {{id: after_first, kind: offline, needs: [first]}}
  - {{id: second, kind: offline}}
""")
    return runbook


def _execute(tmp_path: Path, stop_on_error: bool) -> tuple[int, dict, str, str]:
    run_dir = tmp_path / ("stopped" if stop_on_error else "run")
    plan = plan_file(_offline_runbook(tmp_path), lambda name: run_dir, [])
    console = Console(record=True, width=160, file=io.StringIO())
    code = execute.Run(plan, console, environ={}, stop_on_error=stop_on_error).execute()
    status = json.loads((run_dir / "status.json").read_text())
    return code, {s["id"]: s for s in status["steps"]} | {"": status}, (run_dir / "summary.md").read_text(), \
        console.export_text()


def test_the_executor_runs_what_does_not_depend_on_a_failure(tmp_path: Path) -> None:
    code, steps, md, out = _execute(tmp_path, stop_on_error=False)
    assert code == 1 and steps[""]["status"] == "failed"
    assert steps["first"]["status"] == "failed" and "prompts.jsonl:2" in steps["first"]["error"]
    assert steps["after_first"] == {"id": "after_first", "kind": "offline", "status": "skipped",
                                    "reason": "step 'first' failed"}
    assert steps["second"]["status"] == "failed"  # ran: it does not depend on 'first'
    assert "step 'first' failed:" in out and "step 'second' failed:" in out and "skipped: step 'first' failed" in out
    assert "## Failures" in md and "- first (offline) failed: " in md and "- second (offline) failed: " in md
    assert "- skipped (step 'first' failed): after_first" in md


def test_stop_on_error_stops_at_the_first_failure(tmp_path: Path) -> None:
    code, steps, md, out = _execute(tmp_path, stop_on_error=True)
    assert code == 1 and steps[""]["status"] == "failed"
    assert steps["first"]["status"] == "failed"
    for sid in ("after_first", "second"):
        assert steps[sid]["status"] == "skipped"
        assert steps[sid]["reason"] == "the run stopped at step 'first' (--stop-on-error)"
    assert "step 'second' failed" not in out


# -- the sweep's report over the points that exist -------------------------------------------------
def test_the_report_is_written_from_the_measured_points_and_says_why_others_are_missing(tmp_path: Path) -> None:
    plan = _sweep_plan(tmp_path)
    lost = {"sweep-tiny_eagle-k1-c1", "sweep-tiny_eagle-k1-c4", "sweep-none-c4"}
    for p in plan.steps:
        if p.kind == "bench" and p.id not in lost and p.step.server != "sweep-schedule":
            write_record(p, *_point(p))
    failures = {"sweep-tiny_eagle-k1-c1": "skipped: server 'sweep-tiny_eagle-k1' failed",
                "sweep-tiny_eagle-k1-c4": "skipped: server 'sweep-tiny_eagle-k1' failed",
                "sweep-none-c4": "failed: the benchmark exited with code 1"}
    console = Console(record=True, width=140, file=io.StringIO())
    text, record = run_report(plan, plan.get("sweep"), console, failures)
    assert "- sweep-tiny_eagle-k1-c1: skipped: server 'sweep-tiny_eagle-k1' failed" in text
    assert "- sweep-none-c4: failed: the benchmark exited with code 1" in text
    assert "- sweep-schedule-c1: no record" in text  # not in the failures given: no reason known
    assert record["not_measured"]["sweep-none-c4"] == failures["sweep-none-c4"]
    files = plan.get("sweep").artifacts
    assert "not measured:" in files["report"].read_text()
    for stem in ("acceptance_by_position", "throughput_vs_concurrency", "speedup"):
        assert files[stem].read_bytes().startswith(b"\x89PNG")
    analysis = json.loads(files["analysis"].read_text())
    by_c = {a["concurrency"]: a for a in analysis["concurrency"]}
    assert by_c[4]["baseline_output_throughput"] is None  # no baseline at c=4: no speedup, no crash
    assert by_c[1]["best"] in {"sweep-none-c1", "sweep-tiny_eagle-k3-c1"}


def test_compare_names_a_missing_record(tmp_path: Path) -> None:
    plan = _sweep_plan(tmp_path)
    compare = plan.get("compare")
    assert missing_input(plan, compare) == f"the baseline record {compare.inputs['baseline']} is missing"


# -- resuming a run that had failures ----------------------------------------------------------------
def test_resume_retries_exactly_the_failed_and_missing_points_and_their_servers(tmp_path: Path) -> None:
    """An earlier run: server k1 failed (no records), point none-c4 failed (a record that does not
    count), the schedule's server never ran; the rest was measured."""
    plan = _sweep_plan(tmp_path)
    for p in plan.steps:
        if p.kind != "bench" or p.step.server in ("sweep-tiny_eagle-k1", "sweep-schedule"):
            continue
        if p.id == "sweep-none-c4":
            p.artifacts["record"].parent.mkdir(parents=True, exist_ok=True)
            p.artifacts["record"].write_text(json.dumps({"argv": p.argv, "returncode": 1}))
        else:
            write_record(p, *_point(p))
    done = finished_steps(plan)
    rerun = [p.id for p in plan.steps if p.id not in done and p.kind in ("serve", "bench", "stop")]
    assert rerun == ["sweep-none", "sweep-none-c4", "sweep-none-stop",
                     "sweep-tiny_eagle-k1", "sweep-tiny_eagle-k1-c1", "sweep-tiny_eagle-k1-c4", "sweep-tiny_eagle-k1-stop",
                     "sweep-schedule", "sweep-schedule-c1", "sweep-schedule-c4", "sweep-schedule-stop"]
    assert {"sweep-none-c1", "sweep-tiny_eagle-k3", "sweep-tiny_eagle-k3-c1", "sweep-tiny_eagle-k3-stop"} <= set(done)


def test_resume_measures_again_when_a_servers_command_changed(tmp_path: Path) -> None:
    """The benchmark command does not show every server setting (the draft, the batch limit): the
    earlier run's plan.json does."""
    plan = _sweep_plan(tmp_path)
    for p in plan.steps:
        if p.kind == "bench" and p.step.server != "sweep-schedule":
            write_record(p, *_point(p))
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_record()))
    assert len(finished_steps(_sweep_plan(tmp_path))) == 12  # 6 points, their 3 servers and 3 stops
    changed = _sweep_plan(tmp_path, "memory.max_num_seqs=8")
    assert [p.argv for p in changed.steps if p.kind == "bench"] == [p.argv for p in plan.steps if p.kind == "bench"]
    assert finished_steps(changed) == {}


class _Dying:
    """A server handle whose process is seen gone after a few looks (as the watcher lags its death)."""

    def __init__(self, looks: int | None) -> None:
        self.looks = looks

    def alive(self) -> bool:
        if self.looks is None:
            return True
        self.looks -= 1
        return self.looks > 0


def test_a_benchmark_failing_as_its_server_dies_waits_to_see_it_gone() -> None:
    from llama4spec.runbook.execute import server_survived
    from tests.helpers import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing answers /health
    assert server_survived(_Dying(looks=3), url) is False  # seen gone on the third look: its benches are skipped
    assert server_survived(_Dying(looks=None), url, within_s=0.3) is True  # running, not answering: not declared gone
