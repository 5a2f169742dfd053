"""``design: interleaved``: no speculation stays up beside each candidate on disjoint devices, their
runs alternate, and each speedup is the paired t interval of the mean log ratio of back-to-back
runs. Planned and analysed here from records written as a run leaves them; no engine runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from llama4spec.engine.devices import split
from llama4spec.errors import UserError
from llama4spec.results import bench as bench_record
from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.groups import plan_groups
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.resume import finished_steps
from llama4spec.stats.ratio import paired_ratio, welch_ratio
from llama4spec.stats.statistic import LogRatio, PairedLogRatio
from llama4spec.stats.speedup_model import analyse
from llama4spec.analysis.points import point
from llama4spec.stats.compare import compare
from llama4spec.stats.noise import prior as known_noise
from llama4spec.sweep.planned import design_of
from tests.helpers import REPO, run_cli

SHIPPED = REPO / "runbooks" / "tiny_cpu_interleaved.yaml"
BASE, CAND = "sweep-none-k2", "sweep-tiny_eagle_imperfect-k2"


def _runbook(tmp_path: Path, **keys) -> Path:
    data = yaml.safe_load(SHIPPED.read_text())
    data["steps"][0].update(keys)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "interleaved.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _plan(tmp_path: Path, monkeypatch, cores: str = "0-1", **keys):
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", cores)
    return plan_file(_runbook(tmp_path, **keys), lambda name: tmp_path / "run")


def _step(plan, sid: str):
    return next(p for p in plan.steps if p.id == sid)


# -- the statistic ----------------------------------------------------------------------------------

def test_the_paired_statistic_is_t_on_the_mean_log_ratio() -> None:
    a, b = np.log([110.0, 121.0, 99.0]), np.log([100.0, 105.0, 95.0])
    d = a - b
    est = PairedLogRatio().compare(a, b)
    assert math.isclose(float(est.center), d.mean())
    assert math.isclose(float(est.se), math.sqrt(d.var(ddof=1) / 3)) and float(est.df) == 2
    with_start = PairedLogRatio(known_noise(0.1, 0.0, 'test')).compare(a, b)  # each arm one server start: 2 x 0.1^2 more
    assert math.isclose(float(with_start.se) ** 2, d.var(ddof=1) / 3 + 2 * 0.01)


def test_pairs_cancel_drift_that_welch_counts_as_noise() -> None:
    """Both arms drift the same way over the runs (the machine slows down): the paired interval is
    narrow and decides; Welch's, on the same runs, spans 1."""
    drift = np.array([1.0, 0.8, 0.6, 0.45, 0.35])
    base, cand = 100 * drift, 112 * drift * np.array([1.0, 1.01, 0.99, 1.0, 1.005])
    paired, welch = paired_ratio(cand, base), welch_ratio(cand, base)
    assert paired.method == "paired" and welch.method == "welch"
    assert paired.low > 1.05 and welch.low < 1 < welch.high
    assert paired.high - paired.low < (welch.high - welch.low) / 10


def test_compare_tests_back_to_back_pairs_by_the_paired_t_in_one_holm_family() -> None:
    drift = np.array([1.0, 0.7, 0.5, 0.9])
    base, k1, k3 = list(100 * drift), list(120 * drift), [130.0, 70.0, 95.0, 88.0]
    plain = compare({"base": base, "k1": k1, "k3": k3}, noise=known_noise(0.0, 0.0, 'test'))
    paired = compare({"base": base, "k1": k1, "k3": k3}, noise=known_noise(0.0, 0.0, 'test'),
                     back_to_back={("k1", "base"): (k1, base)})
    assert plain[("k1", "base")].method == "welch" and plain[("k1", "base")].verdict == "undecided"
    assert paired[("k1", "base")].method == "paired" and paired[("k1", "base")].verdict == "faster"
    assert paired[("base", "k1")].verdict == "slower"  # mirrored
    assert paired[("k3", "base")].method == "welch"  # not measured in pairs
    assert paired[("k1", "base")].hypotheses == plain[("k1", "base")].hypotheses == 6


def test_the_paired_statistic_is_a_logratio_the_error_control_takes() -> None:
    assert isinstance(PairedLogRatio(), LogRatio) and PairedLogRatio.method == "paired"


# -- devices ----------------------------------------------------------------------------------------

