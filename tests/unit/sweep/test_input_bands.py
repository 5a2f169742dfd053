"""Input length as a sweep dimension (pure): each band analysed against no speculation in the same band,
where speculation stops paying between adjacent bands, what vLLM 0.32 can do about it, and the record."""

from __future__ import annotations

from rich.console import Console

from llama4spec.analysis import band_report, bands
from llama4spec.sweep import tables as render, to_json as sweep_json
from llama4spec.stats.point import Point
from llama4spec.stats.noise import prior as known_noise
from llama4spec.sweep.schedule_fit import derive_all
from llama4spec.sweep.sweep_records import SweepRecord

NOISE = known_noise(0.05, 0.0, "test")


def _runs(c: int, band: str, table: dict[int | None, tuple[float, ...]], key: str = "bench.input_band") -> list[Point]:
    return [Point(f"{'k%d' % k if k else 'none'}-c{c}-{band}", "eagle" if k else "none", k, c, sorted(xs)[2],
                  samples={"output_throughput": xs}, rates=(0.9, 0.8, 0.7)[:k] if k else (),
                  acceptance_length=1 + sum((0.9, 0.8, 0.7)[:k]) if k else None, varied=((key, band),))
            for k, xs in table.items()]


def _xs(level: float) -> tuple[float, ...]:
    return tuple(level * f for f in (0.99, 1.0, 1.01, 0.995, 1.005))


PAYS = {None: _xs(100), 1: _xs(150), 3: _xs(250)}
EVEN = {None: _xs(100), 1: _xs(101), 3: _xs(99)}
LOSES = {None: _xs(100), 1: _xs(70), 3: _xs(50)}


def test_each_band_is_compared_with_no_speculation_in_the_same_band():
    a = bands.analyse_points(_runs(1, "1-16", PAYS) + _runs(1, "17-64", PAYS) + _runs(1, "65-128", LOSES), NOISE)
    assert [x.band for x in a.at] == ["1-16 tokens", "17-64 tokens", "65-128 tokens"]
    for x in a.at:
        assert x.baseline.id.endswith(x.band.split()[0]) and all(r.point.id.endswith(x.band.split()[0]) for r in x.rows)
        assert x.baseline.setting == ""  # the band is the section's title, not part of every name
    assert a.at[0].title == "input 1-16 tokens, concurrency 1"
    assert a.at[0].pick.label == "k=3" and a.at[2].status == "slower"
    assert a.verdict().startswith("input 1-16 tokens: ") and "; input 65-128 tokens: " in a.verdict()


def test_the_break_lies_between_the_last_band_that_pays_and_the_next():
    a = bands.analyse_points(_runs(1, "1-16", PAYS) + _runs(1, "17-64", PAYS) + _runs(1, "65-128", LOSES)
                             + _runs(4, "1-16", PAYS) + _runs(4, "17-64", EVEN) + _runs(4, "65-128", LOSES), NOISE)
    found = {b.concurrency: b for b in bands.breaks(a)}
    assert found[1].located and found[1].last_paying == bands.InputBand(17, 64)
    assert found[1].first_not == bands.InputBand(65, 128) and found[1].slower == (bands.InputBand(65, 128),)
    assert found[4].last_paying == bands.InputBand(1, 16) and found[4].first_not == bands.InputBand(17, 64)
    # at concurrency 4 the band after the break is undecided: the route starts where speculation is declared slower
    assert "route prompts longer than 64 tokens" in band_report.routing(found[4])
    assert "in 17-64 tokens neither is declared faster than the other" in band_report.routing(found[4])
    assert "stops paying between 17-64 tokens and 65-128 tokens" in found[1].sentence()
    route = band_report.routing(found[1])
    assert "vLLM 0.32 has no lookahead per context length" in route
    assert "route prompts longer than 64 tokens to a server without speculation" in route
    # no speculation over the best lookahead there (k=1: 100 / 70), its interval inverted
    assert "no speculation delivers 1.43x [" in route and "(speculation declared slower there)" in route


def test_pays_in_every_band_and_in_none():
    every = bands.analyse_points(_runs(1, "16", PAYS) + _runs(1, "64", PAYS), NOISE)
    (b,) = bands.breaks(every)
    assert b.sentence() == "concurrency 1: speculation pays in every band measured (16 tokens, 64 tokens)"
    assert band_report.routing(b) is None
    none = bands.analyse_points(_runs(1, "16", LOSES, "bench.input_len") + _runs(1, "64", LOSES, "bench.input_len"), NOISE)
    assert bands.breaks(none)[0].sentence().endswith("speculation pays in no band measured (16 tokens, 64 tokens)")


def test_no_route_is_proposed_where_no_band_is_declared_slower():
    a = bands.analyse_points(_runs(1, "16", PAYS) + _runs(1, "64", EVEN), NOISE)
    (b,) = bands.breaks(a)
    assert b.located and "promise no gain from routing" in band_report.routing(b)


def test_a_band_that_pays_above_one_that_does_not_is_no_break():
    a = bands.analyse_points(_runs(1, "16", LOSES) + _runs(1, "64", PAYS) + _runs(1, "256", LOSES), NOISE)
    (b,) = bands.breaks(a)
    assert not b.located and "no single break" in b.sentence()


def test_the_record_and_the_report_carry_the_bands():
    a = bands.analyse_points(_runs(1, "1-16", PAYS) + _runs(1, "65-128", LOSES), NOISE)
    record = SweepRecord.model_validate(sweep_json.to_record(a))  # the model sweep.json is written through
    assert [b.label for b in record.input_bands.bands] == ["1-16 tokens", "65-128 tokens"]
    assert record.input_bands.breaks[0].after.high == 16 and record.input_bands.breaks[0].routing
    assert [c.input_band for c in record.concurrency] == ["1-16 tokens", "65-128 tokens"]
    rows = sweep_json.to_record(a)["concurrency"][0]["rows"]
    assert [r["acceptance_rate_per_position"] for r in rows if r["lookahead"] == 3] == [[0.9, 0.8, 0.7]]
    text = render.markdown(a)
    assert "### input 1-16 tokens, concurrency 1" in text and "## input length" in text
    assert derive_all(a) == [] and "No lookahead schedule is derived from bands analysed apart" in text
    assert "stops paying between 1-16 tokens and 65-128 tokens" in text
    console = Console(record=True, width=300)
    render.render(console, a)
    assert "route prompts longer than 16 tokens" in console.export_text()


def test_points_not_banded_read_as_before():
    points = [Point("none", "none", None, 1, 100.0, samples={"output_throughput": _xs(100)}),
              Point("k1", "eagle", 1, 1, 150.0, samples={"output_throughput": _xs(150)})]
    a = bands.analyse_points(points, NOISE)
    assert a.by_band == [] and a.at[0].band is None and band_report.record(a) is None
    assert "input_bands" not in sweep_json.to_record(a) and bands.breaks(a) == []


def test_a_band_is_read_from_its_value():
    assert bands.parse_band("17-48") == bands.InputBand(17, 48) and bands.parse_band("64") == bands.InputBand(64, 64)
    assert bands.parse_band("48-17") is None and bands.parse_band("x") is None and bands.parse_band("0") is None
