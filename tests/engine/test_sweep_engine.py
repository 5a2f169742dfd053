"""The tiny CPU sweep end to end with real vLLM servers (the perfect pair), then resumed.

Four servers start one after the other (about a minute each on two shared cores), each
measured at concurrency 1 and 4, three times. The shipped runbook sends 16 prompts x 128 tokens
a run after a warm-up run; the test runs the same code on 8 x 32 tokens without the warm-up
(``SMALL``). Three runs
stay: with two, a Student-t interval (t = 12.7 at one degree of freedom) decides nothing, and the
schedule the second phase verifies would have no point to come from. The
finished run directory is then read by ``llama4spec report`` (rebuilt from the records alone)
and by vLLM's own sweep plotter.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import png_series, run_cli

pytestmark = pytest.mark.engine

# No warm-up run: each is one more benchmark process (about 10 s of vLLM's imports); the warm-up's
# requests staying out of the counted runs is tested on the shared server (test_categories_engine.py).
SMALL = ["bench.num_prompts=8", "bench.output_len=32", "--warmup", "0", "--repeats", "3"]
REPEATS = 3


def _table(md: str, concurrency: int) -> tuple[dict[str, list[str]], list[str]]:
    """The rows (setting -> cells) and findings of one concurrency's section of summary.md."""
    section = md.split(f"### concurrency {concurrency}\n", 1)[1].split("###", 1)[0].split("![", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| setting"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows, [line[2:] for line in section.splitlines() if line.startswith("- ")]


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory, tiny_dir) -> tuple[Path, float]:
    runs = tmp_path_factory.mktemp("runs")
    started = time.monotonic()
    done = run_cli("run", "runbooks/tiny_cpu_sweep.yaml", *SMALL, "--runs-dir", str(runs), timeout=1500)
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = (runs / "tiny_cpu_sweep").iterdir()
    print(f"\ntiny CPU sweep: {wall:.0f} s wall, record {run_dir}")
    return run_dir, wall


