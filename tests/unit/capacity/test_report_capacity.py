"""Request capacity on report.html and in ``report``: a capacity run built from simulated searches
(tests/recorded_runs.py, no engine) shows its headline, SLO, table and plots in the static page;
``report RUN_DIR`` rebuilds capacity.json from the search.json files alone; records read back are
input (a label is escaped, a damaged search.json is one line, exit 2)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from llama4spec.runbook import write_page as page
from tests.recorded_runs import finished_capacity_run
from tests.unit.runbook.test_report_page import Parsed, urls

SEARCH = "capacity-tiny_eagle-k1-search"


@pytest.fixture(scope="module")
def capacity_run(tmp_path_factory) -> Path:
    return finished_capacity_run(tmp_path_factory.mktemp("capacity") / "run")


def _copy(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run, out)
    return out


def test_the_page_shows_request_capacity_in_its_static_html(capacity_run: Path) -> None:
    parsed = Parsed((capacity_run / "report.html").read_text())
    body = parsed.all_text()
    record = json.loads((capacity_run / "capacity" / "capacity.json").read_text())
    headline = record["headline"]
    assert re.match(r"EAGLE k=3 carries \d\.\d\dx \[\d\.\d\d, \d\.\d\d\] the requests of no speculation under", headline)
    assert f"capacity: {headline}" in body  # among the verdicts
    assert body.index("Verdicts") < body.index("Request capacity capacity") < body.index("Steps")
    assert "Sweep capacity" not in body  # a capacity step is no sweep
    assert ("a request is good when TTFT <= 100 ms, TPOT <= 20 ms; the SLO holds when 90% of the requests sent are "
            "good") in body
    assert "resolved from the medians measured by step bench_baseline: TTFT 5x its median 20 ms, TPOT 2x its " \
           "median 10 ms" in body
    for header in ("request capacity req/s [low, high]", "output tok/s", "binds", "cliff, notes",
                   "gain over no speculation [interval]", "probes / runs", "client CPU s"):
        assert header in body
    # the fitted searches (the default): each row the fit's crossing [Fieller interval], which holds the
    # simulated servers' true crossings (3 and 7 req/s), and the gain from the fits
    for name, true in (("no speculation", 3.0), ("EAGLE k=3", 7.0)):
        s = record["settings"][name]
        assert s["search"] == "fit" and s["low"] <= true <= s["high"] and s["binding"] == "tpot", s
        cells = f"{name} {s['rate']:.4g} [{s['low']:.4g}, {s['high']:.4g}] {s['output_tps_at']:.0f} "
        assert cells in body, (cells, body)
    g = record["settings"]["EAGLE k=3"]["gain"]
    assert g["low"] < 7.0 / 3.0 < g["high"] and f"{g['ratio']:.2f}x [{g['low']:.2f}, {g['high']:.2f}]" in body
    assert "another start of each server would narrow it" in body  # the between-start term dominates here
    assert "log sd 0.13: hardware prior: benchmarks/spreads.py" in body  # where that term came from: the cpu config's prior
    images = [a for t, a in parsed.tags if t == "img"]
    assert [a["alt"] for a in images] == ["attainment against request rate, every setting"] + [
        f"latency against request throughput, {n}" for n in ("no speculation", "EAGLE k=1", "EAGLE k=3")]
    assert all(a["src"].startswith("data:image/png;base64,") for a in images)
    assert all(u.startswith("data:") for u in urls(parsed)) and len(parsed.scripts) == 1  # the table sorter only


def test_a_setting_label_is_escaped(capacity_run: Path, tmp_path: Path) -> None:
    run = _copy(capacity_run, tmp_path)
    plan = json.loads((run / "plan.json").read_text())
    step = next(s for s in plan if s["id"] == "capacity")
    step["capacity"]["names"][SEARCH] = "<script>alert('k1')</script>"
    (run / "plan.json").write_text(json.dumps(plan))
    page.write(run)
    text = (run / "report.html").read_text()
    parsed = Parsed(text)
    assert parsed.count("script") == 1 and "&lt;script&gt;alert(&#39;k1&#39;)&lt;/script&gt;" in text
    assert "<script>alert" not in text and parsed.count("img") == 4


def test_report_rebuilds_the_capacity_report_the_run_wrote(cli, capacity_run: Path, tmp_path: Path) -> None:
    run = _copy(capacity_run, tmp_path)
    shutil.rmtree(run / "capacity")
    (run / "report.html").unlink()
    done = cli("report", str(run))
    assert done.returncode == 0, done.stderr
    wrote = json.loads((capacity_run / "capacity" / "capacity.json").read_text())
    assert json.loads((run / "capacity" / "capacity.json").read_text()) == wrote
    assert wrote["warnings"] == [] and wrote["resolved"]["relative_to"] == "bench_baseline"
    assert (run / "capacity" / "report.md").read_text() == (capacity_run / "capacity" / "report.md").read_text()
    assert all((run / "capacity" / f"latency-{s}-search.png").read_bytes().startswith(b"\x89PNG")
               for s in ("capacity-none", "capacity-tiny_eagle-k1", "capacity-tiny_eagle-k3"))
    assert "Request capacity under" in done.stdout
    assert Parsed((run / "report.html").read_text()).count("img") == 4  # the fitted curves and 3 latency plots
    merged = tmp_path / "merged"  # another directory: the searches go with it
    done = cli("report", str(run), "--out", str(merged))
    assert done.returncode == 0, done.stderr
    assert json.loads((merged / "capacity" / "capacity.json").read_text()) == wrote
    assert (merged / SEARCH / "search.json").is_file()


def test_a_reference_step_measured_again_is_said(capacity_run: Path, tmp_path: Path, cli) -> None:
    run = _copy(capacity_run, tmp_path)
    record = run / "bench_baseline" / "record.json"
    data = json.loads(record.read_text())
    data["result"]["median_ttft_ms"] = 25.0
    record.write_text(json.dumps(data))
    done = cli("report", str(run))
    assert done.returncode == 0, done.stderr
    line = ("the medians of step bench_baseline differ from those the SLO was resolved from (ttft 20 ms recorded, "
            "25.0 now)")
    assert line in json.loads((run / "capacity" / "capacity.json").read_text())["warnings"][0]
    assert f"warning: {line}" in Parsed((run / "report.html").read_text()).all_text()


@pytest.mark.parametrize("damage,said", [
    ('{"kind": "llama4spec.capacity_search", "probes": [', "not valid JSON"),
    ('{"kind": "llama4spec.capacity_search", "settings": {"start": 1}, "probes": [{"rate": "x"}]}',
     "'probes[0].rate' is 'x', not a request rate above 0, at most 1e4 per second"),
    ('{"kind": "llama4spec.capacity_search", "settings": {"start": 1, "evil": 2}, "probes": []}',
     "its settings are missing or hold unknown keys"),
    ('[1, 2]', "not a capacity search"),
])
def test_a_damaged_search_json_is_one_line_exit_2_and_nothing_rebuilt(cli, capacity_run: Path, tmp_path: Path,
                                                                      damage: str, said: str) -> None:
    run = _copy(capacity_run, tmp_path)
    (run / SEARCH / "search.json").write_text(damage)
    before = {p: p.read_bytes() for p in (run / "summary.md", run / "capacity" / "capacity.json")}
    done = cli("report", str(run))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr and f"{SEARCH}/search.json" in done.stderr
    assert all(p.read_bytes() == b for p, b in before.items())
    page.write(run)  # the page says which setting is not measured, and why
    body = Parsed((run / "report.html").read_text()).all_text()
    assert "Not measured EAGLE k=1:" in body and said in body and "1 settings not measured" in body


def test_runs_that_contradict_a_decreasing_curve_are_said_with_the_isotonic_estimate(cli, capacity_run: Path,
                                                                                     tmp_path: Path) -> None:
    """A crafted search.json whose runs' attainment rises with the rate everywhere: ``report`` says the
    logistic shape does not fit and gives the isotonic estimate, exit 0, no traceback."""
    run = _copy(capacity_run, tmp_path)
    path = run / SEARCH / "search.json"
    data = json.loads(path.read_text())
    rates = [4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    data["probes"] = [{"rate": r, "why": "crafted", "runs": [
        {"attainment": a, "requests": 100, "per_metric": {"ttft": a, "tpot": 1.0}} for a in (0.5 + 0.08 * i, 0.52 + 0.08 * i)]}
        for i, r in enumerate(rates)]
    path.write_text(json.dumps(data))
    done = cli("report", str(run))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    s = json.loads((run / "capacity" / "capacity.json").read_text())["settings"]["EAGLE k=1"]
    assert s["search"] == "fit" and not s["shape_fits"] and s["rate"] is None
    md = (run / "capacity" / "report.md").read_text()
    assert "EAGLE k=1: the logistic shape does not fit (" in md and "isotonic estimate" in md
    body = Parsed((run / "report.html").read_text()).all_text()
    assert "the logistic shape does not fit" in body and "isotonic estimate" in body
    gain = s["gain"]
    assert gain["ratio"] is None and gain["high"] is None  # no gain from a curve that does not fit


def test_a_fresh_search_removes_only_the_probe_directories_it_names(tmp_path: Path) -> None:
    from llama4spec.capacity.search import _forget_probes
    from llama4spec.capacity.write_report import probe_dir

    step = tmp_path / "step"
    mine = [probe_dir(step, r) for r in (8.0, 4.007, 0.5)]
    for d in mine:
        (d / "run=0").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    probes = mine[0].parent
    kept = [probes / n for n in ("rate=08", "rate=8.0", "rate=notes", "rate=", "other")]
    for d in kept:
        d.mkdir()
    (probes / "rate=16").symlink_to(outside, target_is_directory=True)
    (outside / "keep").write_text("x")
    _forget_probes(probes)
    assert not any(d.exists() for d in mine)
    assert all(d.is_dir() for d in kept) and (outside / "keep").exists()
