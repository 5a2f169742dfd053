"""Temperature as a sweep axis (bench.temperature): each temperature analysed on its own, a sentence
when it changes the recommendation, the schedule from the lowest temperature (pure)."""

from __future__ import annotations

from rich.console import Console

from llama4spec.sweep import tables as render, to_json as sweep_json
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import analyse, temperature_findings
from llama4spec.analysis.points import _temperature
from llama4spec.sweep.schedule_fit import derive
from llama4spec.stats.noise import prior as known_noise


def _runs(c: int, t: float, table: dict[int | None, tuple[float, ...]]) -> list[Point]:
    return [Point(f"k{k}-c{c}-t{t:g}" if k else f"none-c{c}-t{t:g}", "eagle" if k else "none", k, c, sorted(xs)[1],
                  samples={"output_throughput": xs}, temperature=t)
            for k, xs in table.items()]


COLD = {None: (100.0, 101.0, 99.0), 1: (150.0, 152.0, 148.0), 3: (300.0, 303.0, 297.0)}
HOT = {None: (100.0, 101.0, 99.0), 1: (160.0, 161.0, 159.0), 3: (120.0, 121.0, 119.0)}


def test_each_temperature_is_compared_with_its_own_baseline():
    a = analyse(_runs(1, 0.0, COLD) + _runs(1, 1.0, HOT) + _runs(4, 0.0, COLD) + _runs(4, 1.0, COLD), noise=known_noise(0.05, 0.0, 'test'))
    assert [(x.concurrency, x.temperature) for x in a.at] == [(1, 0.0), (1, 1.0), (4, 0.0), (4, 1.0)]
    for x in a.at:
        assert x.baseline.temperature == x.temperature and all(r.point.temperature == x.temperature for r in x.rows)
    hot = a.at[1]
    assert hot.title == "concurrency 1, temperature 1" and hot.pick.label == "k=1" and hot.pick.decided
    assert a.at[0].pick.label == "k=3"
    lines = temperature_findings(a)
    assert lines[0].startswith("concurrency 1: temperature changes the recommendation: k=3 at temperature 0, k=1 at")
    assert lines[1].startswith("concurrency 4: temperature does not change the recommendation")
    assert a.verdict().startswith("at temperature 0: ") and "; at temperature 1: " in a.verdict()
    s = derive(a, "eagle")  # from temperature 0 only: k=3 at both concurrencies
    assert s.ranges == [[1, 4, 3]] and all(p.endswith("t0") for p in s.from_points)


def test_one_temperature_reads_as_before():
    a = analyse(_runs(1, 0.0, COLD), noise=known_noise(0.05, 0.0, 'test'))
    assert a.by_temperature == [] and a.at[0].title == "concurrency 1" and temperature_findings(a) == []
    record = sweep_json.to_record(a)
    assert record["temperatures"] == [0.0] and record["concurrency"][0]["temperature"] == 0.0


def test_the_report_says_when_temperature_changes_the_recommendation():
    a = analyse(_runs(1, 0.0, COLD) + _runs(1, 1.0, HOT), noise=known_noise(0.05, 0.0, 'test'))
    text = render.markdown(a)
    assert "### concurrency 1, temperature 1" in text and "## temperature" in text
    assert "temperature changes the recommendation" in text
    console = Console(record=True, width=200)
    render.render(console, a)
    assert "temperature changes the recommendation" in console.export_text()
    assert sweep_json.to_record(a)["temperatures"] == [0.0, 1.0]


def test_a_points_temperature_comes_from_its_config():
    assert _temperature({"bench": {"temperature": 0.7}}) == 0.7
    for bad in ({}, {"bench": {"temperature": "hot"}}, {"bench": {"temperature": -1}}, {"bench": {"temperature": True}}):
        assert _temperature(bad) == 0.0
