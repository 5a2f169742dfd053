"""The tiny capacity runbook end to end with real vLLM servers, then resumed.

Small settings: the command line's ``lookahead=3`` makes EAGLE k=1 and k=3 one server, so three
servers start (the baseline measured at concurrency 1, then no speculation and EAGLE k=3, each
searched); outputs of 16 tokens, an attainment of 0.8 (fewer requests a run decide a verdict), and
a copy of the runbook with a coarse precision (1.0: bracketing only), a start rate of 16 req/s, runs
of at least 3 s (and the requests a verdict needs), at most 4 probes of 1 to 3 runs and no confirming probe, so a search on a loaded machine (attainment
is noisy there) stays within 12 runs. The run's records are then checked against each other, and
``--resume`` must start no server.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, free_port, run_cli

pytestmark = pytest.mark.engine

SMALL = ["lookahead=3", "bench.output_len=16", "slo.attainment=0.8"]


@pytest.fixture(scope="module")
def capacity_run(tmp_path_factory, tiny_dir) -> tuple[Path, Path, list[str], float]:
    work = tmp_path_factory.mktemp("capacity")
    text = (REPO / "runbooks" / "tiny_cpu_capacity.yaml").read_text()
    text = text.replace("start_rate: 8", "start_rate: 16").replace("duration_s: 5", "duration_s: 3").replace(
        "precision: 0.1", "search: bisect\n    precision: 1.0\n    confirm: null\n    max_probes: 4\n    max_probe_runs: 3")
    runbook = work / "tiny_cpu_capacity.yaml"
    runbook.write_text(text)
    args = [*SMALL, f"serve.port={free_port()}"]
    started = time.monotonic()
    done = run_cli("run", str(runbook), *args, "--runs-dir", str(work / "runs"), timeout=1500)
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    (run_dir,) = (work / "runs" / "tiny_cpu_capacity").iterdir()
    print(f"\ntiny capacity: {wall:.0f} s wall, record {run_dir}")
    return runbook, run_dir, args, wall


def _searches(run_dir: Path) -> dict[str, dict]:
    return {d.name: json.loads((d / "search.json").read_text()) for d in sorted(run_dir.glob("*-search"))}


def test_every_probe_run_is_in_search_json_and_on_disk(capacity_run) -> None:
    _, run_dir, _, _ = capacity_run
    searches = _searches(run_dir)
    assert list(searches) == ["capacity-none-search", "capacity-tiny_eagle-search"]
    for sid, data in searches.items():
        assert data["next"]["rate"] is None and data["capacity"]["done"], (sid, data["next"])
        assert 1 <= len(data["probes"]) <= 4 and all(p["why"] for p in data["probes"])
        for probe in data["probes"]:
            where = run_dir / sid / "probes" / f"rate={probe['rate']:g}"
            record = json.loads((where / "record.json").read_text())
            runs = record.get("runs") or [record]
            results = [f for f in where.glob("run=*.json") if re.fullmatch(r"run=\d+\.json", f.name)]
            assert len(runs) == len(probe["runs"]) == len(results)  # beside them: each run's requests
            for kept, run in zip(probe["runs"], runs):
                argv = run["argv"]
                assert "--max-concurrency" not in argv and float(argv[argv.index("--request-rate") + 1]) == probe["rate"]
                assert run["result"]["completed"] + run["result"]["failed"] == kept["requests"]
                assert kept["client_cpu_s"] is not None and kept["client_cpu_s"] > 0  # the load generator's CPU time
                # the run's binding constraint: its P80 (the SLO's attainment) highest against its threshold
                ratios = {m: run["result"][f"p80_{m}_ms"] / t for m, t in data["thresholds"].items()
                          if isinstance(run["result"].get(f"p80_{m}_ms"), (int, float))}
                assert kept["binding"] == (max(ratios, key=ratios.get) if ratios else None), (ratios, kept)
            summary = json.loads((where / "summary.json").read_text())
            assert len(summary) == len(runs) and all(s["users"] > 0 for s in summary)
            if probe["verdict"] in ("holds", "fails"):
                assert probe["interval"] is not None and probe["interval"][0] <= probe["attainment"] <= probe["interval"][1]


def test_the_slo_is_resolved_from_the_baselines_medians(capacity_run) -> None:
    _, run_dir, _, _ = capacity_run
    baseline = json.loads((run_dir / "bench_baseline" / "record.json").read_text())["result"]
    for data in _searches(run_dir).values():
        assert data["slo"]["medians"] == {"ttft": baseline["median_ttft_ms"], "tpot": baseline["median_tpot_ms"],
                                          "e2el": baseline["median_e2el_ms"]}
        assert data["thresholds"] == pytest.approx({"ttft": 5.0 * baseline["median_ttft_ms"],
                                                    "tpot": 2.0 * baseline["median_tpot_ms"]})
        goodput = data["probes"][0]["runs"]  # the probe commands carried those thresholds
        assert goodput


def test_the_interval_brackets_the_recorded_rates_and_the_gain_has_one(capacity_run) -> None:
    _, run_dir, _, _ = capacity_run
    report = json.loads((run_dir / "capacity" / "capacity.json").read_text())
    searches = _searches(run_dir)
    for name, sid in (("no speculation", "capacity-none-search"), ("EAGLE k=3", "capacity-tiny_eagle-search")):
        setting, probes = report["settings"][name], searches[sid]["probes"]
        low, high = setting["rate"], setting["high"]
        held = [p["rate"] for p in probes if p["verdict"] in ("holds", "leans to holding")]
        failed = [p["rate"] for p in probes if p["verdict"] in ("fails", "leans to failing")]
        assert (low is None) == (not [r for r in held if high is None or r < high]) and (high is None) == (not failed)
        if low is not None:  # the highest rate that held below the first failure
            assert low in held and all(r <= low for r in held if high is None or r < high)
        if high is not None:  # the lowest rate that failed
            assert high in failed and all(r >= high for r in failed) and (low is None or low < high)
        # the binding constraint is the one named by most runs at U (at L when nothing failed), whatever
        # rates this machine carries; each run's is checked against its own percentiles beside
        where = high if high is not None else low
        probe = next((p for p in probes if p["rate"] == where), None)
        assert (probe is None) == (where is None)
        named = [r["binding"] for r in probe["runs"] if r["binding"]] if probe else []
        assert setting["binding"] == (max(reversed(named), key=named.count) if named else None)
        assert setting["binding"] in ("ttft", "tpot", None)
        assert (run_dir / "capacity" / f"latency-{sid}.png").stat().st_size > 1000
    gain = report["settings"]["EAGLE k=3"]["gain"]  # an interval, open above when a bound is missing
    assert set(gain) == {"ratio", "low", "high"} and gain["low"] >= 0
    if gain["ratio"] is not None:
        assert gain["low"] <= gain["ratio"] and (gain["high"] is None or gain["ratio"] <= gain["high"])
    assert report["headline"].startswith("EAGLE k=3 carries ") and "[" in report["headline"]
    md = (run_dir / "capacity" / "report.md").read_text()
    assert report["headline"] in md and "| EAGLE k=3 |" in md
    assert "Request capacity" in (run_dir / "summary.md").read_text()


def test_resume_reuses_every_probe_and_starts_no_server(capacity_run) -> None:
    runbook, run_dir, args, _ = capacity_run
    before = _searches(run_dir)
    done = run_cli("run", str(runbook), *args, "--resume", str(run_dir), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status = json.loads((run_dir / "status.json").read_text())
    entries = {e["id"]: e for e in status["steps"]}
    for sid in ("baseline", "capacity-none", "capacity-tiny_eagle"):
        assert entries[sid]["status"] == "done" and entries[sid].get("resumed"), entries[sid]
    assert _searches(run_dir) == before
