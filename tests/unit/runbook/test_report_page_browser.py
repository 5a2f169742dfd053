"""report.html in a real browser (headless Chromium, Debian's chromium-headless-shell, installed by
scripts/ci-system-deps.sh), with the network off (every request to a proxy that does not exist):
a screenshot (kept under the test's tmp directory), the DOM after the page's script ran (the verdict,
every table and every figure present), and the browser's network log (only file:// URLs). Skips with
the reason where no browser is installed. No engine runs: the run directory is built from records
(tests/recorded_runs.py).

LLAMA4SPEC_UPDATE_SCREENSHOT=1 also writes the screenshot to docs/report-screenshot.png, of a copy of
the page with a banner saying that it is an illustration from made-up data (the records are invented).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.recorded_runs import REPO, finished_run
from tests.unit.runbook.test_report_page import Parsed

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
SCREENSHOT = REPO / "docs" / "report-screenshot.png"
# On the docs' picture only (never on a page a run writes): the records behind it are made up.
ILLUSTRATION_TEXT = ("ILLUSTRATION FROM MADE-UP DATA: the records behind this page are invented "
                     "(tests/recorded_runs.py), not measured; its figures and verdicts show the layout only.")
ILLUSTRATION = ('<div style="background:#fff3b0;border:3px solid #b00;color:#b00;font:bold 22px sans-serif;'
                f'padding:14px;margin:0 0 16px 0">{ILLUSTRATION_TEXT}</div>')


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name) or (f"/usr/lib/chromium/{name}" if Path(f"/usr/lib/chromium/{name}").is_file()
                                       else None)
        if found:
            return found
    pytest.skip("no headless Chromium here (apt-get install chromium-headless-shell; scripts/ci-system-deps.sh "
                "installs it)")


def open_page(page: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    """The browser on ``page`` (a file:// URL), offline: every request goes to a proxy at a closed port."""
    argv = [browser(), "--no-sandbox", "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={out / 'profile'}", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
            *flags, page.resolve().as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=out)


def requested(net_log: Path) -> list[str]:
    """Every URL the browser's network log says it requested."""
    data = json.loads(net_log.read_text())
    out = []
    stack = list(data.get("events", []))
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "url" and isinstance(value, str):
                    out.append(value)
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    browser()
    return finished_run(tmp_path_factory.mktemp("browser") / "run")


def test_the_page_in_a_browser_offline(run_dir: Path, tmp_path: Path) -> None:
    page = run_dir / "report.html"
    shot, net = tmp_path / "report.png", tmp_path / "net.json"
    done = open_page(page, tmp_path, f"--screenshot={shot}", "--window-size=1400,3500", f"--log-net-log={net}")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 50_000  # a page, not a blank
    if os.environ.get("LLAMA4SPEC_UPDATE_SCREENSHOT"):
        illustration = tmp_path / "illustration.html"
        illustration.write_text(page.read_text().replace("<body>", "<body>" + ILLUSTRATION, 1))
        docs_shot = tmp_path / "docs.png"
        done = open_page(illustration, tmp_path, f"--screenshot={docs_shot}", "--window-size=1400,3500")
        assert done.returncode == 0 and docs_shot.is_file(), done.stderr[-2000:]
        from PIL import Image
        from PIL.PngImagePlugin import PngInfo

        info = PngInfo()
        info.add_text("Description", ILLUSTRATION_TEXT)
        Image.open(docs_shot).save(SCREENSHOT, pnginfo=info)
    assert SCREENSHOT.is_file() and SCREENSHOT.read_bytes().startswith(b"\x89PNG")
    # the DOM after the script ran: the verdict, every table and figure of the HTML text, sorted headers
    dom_net = tmp_path / "dom-net.json"
    dom = open_page(page, tmp_path, "--dump-dom", f"--log-net-log={dom_net}")
    assert dom.returncode == 0, dom.stderr[-2000:]
    before, after = Parsed(page.read_text()), Parsed(dom.stdout)
    assert "speculation pays up to concurrency 1" in after.all_text()
    assert after.count("table") == before.count("table") >= 8
    assert after.count("img") == before.count("img") == 5  # the sweep's four figures and its frontier
    assert [a.get("src", "")[:30] for t, a in after.tags if t == "img"] == ["data:image/png;base64,iVBORw0K"] * 5
    assert "TPOT tail attribution" in after.all_text() and "The TPOT tail is the draft's" in after.all_text()
    # the network log: nothing but the page itself (file://) was asked for
    for log in (net, dom_net):
        assert all(url.startswith("file://") for url in requested(log)), requested(log)


def test_the_network_log_would_show_a_request_to_anywhere_else(tmp_path: Path) -> None:
    """The check above can fail: a page that loads an image from elsewhere shows it in the log."""
    browser()
    page = tmp_path / "remote.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://192.0.2.7/x.png"></body></html>')
    net = tmp_path / "net.json"
    done = open_page(page, tmp_path, "--dump-dom", f"--log-net-log={net}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "http://192.0.2.7/x.png" in requested(net)


def test_the_sorting_script_sorts_a_table_in_the_browser(run_dir: Path, tmp_path: Path) -> None:
    """The one inline script runs (its hash is allowed) and sorts by a clicked header: a copy of the
    page clicks the throughput header of the first table twice (descending), then dumps the DOM."""
    text = (run_dir / "report.html").read_text()
    click = ('<script>var th = document.querySelectorAll("table.sortable")[0].tHead.rows[0].cells[2];'
             'th.click(); th.click();</script></body>')
    page = tmp_path / "clicked.html"
    page.write_text(text.replace("</body>", click))  # not allowed by the page's policy: must not run
    dom = open_page(page, tmp_path, "--dump-dom")
    first = Parsed(dom.stdout)
    assert dom.returncode == 0 and first.count("table") >= 8
    # the page's policy blocks the added script: the rows stay in the page's order
    rows = _first_column(dom.stdout)
    assert rows[0] == "no speculation"
    # the same click in a page whose policy allows it (the hash of the clicking script added)
    import base64
    import hashlib

    body = click.removeprefix("<script>").removesuffix("</script></body>")
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    allowed = page.with_name("allowed.html")
    allowed.write_text(text.replace("</body>", click).replace("script-src ", f"script-src 'sha256-{digest}' "))
    dom = open_page(allowed, tmp_path, "--dump-dom")
    tput = _column(dom.stdout, 2)
    assert tput == sorted(tput, reverse=True) and len(tput) == 4


def _first_column(dom: str) -> list[str]:
    return [row[0] for row in _rows(dom)]


def _column(dom: str, i: int) -> list[float]:
    return [float(row[i].split()[0]) for row in _rows(dom)]


def _rows(dom: str) -> list[list[str]]:
    """The body rows of the page's first table, as text cells."""
    table = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [[Parsed(cell).all_text() for cell in row.split("</td>")[:-1]] for row in table.split("</tr>")[:-1]]


def test_request_capacity_in_a_browser_offline(tmp_path: Path) -> None:
    """A capacity run's page (tests/recorded_runs.py: simulated searches): its headline, table and
    latency-throughput plots in the DOM, nothing but the page itself asked for."""
    from tests.recorded_runs import finished_capacity_run

    browser()
    page = finished_capacity_run(tmp_path / "run") / "report.html"
    net = tmp_path / "net.json"
    dom = open_page(page, tmp_path, "--dump-dom", f"--log-net-log={net}")
    assert dom.returncode == 0, dom.stderr[-2000:]
    after = Parsed(dom.stdout)
    headline = json.loads((page.parent / "capacity" / "capacity.json").read_text())["headline"]
    assert headline.startswith("EAGLE k=3 carries ") and headline in after.all_text()
    assert after.count("img") == 4 and "request capacity req/s [low, high]" in after.all_text()
    assert all(url.startswith("file://") for url in requested(net)), requested(net)


def test_the_docs_picture_says_it_is_an_illustration_from_made_up_data() -> None:
    """On the picture (a banner, and the PNG's description) and in the text beside it in the docs."""
    from PIL import Image

    assert Image.open(SCREENSHOT).text.get("Description") == ILLUSTRATION_TEXT
    doc = (REPO / "docs" / "sweeps-and-statistics.md").read_text()
    at = doc.index("(report-screenshot.png)")
    near = doc[at - 600:at + 400].lower()
    assert "made-up data" in near and "illustration" in near and "tests/recorded_runs.py" in near