def test_two_servers_split_the_devices_or_say_why_they_do_not_fit() -> None:
    cpu = split("cpu", 1, 1, {"VLLM_CPU_OMP_THREADS_BIND": "0-3"})
    assert cpu.why is None and cpu.env(0, 1) == {"VLLM_CPU_OMP_THREADS_BIND": "0-1"}
    assert cpu.env(1, 2) == {"VLLM_CPU_OMP_THREADS_BIND": "2|3"} and cpu.text(1) == "cores 2-3"
    assert split("cpu", 1, 1, {"VLLM_CPU_OMP_THREADS_BIND": "0|1"}).sets == ((0,), (1,))
    one = split("cpu", 1, 1, {"VLLM_CPU_OMP_THREADS_BIND": "3"})
    assert one.sets == () and "need 2 cores; this process has 1" in one.why
    gpu = split("cuda", 4, 8, {})
    assert gpu.env(1, 4) == {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    scout = split("cuda", 4, 4, {})  # Scout TP 4 on a 4-GPU node: two copies do not fit
    assert scout.why == "two servers of 4 GPUs each need 8 GPUs; this node has 4"
    assert split("cuda", 2, 8, {"CUDA_VISIBLE_DEVICES": "1,3,5"}).why is not None


# -- planning ---------------------------------------------------------------------------------------

def test_the_baseline_stays_up_beside_each_candidate_on_the_other_half(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch)
    order = [p.id for p in plan.steps]
    assert order == [BASE, CAND, f"{CAND}-c1", f"{CAND}-c4", f"{CAND}-stop", f"{BASE}-c1", f"{BASE}-c4",
                     f"{BASE}-stop", "sweep", "compare"]
    base, cand = _step(plan, BASE), _step(plan, CAND)
    assert base.env["VLLM_CPU_OMP_THREADS_BIND"] == "0" and cand.env["VLLM_CPU_OMP_THREADS_BIND"] == "1"
    assert cand.url.endswith(":8746") and base.url.endswith(":8745")
    assert _step(plan, f"{CAND}-c4").step.keys.pair_with == f"{BASE}-c4"
    assert _step(plan, f"{BASE}-c1").step.keys.paired
    assert _step(plan, "sweep").step.expanded.points[:2] == [f"{BASE}-c1", f"{BASE}-c4"]
    (group,) = plan_groups(plan)  # one group: both servers, twice the devices
    assert group.name == BASE and CAND in group.steps and group.shape.per_node == 2
    swapped = _plan(tmp_path / "swap", monkeypatch, swap_devices=True)
    assert _step(swapped, BASE).env["VLLM_CPU_OMP_THREADS_BIND"] == "1"
    assert _step(swapped, CAND).env["VLLM_CPU_OMP_THREADS_BIND"] == "0"


def test_where_two_copies_do_not_fit_the_sweep_falls_back_and_says_so(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch, cores="0")
    assert [p.id for p in plan.steps][:3] == [BASE, f"{BASE}-c1", f"{BASE}-c4"]  # the sequential order
    design = design_of(_step(plan, "sweep").step)
    assert design["design"] == "sequential" and "this process has 1" in design["fallback"]
    assert all(not getattr(p.step.keys, "beside", None) for p in plan.steps)
    shown = run_cli("run", str(_runbook(tmp_path, design="interleaved")), "--dry-run",
                    env={"VLLM_CPU_OMP_THREADS_BIND": "0"})
    assert shown.returncode == 0, shown.stderr
    assert "design: sequential (interleaved was asked for, but two servers of 1 rank each need 2 cores" in shown.stdout
    record = json.loads((tmp_path / "run" / "plan.json").read_text()) if (tmp_path / "run" / "plan.json").exists() else None
    assert record is None  # a plan alone writes nothing


@pytest.mark.parametrize("design", ["interleaved", "auto"])
def test_interleaved_keys_on_a_sweep_measured_sequentially_are_said_unused(cli, tmp_path, monkeypatch, design) -> None:
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0")  # interleaved: two copies do not fit; auto: a CPU
    rb = _runbook(tmp_path, design=design, gap_s=5, swap_devices=True)
    design_ = design_of(_step(plan_file(rb, lambda name: tmp_path / "run"), "sweep").step)
    said = ("gap_s: 5, swap_devices: true act only in the interleaved design, and this sweep is measured "
            "sequentially (the design above says why): they are not used")
    assert design_["design"] == "sequential" and design_["unused"] == said
    shown = cli("run", rb, "--dry-run", env={"VLLM_CPU_OMP_THREADS_BIND": "0"})
    assert shown.returncode == 0, shown.stderr
    assert [line.strip() for line in shown.stdout.splitlines() if "not used" in line] == [f"warning: {said}"]
    one = _runbook(tmp_path / "one", design=design, gap_s=3)
    assert design_of(_step(plan_file(one, lambda name: tmp_path / "run"), "sweep").step)["unused"] == (
        "gap_s: 3 acts only in the interleaved design, and this sweep is measured sequentially (the design above "
        "says why): it is not used")


def test_interleaved_keys_at_their_defaults_or_in_use_say_nothing(tmp_path, monkeypatch) -> None:
    assert "unused" not in design_of(_step(_plan(tmp_path / "a", monkeypatch, cores="0"), "sweep").step)
    used = design_of(_step(_plan(tmp_path / "b", monkeypatch, gap_s=5, swap_devices=True), "sweep").step)
    assert used["design"] == "interleaved" and "unused" not in used


def test_a_gpu_node_without_room_for_two_copies_falls_back(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch, overrides=["hardware=h100_80gb", "hardware.devices_per_node=1"])
    design = design_of(_step(plan, "sweep").step)
    assert design["fallback"] == "two servers of 1 GPU each need 2 GPUs; this node has 1"


@pytest.mark.parametrize("keys, message", [
    ({"matrix": {"draft": ["tiny_eagle"], "lookahead": [1, 3]}},
     "design: interleaved: it pairs each candidate with the one server without speculation; the matrix gives 0"),
    ({"design": "alternating"}, "'design' must be one of auto, sequential, interleaved (got 'alternating')"),
    ({"gap_s": -1}, "'gap_s' must be a number of seconds from 0 to 600"),
])
def test_an_interleaved_sweep_that_cannot_be_is_refused_in_one_line(tmp_path, monkeypatch, keys, message) -> None:
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    with pytest.raises(UserError) as err:
        plan_file(_runbook(tmp_path, **keys), lambda name: tmp_path / "run")
    assert any(message in p for p in err.value.problems), err.value.problems


def test_repeats_auto_from_the_command_line_makes_blocks_added_until_decided(tmp_path) -> None:
    done = run_cli("run", str(SHIPPED), "--repeats", "auto", "--dry-run", env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert done.returncode == 0, done.stderr
    assert "design: back-to-back blocks: for each candidate at least 2 blocks, then one more at a time" in done.stdout


# -- records and analysis ---------------------------------------------------------------------------

def _run(x: float, pair: str | None = None) -> BenchRecord:
    return BenchRecord(label="x", returncode=0, result={"output_throughput": x, "completed": 8,
                                                          "max_concurrency": 1}, pair=pair)


def test_a_pair_tag_survives_the_record_and_a_pair_measured_again_replaces_its_runs(tmp_path) -> None:
    record = BenchRecord.of_runs("b", [_run(100, "k1"), _run(90, "k3"), _run(95, "k1")])
    path = tmp_path / "record.json"
    record.write(path)
    again = bench_record.read(path)
    assert [r.pair for r in again.runs] == ["k1", "k3", "k1"] and again.sample_pairs("output_throughput")[1] == "k3"
    assert [r.pair for r in bench_record.without_pair(again, "k1").runs] == ["k3"]
    assert bench_record.without_pair(BenchRecord.of_runs("b", [_run(1, "k1")]), "k1") is None
    bad = json.loads(path.read_text())
    bad["runs"][0]["pair"] = {"not": "a tag"}
    with pytest.raises(UserError) as info:  # its model refuses it, naming the field
        BenchRecord.from_dict(bad)
    assert "'runs[0].pair' is {'not': 'a tag'}" in str(info.value)


def test_the_analysis_pairs_a_candidate_with_the_baseline_runs_tagged_with_it() -> None:
    drift = [1.0, 0.7, 0.5, 0.8]
    base = BenchRecord.of_runs("b", [r for d in drift for r in (_run(100 * d, "c"), _run(90 * d, "other"))])
    cand = BenchRecord.of_runs("c", [_run(125 * d) for d in drift])
    points = [point("b", {"draft": {"method": None}}, base),
              point("c", {"draft": {"method": "eagle", "name": "d"}, "lookahead": 2}, cand)]
    (at,) = analyse(points, noise=known_noise(0.0, 0.0, 'test')).at
    c = at.comparisons[("c", "b")]
    assert c.method == "paired" and c.verdict == "faster" and at.paired
    assert math.isclose(c.ratio, 1.25, rel_tol=1e-9)  # against the runs tagged "c" alone


def test_resume_keeps_the_baseline_while_a_candidate_beside_it_has_work_left(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch)
    for pid in (f"{BASE}-c1", f"{BASE}-c4", f"{CAND}-c1"):
        q = _step(plan, pid)
        BenchRecord.of_runs(pid, [_run(100.0, f"{CAND}-c1")] * 5, argv=q.argv).write(q.artifacts["record"])
    done = finished_steps(plan)
    assert f"{CAND}-c4" not in done and CAND not in done and BASE not in done


def _finished(run_dir: Path, monkeypatch, drift: list[float]) -> None:
    """An interleaved run whose every pair was measured (records as the run leaves them; the
    report made by the executor as a resumed run makes it)."""
    import io

    from rich.console import Console

    from llama4spec.runbook import execute

    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    plan = plan_file(SHIPPED, lambda name: run_dir)
    for c in (1, 4):
        base, cand = _step(plan, f"{BASE}-c{c}"), _step(plan, f"{CAND}-c{c}")

        def run(x: float, pair: str | None = None) -> BenchRecord:
            return BenchRecord(label="x", returncode=0, pair=pair,
                               result={"output_throughput": x, "completed": 16, "max_concurrency": c})

        BenchRecord.of_runs(base.id, [run(100 * c * d, cand.id) for d in drift], argv=base.argv).write(
            base.artifacts["record"])
        BenchRecord.of_runs(cand.id, [run(130 * c * d) for d in drift], argv=cand.argv).write(cand.artifacts["record"])
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "status.json").write_text(json.dumps({"runbook": "tiny_cpu_interleaved"}))
    execute.run(plan, Console(file=io.StringIO()), gate=None, environ={}, resume=True)


def test_two_interleaved_runs_merge_pair_by_pair_with_a_start_each(tmp_path, monkeypatch) -> None:
    """The merge keeps each run's pairs together and counts each directory as a server start of its
    own: two start pairs, so the comparison rests on two back-to-back blocks (each directory's mean
    log ratio, its variance from the components: the between-start term halves)."""
    import io

    from rich.console import Console

    from llama4spec.runbook.merge import rebuild

    _finished(tmp_path / "a", monkeypatch, [1.0, 0.8, 0.6, 0.9, 0.7])
    _finished(tmp_path / "b", monkeypatch, [0.5, 0.45, 0.55, 0.4, 0.5])
    one = json.loads((tmp_path / "a" / "sweep" / "sweep.json").read_text())
    assert one["design"]["design"] == "interleaved"
    rebuild([tmp_path / "a", tmp_path / "b"], tmp_path / "m", Console(file=io.StringIO()))
    merged = json.loads((tmp_path / "m" / "sweep" / "sweep.json").read_text())
    assert merged["design"]["design"] == "interleaved"
    for single, both in zip(one["concurrency"], merged["concurrency"]):
        (a,), (m,) = single["comparisons"], both["comparisons"]
        assert a["method"] == "paired" and m["method"] == "blocks" and m["basis"].startswith("2 blocks: the noise")
        ratio = m["ratio"] if m["first"].startswith(CAND) else 1 / m["ratio"]
        assert math.isclose(ratio, 1.3, rel_tol=1e-9)  # every pair 1.3x, whatever the drift
        width = lambda c: math.log(c["interval"]["high"] / c["interval"]["low"])  # noqa: E731
        # two starts a setting: the between-start part is estimated from them (pooled with the prior)
        assert "estimated from this sweep's starts" in m["noise"]["between"]["source"]
        assert "hardware prior" in a["noise"]["between"]["source"] and math.isfinite(width(m))


def test_a_launcher_dry_run_notes_sequential_sweeps_whose_groups_may_run_beside_each_other() -> None:
    sequential = run_cli("run", "runbooks/tiny_cpu_sweep.yaml", "--parallel", "2", "--dry-run",
                         env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert sequential.returncode == 0, sequential.stderr
    assert "note: sweep 'sweep' measures its 4 servers as separate groups, which may run beside each other" in \
        " ".join(sequential.stdout.split())
    interleaved = run_cli("run", str(SHIPPED), "--parallel", "2", "--dry-run", env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert interleaved.returncode == 0, interleaved.stderr
    assert "separate groups" not in interleaved.stdout and "1 server groups" in interleaved.stdout
    assert "│ 2 CPUs" in interleaved.stdout  # twice one server's cores


def test_a_bind_that_is_no_core_list_falls_back_to_the_affinity() -> None:
    import os

    from llama4spec.engine.devices import cores_given, expand_ranges

    mine = sorted(os.sched_getaffinity(0))
    for bind in ("auto", "nobind", "0-", "x|y", "0-99999999999", ""):
        assert cores_given({"VLLM_CPU_OMP_THREADS_BIND": bind}) == mine, bind
    with pytest.raises(ValueError):
        expand_ranges("0-99999999999")
