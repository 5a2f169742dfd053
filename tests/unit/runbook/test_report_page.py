"""report.html: written by a run and by ``report`` from the records alone, one self-contained file
(every verdict, table and figure in the HTML itself, nothing loaded from elsewhere, one inline script
allowed by its hash), user text escaped, secrets redacted. Run directories are built from made-up
records (tests/recorded_runs.py); no engine runs. The same page in a real browser:
test_report_page_browser.py."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from llama4spec.errors import UserError
from llama4spec.runbook import write_page as page
from tests.recorded_runs import REPO, finished_run


class Parsed(HTMLParser):
    """What the HTML text holds before any script runs: tags with their attributes, text, scripts."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "script":
            self.scripts.append(data)
        elif self._in is None:
            self.text.append(data)

    def count(self, tag: str) -> int:
        return sum(1 for t, _ in self.tags if t == tag)

    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())


def urls(parsed: Parsed) -> list[str]:
    """Every URL an element of the page would load or link to."""
    return [v for _, attrs in parsed.tags for k, v in attrs.items() if k in ("src", "href", "action", "srcset",
                                                                           "poster", "data") and v]


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("page") / "run")


def test_a_finished_run_writes_one_self_contained_page(sweep_run: Path) -> None:
    text = (sweep_run / "report.html").read_text()
    parsed = Parsed(text)
    body = parsed.all_text()
    # the verdicts come first, then the sweep, its tables, plots, schedule, steps and provenance
    order = [body.index(s) for s in ("Verdicts", "sweep: speculation", "Sweep sweep", "Plots", "Lookahead schedule",
                                     "Steps", "Provenance")]
    assert order == sorted(order)
    assert "recommended: k=3" in body and "concurrency 1" in body and "concurrency 4" in body
    # two concurrencies, the schedule, the steps, versions, host, command and environment
    assert parsed.count("table") >= 8
    interval = r"sweep-tiny_eagle-k3-c1 \d+\.\d \[\d+\.\d, \d+\.\d\]"
    assert re.search(interval, body), "the medians carry their 95% intervals"
    images = [attrs for tag, attrs in parsed.tags if tag == "img"]
    assert len(images) == 5 and all(a["src"].startswith("data:image/png;base64,") for a in images)  # and the frontier
    assert all(base64.b64decode(a["src"].split(",", 1)[1]).startswith(b"\x89PNG") for a in images)
    assert {a["alt"].split(":")[0] for a in images} == {"acceptance by position", "throughput vs concurrency",
                                                        "speedup, measured vs predicted", "acceptance length per request",
                                                        "frontier"}
    series = json.loads((sweep_run / "sweep" / "sweep.json").read_text())["plots"]["acceptance_per_request"]
    assert series == ["tiny_eagle k=1", "tiny_eagle k=3"]  # a box per setting
    assert all(u.startswith("data:") for u in urls(parsed)), "nothing is loaded from anywhere else"
    assert parsed.count("link") == 0 and parsed.count("iframe") == 0 and "@import" not in text and "url(" not in text
    # one inline script (table sorting), allowed by its hash and nothing else
    (script,) = [attrs for tag, attrs in parsed.tags if tag == "script"]
    assert "src" not in script and len(parsed.scripts) == 1 and len(parsed.scripts[0].splitlines()) <= 12
    digest = base64.b64encode(hashlib.sha256(parsed.scripts[0].encode()).digest()).decode()
    (csp,) = [a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in csp and f"'sha256-{digest}'" in csp and "img-src data:" in csp
    # provenance: versions, host and the commands of the steps
    assert "vllm" in body and "python" in body and "vllm bench serve" in body.replace("-m vllm", "vllm")


def test_the_page_attributes_each_points_tpot_tail(sweep_run: Path) -> None:
    """The recorded requests: every fourth accepts nothing and is twice as slow a token (category
    early_miss); three runs of 40 requests pooled put 12 beyond the P90 TPOT, all of them low."""
    parsed = Parsed((sweep_run / "report.html").read_text())
    body = parsed.all_text()
    assert "TPOT tail attribution" in body
    assert body.index("TPOT tail attribution") < body.index("Lookahead schedule")
    assert "The TPOT tail is the draft's: low-acceptance requests are over-represented in it; 100% of the 12 requests" in body
    assert "category early_miss 30 12 25% 100% 4.00x" in body and "TTFT is fixed before the first verification step" in body
    analysis = json.loads((sweep_run / "sweep" / "sweep.json").read_text())
    tails = analysis["tail_attribution"]
    assert {t["point"] for t in tails} == {"sweep-tiny_eagle-k1-c1", "sweep-tiny_eagle-k3-c1", "sweep-tiny_eagle-k1-c4",
                                           "sweep-tiny_eagle-k3-c4", "sweep-schedule-c1", "sweep-schedule-c4"}
    assert all(t["drafts_fault"] and t["tail"] == 12 and t["categories"][0]["name"] == "category clean_start"
               for t in tails)
    report = (sweep_run / "sweep" / "report.md").read_text()
    assert "## TPOT tail attribution" in report and "| category early_miss | 30 | 12 | 25% | 100% | 4.00x |" in report


def test_the_report_command_writes_the_page_from_the_records(cli, sweep_run: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sweep_run, run)
    (run / "report.html").unlink()
    done = cli("report", str(run))
    assert done.returncode == 0, done.stderr
    assert f"report: {run / 'report.html'}" in done.stdout
    assert "speculation pays up to concurrency 1" in Parsed((run / "report.html").read_text()).all_text()
    merged = tmp_path / "merged"
    done = cli("report", str(run), str(sweep_run), "--out", str(merged))
    assert done.returncode == 0, done.stderr
    assert Parsed((merged / "report.html").read_text()).count("img") == 5


def test_a_report_html_that_is_a_directory_is_one_line_and_nothing_is_rebuilt(cli, sweep_run: Path,
                                                                             tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sweep_run, run)
    (run / "report.html").unlink()
    (run / "report.html").mkdir()
    before = (run / "summary.md").read_text()
    done = cli("report", str(run))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "report.html: is a directory" in done.stderr
    assert (run / "summary.md").read_text() == before  # checked before anything was written
    with pytest.raises(UserError, match="is a directory"):
        page.write(run)


def test_user_text_is_escaped_and_secrets_are_redacted(sweep_run: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sweep_run, run)
    status = json.loads((run / "status.json").read_text())
    status["description"] = "<script>alert('description')</script> token sk-live-abcdef123456"
    status["steps"][0].update(status="failed", error='<img src="http://example.invalid/x.png" onerror="alert(1)">')
    (run / "status.json").write_text(json.dumps(status))
    config = run / "sweep-tiny_eagle-k1-c1" / "config.yaml"
    config.write_text(config.read_text().replace("name: tiny_eagle", "name: <b>bold</b>", 1))
    env = json.loads((run / "environment.json").read_text())
    env["MY_API_KEY"] = "abcd-not-shown-1234"
    (run / "environment.json").write_text(json.dumps(env))
    page.write(run, secrets=["sk-live-abcdef123456"])
    text = (run / "report.html").read_text()
    parsed = Parsed(text)
    assert parsed.count("script") == 1 and parsed.count("b") == 0 and parsed.count("img") == 5
    assert "&lt;script&gt;alert(&#39;description&#39;)&lt;/script&gt;" in text
    assert "&lt;b&gt;bold&lt;/b&gt; k=1" in text  # a draft's name, from its config
    assert "http://example.invalid" in parsed.all_text()  # shown as text, never loaded
    assert all(u.startswith("data:") for u in urls(parsed))
    assert "sk-live-abcdef123456" not in text and "abcd-not-shown-1234" not in text and "***" in text


def test_stop_reasons_and_points_not_measured_are_shown(sweep_run: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sweep_run, run)
    record = run / "sweep-tiny_eagle-k3-c1" / "record.json"
    data = json.loads(record.read_text())
    data["stop"] = {"reason": "resolved", "runs": 3, "verdict": "faster"}
    record.write_text(json.dumps(data))
    shutil.rmtree(run / "sweep-tiny_eagle-k1-c4")
    page.write(run)
    body = Parsed((run / "report.html").read_text()).all_text()
    assert "resolved after 3 runs (faster)" in body and "Measured until decided" in body
    assert "Not measured sweep-tiny_eagle-k1-c4 : no record" in body
    assert "1 points not measured" in body


def test_where_the_groups_ran_and_co_location_are_shown(tmp_path: Path) -> None:
    from tests.unit.runbook.test_report_rebuild import _groups_run

    t = "2026-12-01T10:{:02d}:00+0000".format
    run = _groups_run(tmp_path, {"sweep-none": ("n1", t(0), t(10)), "sweep-tiny_eagle-k1": ("n1", t(1), t(9)),
                                 "sweep-tiny_eagle-k3": ("n2", t(11), t(20)), "sweep-schedule": ("n1", t(21), t(30))})
    page.write(run)
    parsed = Parsed((run / "report.html").read_text())
    body = parsed.all_text()
    assert "Where the groups ran" in body and "sweep-tiny_eagle-k3 n2" in body
    assert "warning: concurrency 1: points measured under different co-location" in body
    assert "sweep-tiny_eagle-k1-c1 sweep-none" in body  # the point and the group beside its own


def test_temperature_findings_are_shown(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run", runbook=REPO / "runbooks" / "tiny_cpu_temperature.yaml")
    body = Parsed((run / "report.html").read_text()).all_text()
    assert "Temperature Each temperature is analysed on its own" in body
    assert "at temperature 0:" in body and "at temperature 1:" in body


def test_a_page_is_written_even_for_a_run_whose_plots_are_gone(sweep_run: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sweep_run, run)
    (run / "sweep" / "speedup.png").unlink()
    (run / "sweep" / "acceptance_by_position.png").write_bytes(b"<svg onload=alert(1)>")  # not a PNG: left out
    page.write(run)
    parsed = Parsed((run / "report.html").read_text())
    assert parsed.count("img") == 3
    assert "speedup, measured vs predicted: not shown" in parsed.all_text()


def test_a_run_without_a_sweep_leads_with_its_comparison(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run", runbook=REPO / "runbooks" / "tiny_cpu_eagle_vs_baseline.yaml", repeats=1)
    parsed = Parsed((run / "report.html").read_text())
    body = parsed.all_text()
    assert re.search(r"compare: output throughput [\d.]+ against [\d.]+: [\d.]+x \(bench_eagle over bench_baseline\)",
                     body)
    assert "Comparisons" in body and parsed.count("img") == 0


def test_a_run_whose_page_cannot_be_written_says_so_and_keeps_its_results(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    run = tmp_path / "run"
    (run / "report.html").mkdir(parents=True)
    console = Console(record=True, width=200, file=io.StringIO())
    finished_run(run, console=console)  # exit 0: the run's results stand
    said = console.export_text()
    assert "note: report.html not written" in said and "is a directory" in said
    assert (run / "summary.md").is_file() and (run / "sweep" / "report.md").is_file()


def test_a_break_even_map_is_its_own_section_not_a_sweep(tmp_path) -> None:
    """A breakeven step expands into servers like a sweep, but its points are synthetic acceptance
    lengths, not lookaheads: the page shows the map it kept (and its plots), never a sweep analysis
    of its points."""
    from tests.recorded_runs import finished_run

    run = finished_run(tmp_path / "run", runbook=Path("runbooks/tiny_cpu_breakeven.yaml"), repeats=2)
    page = (run / "report.html").read_text()
    assert 'id="report-breakeven"' in page and "# Break-even map: speedup against acceptance length" in page
    assert "Sweep breakeven" not in page and "recommended" not in page
