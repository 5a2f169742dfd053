"""The tiny capacity runbook end to end with real vLLM servers, then resumed.

Small settings: the command line's ``lookahead=3`` makes EAGLE k=1 and k=3 one server, so three
servers start (the baseline measured at concurrency 1, then no speculation and EAGLE k=3, each
searched); outputs of 16 tokens, an attainment of 0.8 (fewer requests a run), and a copy of the
runbook with the fitted search (the default) at a coarse precision (+-50%), a start rate of 16
req/s, runs of at least 3 s and a budget of 6 runs a server, so a search on a loaded machine
(attainment is noisy there) stays within 6 runs. The run's records are then checked against each
other (each run's per-metric shares against its attainment, the report's capacity against the fit
search.json recorded), and ``--resume`` must start no server.
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
        "precision: 0.1", "precision: 0.5").replace("max_probes: 24", "max_probes: 6")
    assert all(key in text for key in ("start_rate: 16", "duration_s: 3", "precision: 0.5", "max_probes: 6"))
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
        assert data["search"] == "fit" and data["fit"]["next"]["rate"] is None, (sid, data["fit"]["next"])
        assert data["fit"]["next"]["stop"] in ("precision", "budget", "cap", "floor", "shape")
        assert 1 <= sum(len(p["runs"]) for p in data["probes"]) <= 6 and all(p["why"] for p in data["probes"])
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
                # each bounded metric's share of good requests: a request good under every threshold is good under each
                shares = kept["per_metric"]
                assert set(shares) == set(data["thresholds"]) and all(0 <= v <= 1 for v in shares.values())
                assert kept["attainment"] <= min(shares.values()) + 1e-12, (kept, shares)
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


def test_the_report_gives_the_fits_capacity_and_the_gain_has_an_interval(capacity_run) -> None:
    _, run_dir, _, _ = capacity_run
    report = json.loads((run_dir / "capacity" / "capacity.json").read_text())
    searches = _searches(run_dir)
    for name, sid in (("no speculation", "capacity-none-search"), ("EAGLE k=3", "capacity-tiny_eagle-search")):
        setting, fit = report["settings"][name], searches[sid]["fit"]
        runs = sum(len(p["runs"]) for p in searches[sid]["probes"])
        assert setting["search"] == "fit" and setting["runs"] == fit["runs"] == runs
        # the report refits the runs search.json holds: the same crossing the search recorded after its last run
        if fit["shape_fits"] and fit["estimate"] is not None:
            assert setting["rate"] == pytest.approx(fit["estimate"], rel=1e-9)
            low, high = setting["low"], setting["high"]
            assert (low is None or low <= setting["rate"]) and (high is None or setting["rate"] <= high)
        else:  # the shape did not fit or no crossing: said, with the isotonic estimate
            assert setting["rate"] is None and "isotonic estimate" in " ".join(setting["notes"])
        assert setting["binding"] == fit["binding"] and setting["binding"] in ("ttft", "tpot", None)
        assert (run_dir / "capacity" / f"latency-{sid}.png").stat().st_size > 1000
    assert (run_dir / "capacity" / "capacity-fit.png").stat().st_size > 1000
    gain = report["settings"]["EAGLE k=3"]["gain"]  # an interval, open where a capacity's is
    assert set(gain) == {"ratio", "low", "high", "starts_share"} and gain["low"] >= 0
    if gain["ratio"] is not None:
        assert gain["low"] <= gain["ratio"] and (gain["high"] is None or gain["ratio"] <= gain["high"])
    assert report["between"]["source"].startswith("hardware prior: ") and report["between"]["sd"] == pytest.approx(0.13)
    md = (run_dir / "capacity" / "report.md").read_text()
    assert "| EAGLE k=3 |" in md and "](capacity-fit.png)" in md
    assert report["headline"].startswith("EAGLE k=3 carries ") and report["headline"] in md
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
