"""The frontier (tokens per device against per-user speed) from known points: the curve, its Pareto
nodes and devices, the interpolation linear in log space, the ratio's verdicts, the crossover found
and not found, the price per million tokens, bad prices through the CLI, and the sentence on top of
a recorded run's page."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from llama4spec.stats.point import Point
from llama4spec.stats.noise import prior
from llama4spec.frontier import words
from llama4spec.frontier.build import frontier
from llama4spec.frontier.compare import speeds, versus
from llama4spec.frontier.curve import MEAN, MEDIAN, curves, devices
from llama4spec.frontier.price import per_million

NOISE = prior(0.01, 0.01, "test")
SPREAD = (0.99, 1.0, 1.01)


def _point(pid: str, k: int | None, c: int, tput: float, tpot_ms: float, median: bool = True) -> Point:
    samples = {"output_throughput": tuple(tput * f for f in SPREAD)}
    if median:
        samples["median_tpot_ms"] = (tpot_ms,) * 3
    return Point(pid, "eagle" if k else "none", k, c, tput, tpot_ms, 10.0, samples=samples)


def _sweep(cand: dict[int, tuple[float, float]], base: dict[int, tuple[float, float]]) -> list[Point]:
    """concurrency -> (throughput, TPOT ms) for EAGLE k=3 and no speculation."""
    return ([_point(f"none-c{c}", None, c, *v) for c, v in base.items()]
            + [_point(f"eagle-k3-c{c}", 3, c, *v) for c, v in cand.items()])


# speculation: faster per user and more tokens at low concurrency, fewer at high
CROSSING = _sweep({1: (200.0, 5.0), 4: (500.0, 8.0), 16: (800.0, 20.0)},
                  {1: (100.0, 10.0), 4: (380.0, 10.5), 16: (1200.0, 13.0)})


def test_devices_are_the_world_size_and_a_cpu_server_is_one() -> None:
    gpu = {"hardware": {"device": "cuda"}, "parallel": {"tensor_parallel_size": 4, "pipeline_parallel_size": 2,
                                                        "data_parallel_size": 1}}
    assert devices(gpu) == 8
    assert devices({"hardware": {"device": "cpu"}, "parallel": {"tensor_parallel_size": 4}}) == 1


def test_a_curve_is_per_device_per_user_speed_and_its_pareto_nodes() -> None:
    points = _sweep({}, {1: (100.0, 10.0), 2: (150.0, 10.0), 4: (300.0, 12.5)})
    configs = {p.id: {"hardware": {"device": "cuda"}, "parallel": {"tensor_parallel_size": 2}} for p in points}
    (c,) = curves(points, configs)
    assert c.tpot == MEDIAN and [n.devices for n in c.nodes] == [2, 2, 2]
    by_id = {n.id: n for n in c.nodes}
    assert by_id["none-c4"].speed == pytest.approx(80.0)
    assert by_id["none-c4"].median_per_device == pytest.approx(150.0)
    assert by_id["none-c4"].pareto_x == pytest.approx(75.0)  # plot_pareto's x: throughput / concurrency
    # c1 is as fast per user as c2 and gives fewer tokens: off the frontier
    assert not by_id["none-c1"].on_frontier and by_id["none-c2"].on_frontier


def test_without_median_tpot_the_mean_is_used_and_said() -> None:
    points = [_point("none-c1", None, 1, 100.0, 10.0, median=False), _point("none-c4", None, 4, 300.0, 12.0, False)]
    (c,) = curves(points, {})
    assert c.tpot == MEAN
    f = frontier(points, {}, NOISE)
    assert "mean TPOT (the records hold no median)" in words.markdown(f)


def test_interpolation_is_linear_in_log_speed_and_log_throughput() -> None:
    points = _sweep({}, {1: (100.0, 10.0), 16: (1600.0, 40.0)})  # speeds 100 and 25 tok/s
    (c,) = curves(points, {})
    mid = math.sqrt(100.0 * 25.0)  # halfway in log speed
    (a, wa), (b, wb) = c.weights(mid)
    assert wa == pytest.approx(0.5) and wb == pytest.approx(0.5)
    gm = math.exp(float(c.nodes[0].logs.mean()) / 2 + float(c.nodes[1].logs.mean()) / 2)
    assert math.exp(c.log_at(mid)) == pytest.approx(gm)
    assert math.exp(c.log_at(mid)) == pytest.approx(400.0, rel=1e-3)  # sqrt(100 x 1600)
    assert c.weights(200.0) == [] and c.log_at(10.0) is None  # outside the measured speeds


def test_the_crossover_is_found_with_its_interval() -> None:
    f = frontier(CROSSING, {}, NOISE)
    (v,) = f.comparisons
    (x,) = v.crossovers
    assert x.pays_above  # speculation pays at high per-user speed, stops below the crossing
    assert v.overlap[0] < x.speed < v.overlap[1]
    assert x.low is None or x.low < x.speed
    assert x.high is not None and x.speed < x.high
    top = {a.speed: a for a in v.at}
    assert top[max(top)].verdict == "faster" and top[min(top)].verdict == "slower"
    assert all(a.interval.low <= a.ratio <= a.interval.high for a in v.at)
    assert "speculation stops paying below" in words.crossing_text(v)


def test_no_crossover_in_the_measured_range() -> None:
    points = _sweep({1: (200.0, 8.0), 4: (600.0, 11.0)}, {1: (100.0, 10.0), 4: (300.0, 12.0)})
    (v,) = frontier(points, {}, NOISE).comparisons
    assert v.crossovers == () and words.crossing_text(v).startswith("no crossover in the measured range")


def test_the_speeds_compared_are_those_both_curves_reach() -> None:
    cand, base = curves(CROSSING, {})[1], curves(CROSSING, {})[0]
    grid = speeds(cand, base)
    low, high = max(cand.span[0], base.span[0]), min(cand.span[1], base.span[1])
    assert grid[0] == pytest.approx(low) and grid[-1] == pytest.approx(high)
    assert versus(cand, base, NOISE).at[0].speed == pytest.approx(low)


def test_one_concurrency_has_no_curve_and_says_so() -> None:
    f = frontier(_sweep({4: (500.0, 8.0)}, {4: (380.0, 10.5)}), {}, NOISE)
    assert not f.drawn and f.comparisons == ()
    assert f.notes == ("no frontier: every setting was measured at one concurrency, and a curve needs two or more",)


def test_different_device_counts_are_compared_per_device() -> None:
    configs = {p.id: {"hardware": {"device": "cuda"},
                      "parallel": {"tensor_parallel_size": 2 if p.speculative else 1}} for p in CROSSING}
    f = frontier(CROSSING, configs, NOISE)
    assert f.device == "GPU"
    assert any("compared per GPU" in note for note in f.notes)
    (v,) = f.comparisons
    assert v.at[0].candidate == pytest.approx(math.exp(v.candidate.log_at(v.at[0].speed)))


def test_price_per_million_tokens() -> None:
    assert per_million(3.6, 1.0) == pytest.approx(1000.0)  # 3.6 an hour for 3600 tokens
    assert per_million(2.0, 1000.0) == pytest.approx(2.0 * 1e6 / 3.6e6)
    assert per_million(0.0, 10.0) == 0.0 and per_million(1.0, 0.0) == math.inf
    f = frontier(CROSSING, {}, NOISE, price=2.0)
    rows = words.csv_text(f).splitlines()
    assert rows[0].endswith("price_per_million_tokens")
    node = f.curves[0].nodes[0]
    assert rows[1].split(",")[-1] == f"{per_million(2.0, node.median_per_device):.6g}"
    assert "instead of" in words.lead(f) and "per million output tokens at 2 a device-hour" in words.lead(f)


@pytest.mark.parametrize("price", ["-1", "nan"])
def test_a_bad_price_is_one_line_and_exit_2(cli, price: str) -> None:
    res = cli("sweep", "target=tiny", "draft=none,tiny_eagle", "bench.max_concurrency=1,4", f"--gpu-hour-price={price}",
              "--dry-run", timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--gpu-hour-price must be a number from 0" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_bad_price_key_in_a_runbook_is_refused(cli, tmp_path: Path) -> None:
    book = tmp_path / "book.yaml"
    book.write_text("name: b\noverrides: [target=tiny]\nsteps:\n  - id: sweep\n    kind: sweep\n    price: -0.5\n"
                    "    matrix: {draft: [none, tiny_eagle], bench.max_concurrency: [1, 4]}\n")
    res = cli("run", str(book), "--dry-run", timeout=120)
    assert res.returncode == 2 and "'price' must be a number from 0" in res.stderr and "Traceback" not in res.stderr


def test_the_dry_run_says_which_frontier_it_draws(cli) -> None:
    res = cli("sweep", "target=tiny", "memory=cpu", "draft=none,tiny_eagle", "bench.max_concurrency=1,4",
              "--gpu-hour-price=2.5", "--dry-run", timeout=120)
    assert res.returncode == 0, res.stderr
    assert "frontier: output tok/s per device" in res.stdout and "at 2.5 a device-hour" in res.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    from tests.recorded_runs import finished_run

    return finished_run(tmp_path_factory.mktemp("frontier") / "run", repeats=3)


def test_a_recorded_sweep_states_its_answer_first(recorded: Path) -> None:
    html = re.sub(r"<[^>]+>", " ", (recorded / "report.html").read_text())
    body = " ".join(html[html.index("Verdicts"):].split())
    first = re.search(r"sweep: at [\d.]+ tok/s per user, tiny_eagle k=\d.*? gives [\d.]+x \[[\d.]+, [\d.]+\] the tokens "
                      r"per device of no speculation \((faster|slower|equivalent|undecided)\); ", body)
    assert first is not None and first.start() < body.index("run done")
    report = (recorded / "sweep" / "report.md").read_text()
    assert "## Frontier" in report and "![frontier](frontier.png)" in report
    assert (recorded / "sweep" / "frontier.png").read_bytes().startswith(b"\x89PNG")
    csv = (recorded / "sweep" / "frontier.csv").read_text().splitlines()
    assert csv[0].startswith("setting,point,concurrency,devices,tpot_statistic") and len(csv) > 4
    assert "frontier: tokens per device vs per-user speed" in (recorded / "report.html").read_text()
