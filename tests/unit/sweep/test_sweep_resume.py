"""Resuming a sweep: points already measured in the run directory are skipped, and a server
with nothing left to measure is never started. Records are written here as a finished run
would leave them; no engine runs."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from rich.console import Console

from llama4spec.runbook import execute
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.resume import finished_steps
from tests.helpers import REPO

RUNBOOK = REPO / "runbooks" / "tiny_cpu_sweep.yaml"


def _plan(run_dir: Path, *overrides: str, repeats: int | None = 1):
    """The shipped tiny sweep's plan; one run per point (the records written here hold one)."""
    return plan_file(RUNBOOK, lambda name: run_dir, list(overrides), repeats=repeats)


def _throughput(k: int | None, c: int) -> float:
    """Made-up figures with a shape: speculation helps, less so at higher concurrency."""
    return 100.0 * c ** 0.8 * (1.0 if k is None else (1 + k) / (1 + 0.3 * k * c))


def write_record(planned, k: int | None, c: int, argv: list[str] | None = None) -> None:
    tput = _throughput(k, c)
    drafts = 100
    record = {
        "kind": "llama4spec.bench", "label": planned.id, "argv": planned.argv if argv is None else argv,
        "returncode": 0, "lookahead": k,
        "acceptance": None if k is None else {
            "num_drafts": drafts, "num_draft_tokens": drafts * k, "num_accepted_tokens": drafts * k,
            "accepted_per_pos": [drafts] * k, "mean_acceptance_length": 1.0 + k, "acceptance_rate": 1.0,
            "acceptance_rate_per_position": [1.0] * k},
        "result": {"output_throughput": tput, "mean_tpot_ms": 1000.0 * c / tput, "mean_ttft_ms": 20.0 + c,
                   "max_concurrency": c, "completed": 8, "request_throughput": tput / 32,
                   "total_token_throughput": 1.5 * tput},
    }
    planned.artifacts["record"].parent.mkdir(parents=True, exist_ok=True)
    planned.artifacts["record"].write_text(json.dumps(record))


def _point(planned) -> tuple[int | None, int]:
    cfg = planned.composed.cfg
    return (cfg.lookahead if cfg.draft.method else None), cfg.bench.max_concurrency


