"""The calibration's settings: one frozen object, from the command line, checked once."""

from __future__ import annotations

from dataclasses import dataclass

from llama4spec.stats.checks import margin_problem, precision_problem

DESIGNS = ("sequential", "back_to_back")
MAX_STARTS = 50
MAX_RUNS = 50


@dataclass(frozen=True)
class Settings:
    starts: int = 6  # server starts of the setting (start pairs: blocks, back to back)
    runs: int = 4  # counted runs a start
    design: str = "sequential"  # sequential: one server at a time; back_to_back: two started together, runs alternating
    warmup: int = 2  # warm-up requests before a start's counted runs
    confidence: float = 0.95  # of the A/A check's intervals
    port: int = 8770  # the first server's port (back to back: this and the next)
    margin: float = 0.02  # the A/A check also counts pairs declared equivalent within +-margin
    precision: float = 0.05  # the report says what a comparison within +-precision would need here


def problems(s: Settings) -> list[str]:
    """Every problem with the settings, each one line naming the fix."""
    out = []
    if not 2 <= s.starts <= MAX_STARTS:
        out.append(f"--starts {s.starts}: give 2 to {MAX_STARTS} server starts (the between-start spread needs two)")
    if not 2 <= s.runs <= MAX_RUNS:
        out.append(f"--runs {s.runs}: give 2 to {MAX_RUNS} runs a start (the within-start spread needs two)")
    if s.design not in DESIGNS:
        out.append(f"--design {s.design}: give one of {', '.join(DESIGNS)}")
    if s.warmup < 0:
        out.append(f"--warmup {s.warmup}: give 0 or more warm-up requests")
    if not 0.5 < s.confidence < 1:
        out.append(f"--confidence {s.confidence}: give a level between 0.5 and 1 (such as 0.95)")
    out += [p for p in (margin_problem(s.margin, "--margin"), precision_problem(s.precision, "--precision")) if p]
    if not 1 <= s.port <= 65534:
        out.append(f"--port {s.port}: give a port number from 1 to 65534")
    return out
