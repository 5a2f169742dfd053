"""Capacity steps without an engine: expansion into serve/search/stop per server, the probes'
commands, the SLO resolved from a bench step, resuming from search.json, the report, and bad input
(one line each, exit 2, nothing started)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec.errors import UserError
from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.render import plan_text
from llama4spec.capacity import search as search_step
from llama4spec.capacity import probing as cap
from llama4spec.tiny.paths import tiny_root
from tests.recorded_runs import simulated_search
from tests.helpers import REPO

RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")
GOLDEN = REPO / "tests" / "golden"
TINY = REPO / "runbooks" / "tiny_cpu_capacity.yaml"
SCOUT = REPO / "runbooks" / "llama4_scout_eagle_capacity.yaml"


def _plan(path: Path, *overrides: str, run_dir: Path = RUN_DIR):
    return plan_file(path, lambda name: run_dir, list(overrides))


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _spec(argv: list[str]) -> dict | None:
    return json.loads(_flag(argv, "--speculative-config")) if "--speculative-config" in argv else None


@pytest.mark.parametrize("name,build", [("tiny_cpu_capacity", "cpu"), ("llama4_scout_eagle_capacity", "gpu")])
def test_dry_run_matches_golden(name: str, build: str, use_build) -> None:
    use_build(build)
    console = Console(record=True, width=100, file=io.StringIO())
    plan_text(console, _plan(REPO / "runbooks" / f"{name}.yaml"))
    text = console.export_text().replace(str(tiny_root()), "<tiny>").replace(sys.executable, "<python>")
    golden = GOLDEN / f"runbook_{name}.dry_run.txt"
    assert text.replace(str(REPO) + "/", "") == golden.read_text()


def test_tiny_capacity_is_a_server_a_search_and_a_stop_per_setting_after_its_baseline() -> None:
    plan = _plan(TINY)
    ids = [p.id for p in plan.steps]
    assert ids == ["baseline", "bench_baseline", "stop_baseline",
                   "capacity-none", "capacity-none-search", "capacity-none-stop",
                   "capacity-tiny_eagle-k1", "capacity-tiny_eagle-k1-search", "capacity-tiny_eagle-k1-stop",
                   "capacity-tiny_eagle-k3", "capacity-tiny_eagle-k3-search", "capacity-tiny_eagle-k3-stop",
                   "capacity"]
    serves = [p for p in plan.steps if p.kind == "serve"][1:]
    assert [_spec(p.argv) and _spec(p.argv)["num_speculative_tokens"] for p in serves] == [None, 1, 3]
    for p in (p for p in plan.steps if p.kind == "search"):
        assert "bench_baseline" in p.needs  # its SLO is resolved from the baseline's medians
        argv = p.argv
        assert "--max-concurrency" not in argv and _flag(argv, "--request-rate") == "8.0"
        assert _flag(argv, "--num-prompts") == "40"  # duration_s x rate: more than the 31 a verdict needs
        assert "--save-detailed" in argv and argv[-1] == "--ignore-eos"
        goodput = argv[argv.index("--goodput") + 1:argv.index("--goodput") + 3]
        assert goodput == ["ttft:<5x median of bench_baseline>", "tpot:<2x median of bench_baseline>"]
    report = plan.get("capacity")
    keys = report.step.keys
    assert keys.points == [p.id for p in plan.steps if p.kind == "search"] and keys.baseline == "capacity-none-search"
    assert list(keys.names.values()) == ["no speculation", "EAGLE k=1", "EAGLE k=3"]
    assert keys.relative_to == "bench_baseline"


def test_a_command_line_lookahead_leaves_one_server_per_distinct_command() -> None:
    plan = _plan(TINY, "lookahead=3")  # k=1 and k=3 become the same server
    assert [p.id for p in plan.steps if p.kind == "search"] == ["capacity-none-search", "capacity-tiny_eagle-search"]


def test_scout_capacity_probes_every_lookahead_under_the_interactive_slo() -> None:
    plan = _plan(SCOUT)
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert [_spec(p.argv) and _spec(p.argv)["num_speculative_tokens"] for p in serves] == [None, 1, 3, 5]
    assert all(_flag(p.argv, "--tensor-parallel-size") == "4" for p in serves)
    for p in (p for p in plan.steps if p.kind == "search"):
        assert p.argv[p.argv.index("--goodput") + 1:p.argv.index("--goodput") + 3] == ["ttft:1000", "tpot:50"]
        assert _flag(p.argv, "--dataset-path") == "philschmid/mt-bench" and "--max-concurrency" not in p.argv
        assert _flag(p.argv, "--num-prompts") == "120"  # 60 s x 2 req/s


# -- bad input: one line each, exit 2, nothing started ---------------------------------------------

TINY_ARGS = ["draft=none,tiny_eagle", "target=tiny", "memory=cpu", "bench=random_tiny"]


@pytest.mark.parametrize("extra,expected", [
    ([], "request capacity is measured against a latency SLO, and slo=none sets no threshold"),
    (["slo=interactive", "slo.ttft_ms=null", "slo.tpot_ms=null"], "slo=interactive sets no threshold"),
    (["slo.ttft_ms=-5"], "slo.ttft_ms=-5.0: give a time in milliseconds greater than 0"),
    (["slo.tpot_ms=fast"], "'slo.tpot_ms=fast'"),
    (["slo=interactive", "slo.attainment=1.5"], "slo.attainment=1.5: give the share of requests"),
    (["slo=interactive", "slo.attainment=0"], "slo.attainment=0.0: give the share"),
    (["slo=interactive", "slo.attainment=1"], "slo.attainment=1: a capacity search needs an attainment below 1"),
    (["slo=interactive", "--start-rate", "0"], "--start-rate must be a number above 0 up to 10000 (got 0.0)"),
    (["slo=interactive", "--start-rate", "nan"], "--start-rate must be a number above 0"),
    (["slo=interactive", "--start-rate", "50", "--max-rate", "20"], "the start rate 50 is above the highest rate 20"),
    (["slo=interactive", "--start-rate", "20000"], "--start-rate must be a number above 0 up to 10000"),
    (["slo=interactive", "--duration-s", "7200"], "--duration-s must be a number above 0 up to 3600"),
    (["slo=interactive", "--min-probe-runs", "5", "--max-probe-runs", "3"], "runs per probe must satisfy"),
    (["slo=interactive", "--precision", "0"], "--precision must be a number from 0.01 up to 1"),
    (["slo=interactive", "--precision", "1.5"], "--precision must be a number from 0.01 up to 1"),
    (["slo=interactive", "--precision", "1"], "precision must lie in (0, 1): the capacity interval's half-width"),
    (["slo=interactive", "--max-probes", "3"], "the probe budget must be 5 to 1000 runs, not 3"),
    (["slo.relative_to=nosuch", "slo.ttft=3"], "slo.relative_to 'nosuch' is unknown step; name the id of a bench step"),
    (["slo=interactive", "bench.max_concurrency=1,4"], "a capacity step's matrix varies the server"),
])
def test_bad_capacity_input_is_one_line_exit_2_and_starts_nothing(cli, tmp_path: Path, extra, expected) -> None:
    result = cli("capacity", *TINY_ARGS, *extra, "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "runs").exists()


def test_relative_to_a_step_that_is_no_bench_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rb.yaml"
    path.write_text(TINY.read_text().replace("slo.relative_to=bench_baseline", "slo.relative_to=baseline"))
    with pytest.raises(UserError) as info:
        _plan(path)
    assert info.value.problems == [f"{path}: step 'capacity': slo.relative_to 'baseline' is a serve step; "
                                   f"name the id of a bench step"]


def test_capacity_keys_in_a_runbook_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "rb.yaml"
    text = TINY.read_text().replace("start_rate: 8", "start_rate: 0").replace("duration_s: 5", "duration_s: -1")
    path.write_text(text.replace("precision: 0.1", "precision: 0.1\n    confirm: 0.5").replace("max_probes: 24",
                                                                                              "max_probes: 65"))
    with pytest.raises(UserError) as info:
        _plan(path)
    words = ["'start_rate' must be a number above 0", "'duration_s' must be a number above 0",
             "'confirm' must be a number above 1 up to 100 (or null)", "'max_probes' must be a whole number from 1 to 64"]
    assert all(sum(w in p for p in info.value.problems) == 1 for w in words), info.value.problems


def test_the_command_plans_a_one_step_capacity_runbook(cli, tmp_path: Path) -> None:
    result = cli("capacity", *TINY_ARGS, "slo=interactive", "lookahead=1,3", "--start-rate", "4",
                 "--duration-s", "5", "--dry-run", "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 0, result.stderr
    assert "[10/10] capacity: capacity" in result.stdout and "capacity-tiny_eagle-k3-search: search" in result.stdout
    assert "--request-rate 4.0" in result.stdout and "--goodput ttft:1000 tpot:50" in result.stdout
    assert not (tmp_path / "runs").exists()


# -- the SLO resolved, resuming, the report -------------------------------------------------------

def _baseline_record(plan, ttft: float = 20.0, tpot: float = 10.0) -> None:
    record = BenchRecord(label="bench_baseline", returncode=0,
                         result={"completed": 8, "failed": 0, "median_ttft_ms": ttft, "median_tpot_ms": tpot})
    record.write(plan.get("bench_baseline").artifacts["record"])


def _simulate(settings: cap.Settings, capacity: float) -> cap.Search:
    """A whole search against a server whose attainment falls from 1 to 0 around ``capacity``."""
    search = cap.begin(settings)
    requests = cap.decidable_requests(settings)
    while (rate := cap.next_probe(search)) is not None:
        attainment = 1.0 if rate <= capacity else 0.5
        search = cap.record_run(search, rate, cap.Run(attainment, requests, "tpot", 30.0 * rate, 1.5))
    return search


def test_thresholds_are_the_multiples_of_the_baselines_medians_and_resume_reuses_the_probes(tmp_path: Path) -> None:
    plan = _plan(TINY, run_dir=tmp_path)
    p = plan.get("capacity-none-search")
    assert search_step.pending(plan, p)  # no baseline record yet
    _baseline_record(plan)
    thresholds, basis = search_step.thresholds_of(plan, p)
    assert thresholds == {"ttft": 100.0, "tpot": 20.0}
    assert basis["relative_to"] == "bench_baseline" and basis["medians"] == {"ttft": 20.0, "tpot": 10.0}
    settings = p.step.keys.settings.bisect(0.9)
    identity = search_step._identity(plan, p, thresholds)
    done = simulated_search(p.step.keys.settings, 5.0)  # the fitted search, the default
    p.artifacts["search"].parent.mkdir(parents=True)
    p.artifacts["search"].write_text(json.dumps(search_step.document(done, identity, thresholds, basis, p.step.keys.settings)))
    assert not search_step.pending(plan, p)  # a finished search: a resumed run starts no server for it
    half = cap.Search(settings, done.probes[:2])
    p.artifacts["search"].write_text(json.dumps(search_step.document(half, identity, thresholds, basis, p.step.keys.settings)))
    assert search_step.pending(plan, p)
    assert search_step._recorded(p, settings, identity).probes == half.probes  # continued from its probes
    _baseline_record(plan, ttft=25.0)  # another baseline: other thresholds, so the search starts again
    assert search_step.pending(plan, p)
    moved = search_step._identity(plan, p, search_step.thresholds_of(plan, p)[0])
    assert search_step._recorded(p, settings, moved) is None


def test_the_report_gives_each_capacity_its_gain_with_an_interval_and_a_plot(tmp_path: Path) -> None:
    from llama4spec.capacity.step_report import run_report

    plan = _plan(TINY, run_dir=tmp_path)
    _baseline_record(plan)
    for sid, capacity in (("capacity-none-search", 3.0), ("capacity-tiny_eagle-k1-search", 5.0),
                          ("capacity-tiny_eagle-k3-search", 7.0)):
        p = plan.get(sid)
        thresholds, basis = search_step.thresholds_of(plan, p)
        settings = p.step.keys.settings.bisect(0.9)
        search = _simulate(settings, capacity)
        p.artifacts["search"].parent.mkdir(parents=True)
        p.artifacts["search"].write_text(json.dumps(search_step.document(
            search, search_step._identity(plan, p, thresholds), thresholds, basis)))
    console = Console(record=True, width=160, file=io.StringIO())
    text, record = run_report(plan, plan.get("capacity"), console)
    k3 = record["settings"]["EAGLE k=3"]
    assert k3["rate"] <= 7.0 < k3["high"] and k3["binding"] == "tpot" and k3["client_cpu_s"] > 0
    base = record["settings"]["no speculation"]
    gain = k3["gain"]
    assert gain["low"] == pytest.approx(k3["rate"] / base["high"]) and gain["high"] == pytest.approx(k3["high"] / base["rate"])
    assert gain["low"] <= gain["ratio"] <= gain["high"]
    assert record["headline"].startswith("EAGLE k=3 carries ") and "TTFT <= 100 ms and TPOT <= 20 ms" in record["headline"]
    assert record["thresholds"] == {"ttft": 100.0, "tpot": 20.0}
    report = plan.get("capacity")
    assert json.loads(report.artifacts["analysis"].read_text())["headline"] == record["headline"]
    assert "| EAGLE k=3 |" in report.artifacts["report"].read_text() and "![latency" in text
    assert all(report.artifacts[f"latency-{sid}"].stat().st_size > 1000 for sid in report.step.keys.points)
    assert "Request capacity under" in console.export_text()
