"""The registry of figures (llama4spec/figures.py): sound entries, every view reads it, and a new
sweep figure reaches the points, the tables, sweep.json and regress from its entry alone."""

from __future__ import annotations

import pytest

from llama4spec import figures
from llama4spec.analysis import regress
from llama4spec.sweep import tables as sweep_tables, to_json as sweep_json
from llama4spec.stats.speedup_model import analyse
from llama4spec.analysis.points import point
from llama4spec.config import validate
from llama4spec.results import comparison
from llama4spec.results.bench import BenchRecord
from llama4spec.sweep import report as sweep_step


def test_entries_are_sound() -> None:
    keys = [f.key for f in figures.FIGURES]
    assert len(keys) == len(set(keys))
    columns = [f.column for f in figures.sweep()]
    assert columns == list(range(len(columns)))  # one place each, none skipped
    for f in figures.sweep():
        assert f.label and f.short, f.key  # a header in the wide and the narrow table
        assert format(1234.5678, f.fmt)
    for f in figures.shown_in(figures.REGRESS):
        assert f.column is not None and f.row, f.key  # regress compares sweep figures, each with its row label
    assert [f.key for f in figures.slo_figures()] == [f"median_{m}_ms" for m in figures.SLO_METRICS]
    stems = [plot.stem for _, plot in figures.plotted()]
    assert len(stems) == len(set(stems))


def test_every_view_reads_the_registry() -> None:
    sweep = figures.sweep()
    assert sweep_tables.columns()[1:2 + len(sweep)] == [f.label for f in sweep] + ["speedup"]
    short = [c for c in sweep_tables.columns(short=True)[1:] if c != "95% CI"]
    assert short[:len(sweep)] == [f.short for f in sweep]
    old, new = regress.Runs((100.0, 101.0, 99.0)), regress.Runs((100.0, 102.0, 98.0))
    pairs = {("a", "a"): {f.key: (old, new) for f in figures.FIGURES}}
    assert [c.metric.key for c in regress.compare_points(pairs)[0].changes] == [f.key for f in figures.regressed()]
    assert validate.SLO_METRICS == figures.SLO_METRICS
    result = {f.key: 1.0 for f in figures.FIGURES}
    record = BenchRecord("x", returncode=0, result=result)
    shown = [m["metric"] for m in comparison.metrics(record, record)]
    assert shown == [f.key for f in figures.shown_in(figures.COMPARE)]
    summary = [f.key for f in figures.shown_in(figures.SUMMARY)]
    assert list(record.figures())[:len(summary)] == summary
    for _, plot in figures.plotted():
        assert sweep_step.IMAGES[plot.title.lower()] == plot.stem


E2E = figures.Figure("mean_e2el_ms", "mean E2E", "ms", False, views=frozenset({figures.REGRESS}), column=4,
                     label="E2E ms", short="E2E", row="E2E ms")


@pytest.fixture
def with_e2e(monkeypatch):
    """The registry with one more sweep figure, as a new entry would add it."""
    monkeypatch.setattr(figures, "FIGURES", (*figures.FIGURES, E2E))


def _record(tput: float, e2e: float, k: int | None) -> BenchRecord:
    runs = [BenchRecord("x", returncode=0, lookahead=k,
                        result={"completed": 8, "output_throughput": tput + d, "mean_tpot_ms": 10.0,
                                "mean_ttft_ms": 50.0, "mean_e2el_ms": e2e + d}) for d in (-1.0, 0.0, 1.0)]
    return BenchRecord.of_runs("x", runs, lookahead=k)


def test_a_new_sweep_figure_is_one_entry(with_e2e) -> None:
    base = point("base", {"bench": {"max_concurrency": 1}}, _record(100.0, 900.0, None))
    spec = point("k2", {"draft": {"method": "eagle", "name": "eagle"}, "lookahead": 2,
                        "bench": {"max_concurrency": 1}}, _record(150.0, 600.0, 2))
    assert spec.value("mean_e2el_ms") == 600.0 and spec.samples["mean_e2el_ms"] == (599.0, 600.0, 601.0)
    analysis = analyse([base, spec])
    assert sweep_tables.columns()[5] == "E2E ms" and sweep_tables.columns(short=True)[6] == "E2E"
    wide = sweep_tables.rows(analysis.at[0])
    assert wide[1][5].startswith("600.00 [")  # after setting and the four figures: the new column
    narrow = sweep_tables.rows(analysis.at[0], short=True)
    assert narrow[1][6] == "600.00"
    record = sweep_json.to_record(analysis)["concurrency"][0]["rows"][0]
    assert record["mean_e2el_ms"] == 600.0 and record["intervals"]["mean_e2el_ms"]["samples"] == [599.0, 600.0, 601.0]
    old, new = regress.Runs((900.0, 901.0, 899.0)), regress.Runs((1200.0, 1201.0, 1199.0))
    (change,) = regress.compare_points({("a", "a"): {"mean_e2el_ms": (old, new)}})[0].changes
    assert change.metric is E2E and change.verdict == regress.REGRESSED  # lower is better: 33% slower
    assert regress.gate(regress.compare_points({("a", "a"): {"mean_e2el_ms": (old, new)}}), 10)[0].startswith(
        "a: E2E ms 900 -> 1200")
