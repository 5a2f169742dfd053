"""Every sweep plot is a valid PNG holding the expected series; the report links each one."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec import figures
from llama4spec.analysis import plots
from llama4spec.sweep import tables as report
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import analyse
from llama4spec.sweep.report import artifacts, write_files
from tests.helpers import png_series

RATES = {1: (0.9,), 3: (0.9, 0.7, 0.4)}


def _points() -> list[Point]:
    out = []
    for c in (1, 4, 16):
        out.append(Point(f"none-c{c}", "none", None, c, 50.0 * c ** 0.9, 20.0, 30.0))
        for k in (1, 3):
            rates = RATES[k]
            out.append(Point(f"eagle-k{k}-c{c}", "eagle", k, c, 50.0 * c ** 0.9 * (1 + sum(rates)) / (1 + 0.2 * k * c),
                             15.0, 35.0, 1 + sum(rates), rates, 200, tuple(round(200 * r) for r in rates)))
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[dict[str, Path], dict[str, list[str]]]:
    files = artifacts(tmp_path_factory.mktemp("sweep") / "sweep")
    points = _points()
    series, text, _ = write_files(analyse(points), points, files)
    files["report"].write_text(text)  # report.md is report_points' to write, once it has added to it
    return files, series


def test_every_plot_is_a_png_with_the_expected_series(written) -> None:
    files, series = written
    expected = {
        "acceptance_by_position": ["eagle k=1", "eagle k=3"],
        "throughput_vs_concurrency": ["no speculation", "eagle k=1", "eagle k=3"],
        "speedup": [f"{kind} c={c}" for c in (1, 4, 16) for kind in ("measured", "predicted")],
    }
    for stem, labels in expected.items():
        data = files[stem].read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR" and len(data) > 5000
        assert sorted(png_series(files[stem])) == sorted(labels)
        assert sorted(series[stem]) == sorted(labels)


def test_report_links_the_plots_and_states_the_verdict(written) -> None:
    files, _ = written
    text = files["report"].read_text()
    for stem in ("acceptance_by_position", "throughput_vs_concurrency", "speedup"):
        assert f"]({files[stem].name})" in text
    a = analyse(_points())
    assert a.verdict() in text and f"### concurrency {a.at[0].concurrency}" in text
    best = a.at[0].best
    assert (f"best lookahead by output throughput: k={best.lookahead}, the highest median (single samples: no "
            f"interval, nothing decided)") in text


def test_terminal_report_has_a_bar_per_setting_marking_the_best() -> None:
    a = analyse(_points())
    console = Console(record=True, width=140, file=io.StringIO())
    report.render(console, a)
    text = console.export_text()
    bars = [line for line in text.splitlines() if "█" in line or "·" * 5 in line]
    assert len(bars) == 9 and sum("<- recommended" in line for line in bars) == 3
    for at in a.at:  # the full bar belongs to the fastest setting at each concurrency
        full = next(line for line in bars[3 * a.at.index(at):3 * a.at.index(at) + 3] if "█" * 28 in line)
        assert full.split()[0] == report.short_name(at.best, at) and "<- recommended" in full


def test_intervals_become_error_bars(tmp_path) -> None:
    from llama4spec.analysis.plots import _errors

    assert _errors([(10.0, 8.0, 13.0), (5.0, None, None)]) == [[2.0, 0.0], [3.0, 0.0]]
    assert _errors([(10.0, None, None)]) is None
    points = [Point(id=f"p{k}", draft="eagle" if k else "none", lookahead=k or None, concurrency=1,
                    output_throughput=100.0 + 10 * k, samples={"output_throughput": (95.0 + 10 * k, 100.0 + 10 * k,
                                                                                       104.0 + 10 * k)})
              for k in (0, 1, 3)]
    analysis = analyse(points)
    assert all(r.speedup_interval is not None and r.speedup_interval.low < r.speedup < r.speedup_interval.high
               for r in analysis.at[0].rows)
    throughput, plot = next((f, plot) for f, plot in figures.plotted() if f.key == "output_throughput")
    assert plots.figure_vs_concurrency(points, throughput, plot, tmp_path / "t.png") == ["no speculation", "eagle k=1",
                                                                                         "eagle k=3"]
    assert plots.speedup_measured_vs_predicted(analysis, tmp_path / "s.png")[0] == "measured c=1"
