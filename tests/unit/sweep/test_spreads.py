"""benchmarks/spreads.py: the within-start / between-start split of log-throughput noise (pure;
synthetic data with known components), reading run directories, and the generated runbook."""

from __future__ import annotations

import importlib.util
import json
import math
import sys

import numpy as np
import pytest

from llama4spec.runbook.schema import load
from tests.helpers import REPO

_SPEC = importlib.util.spec_from_file_location("benchmarks_spreads", REPO / "benchmarks" / "spreads.py")
spreads = sys.modules.setdefault("benchmarks_spreads", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(spreads)


def _synthetic(within: float, between: float, starts: int, runs: int, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, between, (starts, 1))
    return (200.0 * np.exp(effect + rng.normal(0.0, within, (starts, runs)))).tolist()


def test_hand_computed_cell() -> None:
    # logs: start a = (0, 0.2), start b = (0.4, 0.6): within deviations +-0.1 each, ss 0.04 over 2 df
    s = spreads.spread([[1.0, math.exp(0.2)], [math.exp(0.4), math.exp(0.6)]])
    assert s.within_sd == pytest.approx(math.sqrt(0.02))
    # start means 0.1 and 0.5: variance 0.08; less within 0.02 / 2 runs: 0.07
    assert s.raw_sd == pytest.approx(math.sqrt(0.08))
    assert s.between_sd == pytest.approx(math.sqrt(0.07))
    assert s.first_offset == pytest.approx(-0.2)
    assert (s.starts, s.runs, s.median) == (2, [2, 2], pytest.approx((math.exp(0.2) + math.exp(0.4)) / 2))


def test_between_is_floored_at_zero() -> None:
    # start means equal, runs spread within: the subtraction goes negative, the sd is 0
    s = spreads.spread([[100.0, 120.0], [120.0, 100.0]])
    assert s.raw_sd == 0.0 and s.between_sd == 0.0 and s.within_sd > 0


def test_unequal_runs_per_start_use_the_mean_of_one_over_n() -> None:
    logs = [[0.0, 0.1, 0.2], [0.5, 0.7]]
    s = spreads.spread([np.exp(x).tolist() for x in logs])
    within_var = (0.02 + 0.02) / 3
    means = [0.1, 0.6]
    expected = np.var(means, ddof=1) - within_var * (1 / 3 + 1 / 2) / 2
    assert s.within_sd == pytest.approx(math.sqrt(within_var))
    assert s.between_sd == pytest.approx(math.sqrt(expected))


@pytest.mark.parametrize("within, between", [(0.05, 0.10), (0.10, 0.03), (0.08, 0.0)])
def test_known_components_are_recovered(within: float, between: float) -> None:
    # 400 cells x 3 starts x 5 runs, pooled: the sums of squares converge on the true variances
    cells = [spreads.spread(_synthetic(within, between, 3, 5, seed)) for seed in range(400)]
    p = spreads.pooled(cells)
    assert p.within_sd == pytest.approx(within, rel=0.03)
    assert p.between_sd == pytest.approx(between, abs=0.012)
    assert p.raw_sd == pytest.approx(math.sqrt(between ** 2 + within ** 2 / 5), rel=0.06)
    (wlo, whi), (blo, bhi) = p.intervals()
    assert wlo < within < whi and blo <= between <= bhi


def test_pooling_weights_by_degrees_of_freedom_and_floors_after() -> None:
    a = spreads.spread([[100.0, 120.0], [120.0, 100.0]])  # between part below 0
    b = spreads.spread([[100.0, 101.0], [150.0, 151.0]])  # between part well above 0
    p = spreads.pooled([a, b])
    assert p.within_df == a.within_df + b.within_df and p.means_df == 2
    assert p.between_sd == pytest.approx(math.sqrt(max((a.between_ss + b.between_ss) / 2, 0.0)))
    assert p.between_sd < b.between_sd
    assert math.isnan(spreads.spread([[100.0, 110.0]]).between_sd)  # one start: no between estimate


def _record(runs: list[float]) -> dict:
    counted = [{"kind": "llama4spec.bench", "label": "x", "returncode": 0,
                "result": {"output_throughput": r, "completed": 16}} for r in runs]
    return {"kind": "llama4spec.bench", "label": "x", "returncode": 0, "result": {"completed": 16},
            "repeats": len(runs), "runs": counted}


def test_reads_run_directories_and_prints_the_table(tmp_path) -> None:
    data = {"none": _synthetic(0.05, 0.1, 3, 4, 1), "eagle": _synthetic(0.05, 0.1, 3, 4, 2)}
    for d in ("one", "two"):
        for setting, starts in data.items():
            for i, runs in enumerate(starts, 1):
                for c in (1, 4):
                    step = tmp_path / d / spreads.bench_id(setting, i, c)
                    step.mkdir(parents=True)
                    (step / "record.json").write_text(json.dumps(_record(runs)))
    (tmp_path / "one" / "none-s1").mkdir()  # a serve step's directory: ignored
    read = spreads.read_runs([tmp_path / "one", tmp_path / "two"])
    assert sorted(read) == [("eagle", 1), ("eagle", 4), ("none", 1), ("none", 4)]
    assert len(read[("none", 1)]) == 6  # 3 starts of each directory, starts of their own
    assert read[("none", 4)][0] == pytest.approx(data["none"][0])
    text = spreads.table(read)
    rows = {line.split()[0] + " " + line.split()[1]: line for line in text.splitlines() if len(line.split()) > 1}
    assert "none 1" in rows and "eagle 4" in rows and "c=1, all" in rows and "all 72/20" in rows


def test_generated_runbook_loads_and_interleaves_settings(tmp_path) -> None:
    book = spreads.runbook(["none", "eagle"], 3, 5, 2, [1, 4], 8767)
    path = tmp_path / "spreads.yaml"
    path.write_text(json.dumps(book))
    loaded, problems = load(path)
    assert problems == []
    ids = [s.id for s in loaded.steps]
    assert ids[:5] == ["none-s1", "none-s1-c1", "none-s1-c4", "none-s1-stop", "eagle-s1"]
    benches = [s for s in loaded.steps if s.kind == "bench"]
    assert len(benches) == 12 and all(s.keys.repeats == 5 and s.keys.warmup == 2 for s in benches)
    assert all(spreads.BENCH_ID.match(s.id) for s in benches)