def test_tiny_sweep_reports_efficiency_and_best_lookahead_consistent_with_its_table(sweep_run) -> None:
    run_dir, _ = sweep_run
    summary = json.loads((run_dir / "status.json").read_text())
    assert summary["status"] == "done"
    servers = [s for s in summary["steps"] if s["kind"] == "serve"]
    assert [s["id"] for s in servers] == ["sweep-none", "sweep-tiny_eagle-k1", "sweep-tiny_eagle-k3", "sweep-schedule"]
    # the second phase: the schedule derived from the fixed points, served and measured beside them
    derived = json.loads((run_dir / "sweep-schedule" / "schedule.json").read_text())
    assert servers[-1]["result"]["lookahead_schedule"] == derived["schedule"]
    assert derived["schedule"][0][0] == 1 and derived["from_points"]
    md = (run_dir / "summary.md").read_text()
    analysis = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    for at in analysis["concurrency"]:
        c = at["concurrency"]
        rows, findings = _table(md, c)
        scheduled = [name for name in rows if name.startswith("tiny_eagle schedule (k<=")]  # k: the schedule's largest
        assert len(scheduled) == 1 and set(rows) - set(scheduled) == {"no speculation", "tiny_eagle k=1", "tiny_eagle k=3"}
        assert any(f.startswith("lookahead schedule: ") for f in findings)
        tput = {name: float(cells[0].split()[0]) for name, cells in rows.items() if "schedule" not in name}
        for r in at["rows"]:
            if r["draft"].endswith(" schedule"):
                continue  # measured under the derived schedule: its own finding, no bound of a fixed k
            k = r["lookahead"]
            # the perfect pair: every draft token accepted, so the bound is k+1
            assert r["acceptance_length"] == pytest.approx(k + 1) and r["bound"] == pytest.approx(k + 1)
            assert r["acceptance_rate_per_position"] == pytest.approx([1.0] * k)
            # three counted runs each: the median and its Student-t interval; the speedup from Welch's t
            # on the logs (never pairing runs of different servers), its interval at its Holm level,
            # excluding 1 exactly when the verdict against no speculation is decided
            assert r["repeats"] == REPEATS and r["intervals"]["output_throughput"]["method"] == "t"
            samples = r["intervals"]["output_throughput"]["samples"]
            assert len(samples) == REPEATS and r["output_throughput"] == pytest.approx(sorted(samples)[1])
            iv = r["speedup_interval"]
            assert iv["method"] == "welch" and iv["low"] <= r["speedup"] <= iv["high"] and iv["confidence"] > 0.95
            assert r["verdict"] == ("faster" if iv["low"] >= 1 else "slower" if iv["high"] <= 1 else "undecided")
            assert r["comparison"]["second"] == at["baseline"] and r["comparison"]["hypotheses"] == 6
            assert r["efficiency"] == pytest.approx(r["speedup"] / r["bound"])
            cells = rows[f"tiny_eagle k={k}"]
            assert cells[4].startswith(f"{r['speedup']:.2f}x [") and cells[6] == f"{100 * r['efficiency']:.0f}%"
        fastest = max(tput, key=tput.get)
        assert fastest == ("no speculation" if at["fastest"].startswith("sweep-none") else
                           f"tiny_eagle k={at['fastest'].split('-k')[1].split('-')[0]}")
        choice = at["choices"]["tiny_eagle"]
        assert f"best lookahead by output throughput: {choice['sentence']}" in findings
        # the recommendation: the highest median among the settings (no speculation included) no other
        # is declared faster than; decided only when declared faster than every other, else undecided,
        # never no speculation merely because an interval spans 1
        fixed = {r["lookahead"]: r for r in at["rows"] if not r["draft"].endswith(" schedule")}
        settings = {at["baseline"]: ("no speculation", at["baseline_output_throughput"], 0),
                    **{r["id"]: (f"k={k}", r["output_throughput"], k) for k, r in fixed.items()}}
        assert len(at["comparisons"]) == 3 and {c["method"] for c in at["comparisons"]} == {"welch"}
        verdicts = {(c["first"], c["second"]): c["verdict"] for c in at["comparisons"]}

        def faster(a: str, b: str) -> bool:
            return verdicts.get((a, b)) == "faster" or verdicts.get((b, a)) == "slower"

        alive = [i for i in settings if not any(faster(j, i) for j in settings if j != i)]
        pick = max(alive, key=lambda i: (settings[i][1], -settings[i][2]))  # equal medians: the cheaper
        assert choice["recommended"] == pick and at["best"] == pick, choice
        assert choice["decided"] == all(faster(pick, j) for j in settings if j != pick), choice
        assert sorted(choice["undecided_against"]) == sorted(
            settings[j][0] for j in settings if j != pick and not faster(pick, j)), choice
        model = at["model"]["tiny_eagle"]
        assert model["draft_cost"] is not None and model["draft_cost"] >= 0
        assert set(model["residuals"]) == {"1", "3"}
        k_model = model["predicted_best_lookahead"]
        assert any(f"predicted best lookahead {k_model} " in f or f"(best {k_model} at " in f for f in findings)
        # the model's best and the recommendation never disagree without a sentence that says why
        best_predicted = max(model["predicted"], key=lambda p: p["speedup"])["speedup"]
        agrees = (k_model if best_predicted > 1 else 0) == settings[pick][2]
        assert (model["against_recommendation"] is None) == agrees, model
        if not agrees:
            assert f"  {model['against_recommendation']}" in findings
    # the schedule keeps each concurrency's recommendation, decided or not, and marks the undecided
    by_c = {at["concurrency"]: at for at in analysis["concurrency"]}
    (schedule,) = analysis["schedules"]
    for band in schedule["bands"]:
        for c in band["concurrencies"]:
            assert band["k"] == (by_c[c]["best_lookahead"] or 0)
            assert (c in band["undecided"]) == (not by_c[c]["choices"]["tiny_eagle"]["decided"])
    assert analysis["verdict"] in md
    for png in ("sweep/acceptance_by_position.png", "sweep/throughput_vs_concurrency.png", "sweep/speedup.png"):
        assert f"]({png})" in md and png_series(run_dir / png)
    assert png_series(run_dir / "sweep" / "acceptance_by_position.png") == ["tiny_eagle k=1", "tiny_eagle k=3"]
    # every point in vLLM's own sweep format: <point>/run=N.json per counted run and a summary.json list,
    # counted runs sending no warm-up requests of their own (no warm-up run here: --warmup 0)
    for point in [s["id"] for s in summary["steps"] if s["kind"] == "bench"]:
        runs = json.loads((run_dir / point / "summary.json").read_text())
        assert [r["run_number"] for r in runs] == list(range(REPEATS)) and all(r["output_throughput"] > 0 for r in runs)
        assert all((run_dir / point / f"run={i}.json").is_file() for i in range(REPEATS))
        assert not (run_dir / point / "warmup.json").exists()
        record = json.loads((run_dir / point / "record.json").read_text())
        assert record["repeats"] == REPEATS and record["warmup"] == 0
        argv = record["runs"][0]["argv"]
        assert argv[argv.index("--num-warmups") + 1] == "0"
    rows = (run_dir / "sweep" / "sweep.csv").read_text().splitlines()
    assert len(rows) == 1 + REPEATS * 8 and rows[0].startswith("id,setting,run,repeats,warmup,config.")
    assert "## compare" in md


