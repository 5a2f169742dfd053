"""A breakeven step's ``draft_from``: a draft measured earlier by this tool (a bench step's directory
or record, a sweep's sweep.json) read back at plan time and placed on the map as the draft measured
beside it is: its acceptance length from vLLM's counters as recorded, the map's prediction there,
its headroom and what limits it; the self-check where the record has a speedup. Bad input: one line
each, exit 2, nothing started. The records are built as a run writes them: the bench record's shape
(``results.bench``) and the step's config.yaml composed as the tiny break-even runbook composes it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from rich.console import Console

from llama4spec.breakeven import tables as breakeven_report
from llama4spec.breakeven.map_fit import Given, Range, Runs, build
from llama4spec.stats.noise import prior as known_noise
from llama4spec.config.compose import compose_config
from llama4spec.errors import UserError
from llama4spec.results.acceptance import AcceptanceCounters
from llama4spec.results.bench import BenchRecord
from llama4spec.results.provenance import public_config
from llama4spec.runbook.plan import plan_file
from tests.helpers import REPO

TINY = ["target=tiny", "memory=cpu", "bench=random_tiny"]
RUNBOOK = """name: be
overrides: [target=tiny, memory=cpu, bench=random_tiny, serve.port=8796]
steps:
  - id: breakeven
    kind: breakeven
    overrides: [draft=tiny_eagle_imperfect]
    lookaheads: [1, 3]
    concurrencies: [1, 4]
    grid: 2
    place: false
    draft_from: {path}
