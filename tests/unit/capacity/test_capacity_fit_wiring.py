"""A capacity step with ``search: fit``: its keys checked (precision in (0, 1), one line each), its
dry run, its search's moves from the fitted curve, search.json's fit, the report's fitted section."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from llama4spec.errors import UserError
from llama4spec.capacity.write_report import FIT_FIGURE, Found, fitted_section
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.render import plan_text
from llama4spec.capacity import search as search_step
from llama4spec.capacity.search_settings import Settings
from llama4spec.capacity.strategies.base import of
from llama4spec.capacity.strategies.fit import add_run
from llama4spec.capacity import probing as cap
from llama4spec.capacity.answer import from_json
from tests.helpers import REPO, png_series

TINY = REPO / "runbooks" / "tiny_cpu_capacity.yaml"


def _runbook(tmp_path: Path, keys: str) -> Path:
    path = tmp_path / "rb.yaml"
    path.write_text(TINY.read_text().replace("precision: 0.1", keys))
    return path


@pytest.mark.parametrize("keys,expected", [
    ("search: fit\n    precision: 1", "precision must lie in (0, 1)"),
    ("search: fit\n    precision: 0", "'precision' must be a number from 0.01 up to 1"),
    ("search: nope", "'search' must be one of fit, bisect"),
])
def test_bad_fitted_search_keys_are_one_line_each(tmp_path: Path, keys: str, expected: str) -> None:
    with pytest.raises(UserError) as info:
        plan_file(_runbook(tmp_path, keys), lambda name: tmp_path / "run", [])
    assert len(info.value.problems) == 1 and expected in info.value.problems[0], info.value.problems


def test_a_fitted_search_says_so_in_the_dry_run(tmp_path: Path) -> None:
    plan = plan_file(_runbook(tmp_path, "search: fit"), lambda name: tmp_path / "run", [])
    console = Console(record=True, width=400, file=io.StringIO())
    plan_text(console, plan)
    text = console.export_text()
    assert "then each run at the crossing of one curve fitted to every run, until the 95% interval is within +-10%" \
        in text and "bisecting" not in text


def _measured(rate: float) -> cap.Run:
    p = 1 / (1 + math.exp((math.log(rate / 25.0) - 0.15 * math.log(9)) / 0.15))
    return cap.Run(p, 400)


def test_the_fitted_search_moves_to_the_crossing_and_records_the_fit() -> None:
    s = Settings(search="fit", start_rate=8.0, precision=0.1)
    search = cap.Search(s.bisect(0.9))
    seen = []
    while (rate := of(s, 0.9).move(search)[0]) is not None and len(seen) < 40:
        search = add_run(search, rate, _measured(rate), "why")
        seen.append(rate)
    assert 5 <= len(seen) < 40 and len(seen) > len(search.probes)  # rates repeat: the run is the unit
    record = search_step.document(search, {}, {"ttft": 60.0}, {}, s)
    assert record["search"] == "fit" and record["fit"]["next"]["stop"] == "precision"
    low, high = record["fit"]["interval"]
    assert low <= 25.0 <= high and record["fit"]["estimate"] == pytest.approx(25.0, rel=0.05)


def test_the_report_refits_the_fitted_searches_and_draws_them(tmp_path: Path) -> None:
    s = Settings(search="fit", start_rate=8.0, precision=0.1)
    search = cap.Search(s.bisect(0.9))
    while (rate := of(s, 0.9).move(search)[0]) is not None:
        search = add_run(search, rate, _measured(rate), "why")
    found = Found({}, {"no speculation": search, "EAGLE k=3": search},
                  {"no speculation": {"fit": True}, "EAGLE k=3": {"fit": False}})
    text = fitted_section(found, tmp_path)
    assert "- no speculation: request capacity" in text and "- EAGLE k=3:" in text  # every setting on the figure
    series = png_series(tmp_path / FIT_FIGURE)
    assert f"]({FIT_FIGURE})" in text and "no speculation: fitted curve" in series and "EAGLE k=3: runs" in series


def test_search_json_reads_back_every_run_a_fitted_search_repeats_at_one_rate() -> None:
    s = Settings(start_rate=8.0)  # the fitted search: the default
    settings = s.bisect(0.9)
    search = cap.Search(settings)
    for i in range(30):  # more runs at one rate than a bisecting probe takes (RUNS_CAP)
        search = add_run(search, 8.0, cap.Run(0.9, 100, per_metric={"ttft": 0.95, "tpot": 0.9}), "w")
    assert 30 > cap.RUNS_CAP
    back = from_json(search_step.document(search, {}, {"ttft": 60.0, "tpot": 20.0}, {}, s), settings)
    assert back.probes == search.probes and back.probes[0].runs[0].per_metric == {"ttft": 0.95, "tpot": 0.9}


def test_shares_per_metric_are_read_from_each_request() -> None:
    from llama4spec.results.bench import BenchRecord

    result = {"ttfts": [0.01, 0.05, 0.02, 0.01], "latencies": [0.2, 0.3, 0.9, 0.0], "output_lens": [11, 11, 11, 11],
              "queue_times": [0.0, 0.0, 0.0, 0.0], "errors": ["", "", "", "boom"]}
    record = BenchRecord(label="x", returncode=0, result=result)
    shares = record.shares_with_queue({"ttft": 30.0, "tpot": 50.0})
    # TTFT <= 30 ms: requests 0 and 2; TPOT <= 50 ms: 0 (19 ms) and 1 (25 ms), 2 is 88 ms; 3 failed: a miss
    assert shares == {"ttft": 0.5, "tpot": 0.5}
    assert record.attainment_with_queue({"ttft": 30.0, "tpot": 50.0}) == 0.25
    assert BenchRecord(label="x", returncode=0, result={}).shares_with_queue({"ttft": 1.0}) is None


def test_a_stalled_run_is_named_as_an_outlier_in_search_json_and_the_report(tmp_path: Path) -> None:
    s = Settings(search="fit", start_rate=8.0, precision=0.1)
    search = cap.Search(s.bisect(0.9))
    while (rate := of(s, 0.9).move(search)[0]) is not None:
        search = add_run(search, rate, _measured(rate), "why")
    search = add_run(search, rate := search.probes[-1].rate, cap.Run(0.03, 400), "why")
    record = search_step.document(search, {}, {"ttft": 60.0}, {}, s)
    (outlier,) = record["fit"]["outliers"]
    assert outlier["rate"] == rate and outlier["attainment"] == pytest.approx(0.03)
    assert outlier["p_bonferroni"] < 0.01 and "set aside as an outlier" in outlier["why"]
    text = fitted_section(Found({}, {"no speculation": search}, {"no speculation": {"fit": True}}), tmp_path)
    assert f"the run at {rate:g} req/s attained 0.030" in text
    assert "no speculation: runs set aside as outliers" in png_series(tmp_path / FIT_FIGURE)


def test_a_search_stopped_at_its_budget_wider_than_its_precision_says_so_in_the_report() -> None:
    from llama4spec.capacity import tables as capacity_report
    from llama4spec.capacity.write_report import fitted_answer

    s = Settings(search="fit", start_rate=8.0, precision=0.1, max_probes=16)
    search = cap.Search(s.bisect(0.9))
    rng = np.random.default_rng(1)
    while (rate := of(s, 0.9).move(search)[0]) is not None:  # a shallow curve, crossing 0.9 at 14 req/s
        p = 1 / (1 + math.exp(-(math.log(9) - 0.8 * math.log(rate / 14.0))))
        search = add_run(search, rate, cap.Run(min(1.0, max(0.0, p + rng.normal(0, 0.08))), 600), "why")
    fitted = fitted_answer(search)
    assert fitted.decision.stop == "budget" and fitted.answer.half_width > 0.1
    record = capacity_report.analyse({"no speculation": search}, None, "slo", {}, {"no speculation": fitted})
    entry = record["settings"]["no speculation"]
    n = math.ceil(16 * (fitted.answer.half_width / 0.1) ** 2)
    assert any(f"about {n} runs in all would narrow it" in note for note in entry["notes"])
    assert f"about {n} runs in all" in entry["stopped"]