def test_report_rebuilds_the_same_sweep_report_from_the_records(sweep_run, tmp_path) -> None:
    run_dir, _ = sweep_run
    names = ("report.md", "sweep.json", "sweep.csv")
    before = {name: (run_dir / "sweep" / name).read_text() for name in names}
    done = run_cli("report", str(run_dir))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert {name: (run_dir / "sweep" / name).read_text() for name in names} == before
    copy = tmp_path / "copy"  # into a directory of its own: the same report, and a run directory itself
    done = run_cli("report", str(run_dir), "--out", str(copy))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (copy / "sweep" / "report.md").read_text() == before["report.md"].replace(str(run_dir), str(copy))
    assert json.loads((copy / "sweep-tiny_eagle-k3-c1" / "record.json").read_text())["repeats"] == REPEATS


def test_vllms_own_sweep_plotter_reads_the_run_directory(sweep_run, tmp_path) -> None:
    run_dir, _ = sweep_run
    figs = tmp_path / "figs"
    done = subprocess.run([sys.executable, "-m", "vllm.benchmarks.sweep.plot", str(run_dir), "--fig-dir", str(figs),
                           "--var-x", "max_concurrency", "--var-y", "output_throughput", "--curve-by", "lookahead",
                           "--fig-dpi", "50"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    pngs = list(figs.rglob("*.png"))
    assert pngs and all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)


def test_resuming_the_finished_sweep_starts_no_server_and_reports_the_same(sweep_run) -> None:
    run_dir, _ = sweep_run
    before = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    done = run_cli("run", "runbooks/tiny_cpu_sweep.yaml", *SMALL, "--resume", str(run_dir), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("already measured in this run directory; skipped") == 16
    steps = json.loads((run_dir / "status.json").read_text())["steps"]
    assert all(s.get("resumed") for s in steps if s["kind"] in ("serve", "bench")), steps  # no server started
    after = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    assert after["concurrency"] == before["concurrency"]
    summary = json.loads((run_dir / "status.json").read_text())
    assert summary["resumed"] is True and summary["status"] == "done"
    assert re.search(r"best lookahead by output throughput", done.stdout)


def test_the_runs_own_page_opens_offline_in_a_browser(sweep_run, tmp_path: Path) -> None:
    """The report.html the real run wrote, in headless Chromium with the network off: the verdict,
    the tables and the figures in the DOM, and no request but file:// (skips without a browser)."""
    import html

    from tests.unit.runbook.test_report_page_browser import open_page, requested

    run_dir, _ = sweep_run
    page = run_dir / "report.html"
    assert page.is_file()
    net = tmp_path / "net.json"
    done = open_page(page, tmp_path, "--dump-dom", f"--log-net-log={net}")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    verdict = json.loads((run_dir / "sweep" / "sweep.json").read_text())["verdict"]
    assert html.escape(verdict, quote=False) in dom
    assert dom.count("<table") >= 2 and dom.count("<img") >= 3
    assert all(url.startswith("file://") for url in requested(net)), requested(net)