"""


def _bench_dir(run_dir: Path, sid: str, *overrides: str, accepted=(150, 156, 144), drafts: int = 64,
               throughputs=(400.0, 410.0, 395.0)) -> Path:
    """A bench step's directory as a run leaves it: record.json (3 counted runs, each with its counters)
    and config.yaml (the step's composed config)."""
    where = run_dir / sid
    where.mkdir(parents=True)
    cfg = compose_config([*TINY, *overrides])
    (where / "config.yaml").write_text(OmegaConf.to_yaml(public_config(cfg.raw)))
    k = cfg.cfg.lookahead if cfg.cfg.draft.method else None
    runs = [BenchRecord(sid, returncode=0, lookahead=k,
                        acceptance=AcceptanceCounters(drafts, drafts * (k or 1), a, []) if k else None,
                        result={"completed": 8, "output_throughput": t, "max_concurrency": cfg.cfg.bench.max_concurrency})
            for a, t in zip(accepted, throughputs)]
    record = BenchRecord.of_runs(sid, runs, lookahead=k)
    if all(a <= (k or 1) * drafts for a in accepted):
        record.write(where / "record.json")
    else:  # counters no run can have: the writer refuses them, so they are written as damage would leave them
        (where / "record.json").write_text(json.dumps(record.to_dict()))
    return where


def _plan(tmp_path: Path, path: Path | str):
    rb = tmp_path / "be.yaml"
    rb.write_text(RUNBOOK.format(path=path))
    return plan_file(rb, lambda name: tmp_path / "runs" / name, [])


def test_a_bench_step_directory_is_read_with_its_counters_and_config(tmp_path):
    where = _bench_dir(tmp_path / "old", "bench_eagle", "draft=tiny_eagle_imperfect", "lookahead=3",
                       "bench.max_concurrency=4")
    for given_as in (where, where / "record.json"):
        plan = _plan(tmp_path, given_as)
        (g,) = plan.get("breakeven").step.keys.given
        assert (g.lookahead, g.concurrency, g.speedup) == (3, 4, None)
        assert g.acceptance == (1 + 150 / 64, 1 + 156 / 64, 1 + 144 / 64)  # 1 + accepted / drafts, per run
        assert g.label == "tiny_eagle_imperfect (bench_eagle)"


def test_the_dry_run_says_where_the_draft_comes_from(cli, tmp_path):
    where = _bench_dir(tmp_path / "old", "bench_eagle", "draft=tiny_eagle_imperfect", "lookahead=1",
                       "bench.max_concurrency=1", accepted=(40, 41, 39))
    rb = tmp_path / "be.yaml"
    rb.write_text(RUNBOOK.format(path=where))
    done = cli("run", rb, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    assert (f"    the draft from {where}: tiny_eagle_imperfect (bench_eagle) at k=1, concurrency 1, acceptance "
            f"length 1.62 (vLLM's counters, 3 run(s)): placed on the map") in done.stdout
    assert f"    draft_from: {where}" in done.stdout


def _sweep_json(run_dir: Path, rows: list[dict], concurrency: int = 4) -> Path:
    path = run_dir / "sweep" / "sweep.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"concurrency": [{"concurrency": concurrency, "rows": rows}]}))
    return path


def test_a_sweep_json_places_its_drafts_at_the_maps_points_with_their_recorded_speedup(tmp_path):
    run = tmp_path / "old"
    _bench_dir(run, "sweep-k3-c4", "draft=tiny_eagle_imperfect", "lookahead=3", "bench.max_concurrency=4")
    _bench_dir(run, "sweep-k2-c4", "draft=tiny_eagle_imperfect", "lookahead=2", "bench.max_concurrency=4",
               accepted=(100, 110, 90))
    path = _sweep_json(run, [
        {"id": "sweep-none-c4", "draft": "none", "lookahead": None, "speedup": 1.0},
        {"id": "sweep-k3-c4", "draft": "tiny_eagle_imperfect", "lookahead": 3, "speedup": 1.6,
         "speedup_interval": {"ratio": 1.6, "low": 1.3, "high": 1.9, "confidence": 0.95}},
        {"id": "sweep-k2-c4", "draft": "tiny_eagle_imperfect", "lookahead": 2, "speedup": 1.4},  # k=2: not on the map
    ])
    (g,) = _plan(tmp_path, path).get("breakeven").step.keys.given
    assert (g.lookahead, g.concurrency, g.speedup) == (3, 4, Range(1.6, 1.3, 1.9))


def _problems(tmp_path: Path, path) -> list[str]:
    with pytest.raises(UserError) as err:
        _plan(tmp_path, path)
    return [line for line in err.value.problems if "draft_from" in line]


def test_bad_input_is_one_line_exit_2_and_nothing_starts(cli, tmp_path):
    rb = tmp_path / "be.yaml"
    rb.write_text(RUNBOOK.format(path=tmp_path / "nowhere"))
    done = cli("run", rb, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "[1/" not in done.stdout, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "draft_from" in line and "does not exist" in line and "bench step's directory" in line


def test_bad_records_are_refused_in_one_line_each_before_anything_starts(tmp_path):
    other = _bench_dir(tmp_path / "a", "b", "draft=tiny_eagle_imperfect", "lookahead=3", "target.model=/elsewhere/scout")
    (line,) = _problems(tmp_path, other)
    assert "measured target /elsewhere/scout, not this map's" in line and "same target" in line
    k5 = _bench_dir(tmp_path / "c", "b", "draft=tiny_eagle_imperfect", "lookahead=5")
    (line,) = _problems(tmp_path, k5)
    assert "measured lookahead 5, which is not on the map (lookaheads 1, 3)" in line
    none = _bench_dir(tmp_path / "d", "b", "draft=none")
    (line,) = _problems(tmp_path, none)
    assert "holds no acceptance from vLLM's counters" in line
    synthetic = _bench_dir(tmp_path / "e", "b", "draft=tiny_eagle_imperfect", "lookahead=3",
                           "draft.synthetic_acceptance_length=2.0")
    (line,) = _problems(tmp_path, synthetic)
    assert "measured synthetic acceptance, not a draft" in line
    foreign = tmp_path / "f" / "record.json"
    foreign.parent.mkdir()
    foreign.write_text(json.dumps({"output_throughput": 1.0}))
    (line,) = _problems(tmp_path, foreign)
    assert "not a llama4spec bench record" in line
    hostile = _sweep_json(tmp_path / "g", [{"id": "../../etc", "draft": "x", "lookahead": 3}])
    (line,) = _problems(tmp_path, hostile)
    assert "'concurrency.0.rows.0.id' is '../../etc', not a step id" in line


def test_a_sweep_row_with_an_acceptance_length_above_k_plus_1_is_one_line_naming_the_field(tmp_path, cli):
    path = _sweep_json(tmp_path / "old", [{"id": "sweep-k3-c4", "draft": "tiny_eagle_imperfect", "lookahead": 3,
                                           "acceptance_length": 4.5}])
    (line,) = _problems(tmp_path, path)
    assert (f"draft_from {path}: 'concurrency.0.rows.0.acceptance_length' is 4.5, not an acceptance length from 1 "
            f"to the lookahead + 1") in line
    done = cli("breakeven", *TINY, "--lookaheads", "1,3", "--concurrencies", "1,4", "--draft-from", path, "--dry-run")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "'concurrency.0.rows.0.acceptance_length'" in done.stderr


@pytest.mark.parametrize("accepted, said", [
    ((64_000_000_000,) * 3, "'acceptance.mean_acceptance_length' is 1000000001.0, not an acceptance length from 1 to 65"),
    ((150, 193, 144), "'runs[1].acceptance.acceptance_rate' is 1.0052083333333333, not a share from 0 to 1")])
def test_an_acceptance_length_outside_1_to_k_plus_1_is_refused_naming_the_record(tmp_path, cli, accepted, said):
    where = _bench_dir(tmp_path / "old", "bench_eagle", "draft=tiny_eagle_imperfect", "lookahead=3",
                       "bench.max_concurrency=4", accepted=accepted)  # 64 drafts of 3 tokens a run
    (line,) = _problems(tmp_path, where)
    assert line.startswith(f"{tmp_path / 'be.yaml'}: step 'breakeven': draft_from {where / 'record.json'}: {said}; "), line
    rb = tmp_path / "be.yaml"
    done = cli("run", rb, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 2 and done.stdout == "" and done.stderr.strip().splitlines() == [f"error: {line}"]
    done = cli("breakeven", *TINY, "--lookaheads", "1,3", "--concurrencies", "1,4", "--draft-from", where, "--dry-run")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"error: {line.replace(str(rb), '<breakeven>')}"]


def test_an_acceptance_length_of_exactly_k_plus_1_is_read(tmp_path):
    where = _bench_dir(tmp_path / "old", "bench_eagle", "draft=tiny_eagle_imperfect", "lookahead=3",
                       "bench.max_concurrency=4", accepted=(192, 0, 100))
    (g,) = _plan(tmp_path, where).get("breakeven").step.keys.given
    assert g.acceptance == (4.0, 1.0, 1 + 100 / 64)


def _map(given):
    base = [Runs(1, (100.0, 104.0, 98.0), label="none")]
    synthetic = [Runs(1, (s, s * 1.03, s * 0.98), 3, length, (length,) * 3, f"L{length}")
                 for length, s in ((1.0, 70.0), (2.0, 92.0), (3.0, 112.0), (4.0, 130.0))]
    return build(base, synthetic, noise=known_noise(0.05, 0.0, "test"), given=given)


def test_a_given_draft_is_placed_as_the_draft_beside_the_map_is():
    plain_ = Given(3, 1, (2.4, 2.5, 2.45), "head (bench)")
    m = _map([plain_])
    (curve,) = m.curves
    (p,) = curve.placements
    assert p.given and p.measured is None and p.agrees is None and p.difference is None
    assert 0.9 < p.predicted.value < 1.1 and p.headroom.value is not None and p.limit in ("pays", "draft quality")
    text = breakeven_report.markdown(m, None)
    assert "head (bench) (given)" in text and "self-check: not made" in text


def test_a_given_speedup_is_self_checked_against_the_prediction_at_its_length():
    near = Given(3, 1, (2.45,) * 3, "near", Range(1.0, 0.9, 1.1))
    far = Given(3, 1, (2.45,) * 3, "far", Range(2.0, 1.9, 2.1))
    m = _map([near, far])
    agrees = {p.label: p.agrees for p in m.curves[0].placements}
    assert agrees == {"near": True, "far": False}
    assert breakeven_report.verdict(m).startswith("self-check: FAILED at 1 of 2 placements: far")
    console = Console(record=True, width=250, file=io.StringIO())
    breakeven_report.render(console, m)
    assert "far (given)" in console.export_text()


def test_a_given_draft_off_the_maps_curves_is_named_in_the_notes():
    m = _map([Given(3, 8, (2.0,), "elsewhere")])
    assert m.curves[0].placements == () and any("elsewhere: no curve at k=3, c=8" in n for n in m.notes)


def test_the_shipped_tiny_map_is_unchanged_without_draft_from():
    plan = plan_file(REPO / "runbooks" / "tiny_cpu_breakeven.yaml", lambda name: Path("runs/x"), [])
    assert plan.get("breakeven").step.keys.given == [] and "draft_from" not in plan.get("breakeven").inputs


def test_a_recorded_tiny_sweep_places_its_fixed_lookahead_points_with_their_speedups(tmp_path):
    from tests.recorded_runs import finished_run

    run = finished_run(tmp_path / "sweep-run")
    analysis = json.loads((run / "sweep" / "sweep.json").read_text())
    recorded = {r["id"]: r for a in analysis["concurrency"] for r in a["rows"]}
    given = {g.label.split("(")[1].rstrip(")"): g for g in
             _plan(tmp_path, run / "sweep" / "sweep.json").get("breakeven").step.keys.given}
    assert {"sweep-tiny_eagle-k1-c1", "sweep-tiny_eagle-k3-c1", "sweep-tiny_eagle-k1-c4",
            "sweep-tiny_eagle-k3-c4"} <= set(given)
    for sid, g in given.items():
        iv = recorded[sid]["speedup_interval"]
        assert g.speedup == Range(iv["ratio"], iv["low"], iv["high"]) and g.acceptance == (float(g.lookahead + 1),) * 3
