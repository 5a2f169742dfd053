"""A sweep's frontier (``llama4spec.frontier``) in its files, its report and its page: frontier.csv
and frontier.png in the step's directory, a section of report.md, the one sentence on the top of
report.html's verdicts; the line of the dry run that says which frontier a sweep will draw."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from llama4spec.files import number, write_atomic
from llama4spec.frontier import figure, words
from llama4spec.frontier.build import Frontier, frontier
from llama4spec.frontier.price import MAX_PRICE
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_results import Analysis

CONCURRENCY = "bench.max_concurrency"
TITLE = "frontier: tokens per device vs per-user speed"


def files(step_dir: Path) -> dict[str, Path]:
    return {"frontier": step_dir / "frontier.csv", "frontier_plot": step_dir / "frontier.png"}


def price_of(step: Mapping[str, Any]) -> float | None:
    """The device-hour price a plan.json's sweep step recorded (checked: None where absent or out of bounds)."""
    return number(step.get("price"), 0, MAX_PRICE)


def of_points(points: list[Point], configs: Mapping[str, Mapping[str, Any]], analysis: Analysis,
              margin: float | None, price: float | None) -> Frontier:
    """The frontier of a sweep's points with the noise its analysis compared them under."""
    return frontier(points, configs, analysis.noise, margin, price)


def write(f: Frontier, step_dir: Path) -> str:
    """frontier.csv and, with a curve, frontier.png into ``step_dir``; returns report.md's section."""
    out = files(step_dir)
    write_atomic(out["frontier"], words.csv_text(f))
    if f.drawn:
        figure.draw(f, out["frontier_plot"])
    elif out["frontier_plot"].exists():
        out["frontier_plot"].unlink()
    return words.markdown(f, out["frontier_plot"].name if f.drawn else None)


def lead(f: Frontier, sid: str) -> list[str]:
    """The sentence a sweep puts on the top of a run's verdicts (none without a comparison)."""
    top = words.lead(f)
    return [f"{sid}: {top}"] if top else []


def describe(matrix: Mapping[str, list[str]] | None, price: float | None) -> list[str]:
    """The dry run's line: the frontier a sweep over two or more concurrencies will draw."""
    levels = (matrix or {}).get(CONCURRENCY) or []
    if len(levels) < 2:
        return []
    priced = f"; price per million output tokens at {price:g} a device-hour" if price is not None else ""
    return [f"frontier: output tok/s per device (tensor x pipeline x data parallel; a CPU server one) against "
            f"per-user speed (1000 / median TPOT) over concurrency {', '.join(map(str, levels))}, each setting; "
            f"each speculative setting against no speculation at the speeds both reach, and where they cross"
            f"{priced} (frontier.csv, frontier.png)"]
