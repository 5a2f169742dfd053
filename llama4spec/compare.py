"""EAGLE vs baseline side by side, from saved results: the tool's bench records or plain
``vllm bench serve`` result JSON files. Figures are read, never recomputed; the speedup is a
ratio oriented so that above 1 means the candidate is better.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from llama4spec.errors import UserError

# (label, key in vLLM's result JSON, higher is better)
THROUGHPUT = [
    ("request throughput (req/s)", "request_throughput", True),
    ("output throughput (tok/s)", "output_throughput", True),
    ("total token throughput (tok/s)", "total_token_throughput", True),
]
LATENCY = [
    (f"{stat} {metric.upper()} (ms)", f"{stat}_{metric}_ms", False)
    for metric in ("ttft", "tpot", "itl")
    for stat in ("mean", "median", "p99")
]


@dataclass
class Result:
    """One benchmark's figures: vLLM's result JSON plus acceptance (from /metrics deltas or vLLM's scrape)."""

    label: str
    result: dict[str, Any]
    acceptance_length: float | None
    per_position: list[float] | None

    def get(self, key: str) -> float | None:
        value = self.result.get(key)
        return float(value) if isinstance(value, (int, float)) else None


def from_json(data: dict[str, Any], fallback_label: str) -> Result:
    if data.get("kind") == "llama4spec.bench":
        result = data.get("result")
        if not isinstance(result, dict):
            raise UserError(f"{fallback_label}: the benchmark in this record did not finish (no result); rerun it")
        acc = data.get("acceptance") or {}
        length = acc.get("mean_acceptance_length", result.get("spec_decode_acceptance_length"))
        per_pos = acc.get("acceptance_rate_per_position", result.get("spec_decode_per_position_acceptance_rates"))
        return Result(data.get("label") or fallback_label, result, length, per_pos)
    if "output_throughput" in data:
        return Result(
            data.get("label") or fallback_label,
            data,
            data.get("spec_decode_acceptance_length"),
            data.get("spec_decode_per_position_acceptance_rates"),
        )
    raise UserError(
        f"{fallback_label}: not a benchmark result (no 'output_throughput'); give a llama4spec bench record "
        "or a `vllm bench serve --save-result` JSON file"
    )


def load(path: Path) -> Result:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; give the path of a saved benchmark JSON") from None
    except (OSError, json.JSONDecodeError) as err:
        raise UserError(f"{path}: cannot read it as JSON ({err}); give a saved benchmark JSON") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object; give a saved benchmark JSON")
    return from_json(data, Path(path).stem)


def _speedup(base: float | None, cand: float | None, higher_better: bool) -> float | None:
    if base is None or cand is None or base == 0 or cand == 0:
        return None
    return cand / base if higher_better else base / cand


def rows(baseline: Result, candidate: Result) -> list[tuple[str, float | None, float | None, float | None]]:
    """(metric, baseline, candidate, speedup) for every figure of the comparison."""
    out = []
    for label, key, higher in THROUGHPUT + LATENCY:
        a, b = baseline.get(key), candidate.get(key)
        out.append((label, a, b, _speedup(a, b, higher)))
    out.append(("acceptance length", baseline.acceptance_length, candidate.acceptance_length, None))
    width = max(len(baseline.per_position or []), len(candidate.per_position or []))
    for i in range(width):
        a = baseline.per_position[i] if baseline.per_position and i < len(baseline.per_position) else None
        b = candidate.per_position[i] if candidate.per_position and i < len(candidate.per_position) else None
        out.append((f"acceptance at position {i}", a, b, None))
    return out


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def render(console: Console, baseline: Result, candidate: Result) -> None:
    table = Table(title=f"{candidate.label} vs {baseline.label}")
    table.add_column("metric")
    table.add_column(baseline.label, justify="right")
    table.add_column(candidate.label, justify="right")
    table.add_column("speedup", justify="right")
    for label, a, b, speed in rows(baseline, candidate):
        table.add_row(label, _fmt(a), _fmt(b), "-" if speed is None else f"{speed:.2f}x")
    console.print(table)


def markdown(baseline: Result, candidate: Result) -> str:
    lines = [f"| metric | {baseline.label} | {candidate.label} | speedup |", "|---|---:|---:|---:|"]
    for label, a, b, speed in rows(baseline, candidate):
        lines.append(f"| {label} | {_fmt(a)} | {_fmt(b)} | {'-' if speed is None else f'{speed:.2f}x'} |")
    return "\n".join(lines) + "\n"


def render_single(console: Console, res: Result) -> None:
    """One benchmark's throughput, latency (mean, median, P99) and acceptance."""
    table = Table(title=res.label)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for label, key, _ in THROUGHPUT + LATENCY:
        table.add_row(label, _fmt(res.get(key)))
    table.add_row("acceptance length", _fmt(res.acceptance_length))
    for i, rate in enumerate(res.per_position or []):
        table.add_row(f"acceptance at position {i}", _fmt(rate))
    console.print(table)