def test_finished_points_and_servers_are_found(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    benches = {p.id: p for p in plan.steps if p.kind == "bench"}
    for bid in ("sweep-none-c1", "sweep-none-c4", "sweep-tiny_eagle-k1-c1"):
        write_record(benches[bid], *_point(benches[bid]))
    # measured with another command (a different output length): not this plan's point
    other = list(benches["sweep-tiny_eagle-k1-c4"].argv)
    other[other.index("--output-len") + 1] = "999"
    write_record(benches["sweep-tiny_eagle-k1-c4"], *_point(benches["sweep-tiny_eagle-k1-c4"]), argv=other)
    # a benchmark that failed: measured again
    failed = benches["sweep-tiny_eagle-k3-c1"]
    failed.artifacts["record"].parent.mkdir(parents=True, exist_ok=True)
    failed.artifacts["record"].write_text(json.dumps({"argv": failed.argv, "returncode": 1}))
    done = finished_steps(plan)
    assert sorted(done) == ["sweep-none", "sweep-none-c1", "sweep-none-c4", "sweep-none-stop",
                            "sweep-tiny_eagle-k1-c1"]
    assert done["sweep-none"] is None and done["sweep-none-c4"].result["max_concurrency"] == 4


def test_resumed_run_with_every_point_measured_starts_no_server_and_reports(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    plan = _plan(run_dir)
    for p in plan.steps:
        if p.kind == "bench":
            write_record(p, *_point(p))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "status.json").write_text(json.dumps({"runbook": "tiny_cpu_sweep"}))
    console = Console(record=True, width=140, file=io.StringIO())
    code = execute.run(plan, console, gate=None, environ={}, resume=True)
    assert code == 0
    summary = json.loads((run_dir / "status.json").read_text())
    status = {s["id"]: s for s in summary["steps"]}
    for sid in ("sweep-none", "sweep-tiny_eagle-k1", "sweep-tiny_eagle-k3"):
        assert status[sid]["status"] == "done" and status[sid]["resumed"] is True
        assert not (run_dir / sid / "server.log").exists()  # never launched
    assert status["sweep-none-c4"]["result"]["output_throughput"] == _throughput(None, 4)
    assert status["sweep"]["status"] == "done" and "resumed" not in status["sweep"]
    assert status["compare"]["status"] == "done"
    # the report: the measured best at each concurrency, from the records written above
    analysis = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    by_c = {a["concurrency"]: a for a in analysis["concurrency"]}
    for c in (1, 4):
        ids = [f"sweep-none-c{c}", f"sweep-tiny_eagle-k1-c{c}", f"sweep-tiny_eagle-k3-c{c}"]
        best = max(ids, key=lambda i: _throughput(*_point(plan.get(i))))
        assert by_c[c]["best"] == best and by_c[c]["best_lookahead"] == _point(plan.get(best))[0]
    assert by_c[1]["best_lookahead"] == 3 and by_c[4]["best_lookahead"] is None  # the shape of _throughput
    assert analysis["pays_up_to"] == 1 and analysis["stops_paying_at"] == 4
    (schedule,) = analysis["schedules"]  # k=3 at concurrency 1, no speculation at 4: split at their mean
    assert schedule["schedule"] == [[1, 2, 3], [3, 4, 0]]
    assert schedule["override"] == "draft=tiny_eagle lookahead=3 draft.lookahead_schedule=[[1,2,3],[3,4,0]]"
    md = (run_dir / "summary.md").read_text()
    assert "| sweep-none-c4 | bench | done (earlier run) |" in md and "| sweep | sweep | done |" in md
    assert "draft.lookahead_schedule=[[1,2,3],[3,4,0]]" in md and "approximates the server's running batch size" in md
    for png in ("sweep/acceptance_by_position.png", "sweep/throughput_vs_concurrency.png", "sweep/speedup.png"):
        assert f"]({png})" in md and (run_dir / png).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    import csv

    with open(run_dir / "sweep" / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and {r["run"] for r in rows} == {"0"}  # a row per point and run: one run each here
    row = next(r for r in rows if r["id"] == "sweep-tiny_eagle-k3-c1")
    assert row["config.draft.name"] == "tiny_eagle" and row["config.lookahead"] == "3"
    assert float(row["result.output_throughput"]) == _throughput(3, 1)
    text = console.export_text()
    assert text.count("already measured in this run directory; skipped") == 16  # 8 benches, 4 serve (the schedule's too), 4 stop
    assert "█" in text and "<- recommended" in text


def test_the_run_directory_may_be_named_relatively_or_absolutely(tmp_path: Path) -> None:
    relative = Path(os.path.relpath(tmp_path))
    assert not relative.is_absolute()
    for p in _plan(relative).steps:
        if p.kind == "bench":
            write_record(p, *_point(p))
    assert len(finished_steps(_plan(tmp_path.resolve()))) == 16


def test_resumed_run_changed_by_an_override_measures_again(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    for p in plan.steps:
        if p.kind == "bench":
            write_record(p, *_point(p))
    assert len(finished_steps(plan)) == 16
    assert finished_steps(_plan(tmp_path, "bench.output_len=16")) == {}


def test_run_directories_of_the_earlier_layout_still_resume(tmp_path: Path) -> None:
    """Before per-step directories, records lay beside summary.json as <step>.json."""
    from llama4spec.runbook.resume import resume_dir
    from llama4spec.runbook.rundir import legacy_bench_record

    plan = _plan(tmp_path)
    (tmp_path / "summary.json").write_text(json.dumps({"runbook": "tiny_cpu_sweep", "steps": []}))
    assert resume_dir(tmp_path, "tiny_cpu_sweep") == tmp_path
    for p in plan.steps:
        if p.kind == "bench":
            write_record(p, *_point(p))
            p.artifacts["record"].rename(legacy_bench_record(tmp_path, p.id))
    assert len(finished_steps(plan)) == 16


def test_a_point_with_fewer_repeats_than_asked_is_measured_again(tmp_path: Path) -> None:
    plan = _plan(tmp_path, repeats=None)
    bench = next(p for p in plan.steps if p.kind == "bench")
    write_record(bench, *_point(bench))  # one run; the shipped sweep asks for at least 2 (repeats: auto)
    assert bench.step.keys.repeats == 2 and bench.id not in finished_steps(plan)
    assert bench.id in finished_steps(_plan(tmp_path, repeats=1))
