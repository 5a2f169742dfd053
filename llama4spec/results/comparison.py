"""EAGLE vs baseline side by side, from saved results: the tool's bench records or plain
``vllm bench serve`` result JSON files. Figures are read, never recomputed; the speedup is a
ratio oriented so that above 1 means the candidate is better.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from llama4spec import figures as registry
from llama4spec.errors import UserError
from llama4spec.files import Expect, number, read_json, shown
from llama4spec.results.bench import KIND, BenchRecord
from llama4spec.results.requests import MAX_POSITIONS

RESULT = Expect("benchmark result", "give a llama4spec bench record or a `vllm bench serve --save-result` JSON file")


def _rows() -> list[tuple[str, str, bool]]:
    """(label, key in vLLM's result JSON, higher is better) of every figure a comparison shows."""
    return [(f.title, f.key, f.higher_is_better) for f in registry.shown_in(registry.COMPARE)]


def from_json(data: dict[str, Any], fallback_label: str, where: str | None = None) -> BenchRecord:
    """A benchmark record (this tool's, or vLLM's own result JSON) that can be compared."""
    if data.get("kind") != KIND and "output_throughput" not in data:
        raise UserError(
            f"{fallback_label}: not a benchmark result (no 'output_throughput'); give a llama4spec bench record "
            "or a `vllm bench serve --save-result` JSON file"
        )
    record = BenchRecord.from_dict(data, fallback_label, where)
    if record.result is None:
        raise UserError(f"{fallback_label}: the benchmark in this record did not finish (no result); rerun it")
    if not record.counted:
        raise UserError(f"{fallback_label}: the benchmark completed no request, so it measured nothing; rerun it")
    throughput = record.figure("output_throughput")
    if throughput is None or throughput <= 0:
        raise UserError(f"{fallback_label}: 'output_throughput' is not a positive finite number; "
                        f"give an intact result file")
    problem = _acceptance_problem(data)
    if problem:
        raise UserError(f"{fallback_label}: {problem}; give an intact result file")
    return record


# Where a result holds acceptance figures: vLLM's own keys, and the derived figures of this tool's
# acceptance block: (where, acceptance length key, per-position rates key)
ACCEPTANCE_KEYS = ((None, "spec_decode_acceptance_length", "spec_decode_per_position_acceptance_rates"),
                   ("result", "spec_decode_acceptance_length", "spec_decode_per_position_acceptance_rates"),
                   ("acceptance", "mean_acceptance_length", "acceptance_rate_per_position"))


def _acceptance_problem(data: dict[str, Any]) -> str | None:
    """Why the acceptance figures a result holds cannot be compared (None: absent or sound): an
    acceptance length must be a number of at least 1, the per-position rates a list of numbers in
    [0, 1]."""
    for where, length_key, rates_key in ACCEPTANCE_KEYS:
        block = data if where is None else data.get(where)
        if not isinstance(block, dict):
            continue
        name = lambda key: key if where is None else f"{where}.{key}"  # noqa: E731
        length, rates = block.get(length_key), block.get(rates_key)
        if length is not None and number(length, 1) is None:
            return f"'{name(length_key)}' is {shown(length)}, not an acceptance length (a number of at least 1)"
        if rates is not None and not (isinstance(rates, list) and len(rates) <= MAX_POSITIONS
                                      and all(number(r, 0, 1) is not None for r in rates)):
            return f"'{name(rates_key)}' is {shown(rates)}, not a list of acceptance rates (numbers from 0 to 1)"
    return None


def load(path: Path) -> BenchRecord:
    """A benchmark result file, read bounded (``files.read_json``); UserError, one line, for anything else."""
    data = read_json(Path(path), RESULT)
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object; give a saved benchmark JSON")
    return from_json(data, Path(path).stem, str(path))


def load_pair(baseline: Path, candidate: Path) -> tuple[BenchRecord, BenchRecord]:
    """Both sides of a comparison; the same file twice compares nothing and is refused."""
    try:
        same = Path(baseline).resolve() == Path(candidate).resolve()
    except OSError:
        same = False
    if same:
        raise UserError(f"{baseline} is given as both baseline and candidate; compare two different results")
    return load(baseline), load(candidate)


def _speedup(base: float | None, cand: float | None, higher_better: bool) -> float | None:
    if base is None or cand is None or base <= 0 or cand <= 0:
        return None
    return cand / base if higher_better else base / cand


ITL_NOTE = "ITL is per streamed chunk; with speculation several tokens arrive per chunk: compare TPOT"
SCHEMA = "llama4spec.compare/1"


def speculative(record: BenchRecord) -> bool:
    """Whether a run speculated: it carries acceptance figures."""
    return record.acceptance_length is not None


def _per_chunk(key: str) -> bool:
    return key.endswith("_itl_ms")


def metrics(baseline: BenchRecord, candidate: BenchRecord) -> list[dict[str, Any]]:
    """Every throughput and latency figure of the comparison: metric (vLLM's key), label, both values,
    speedup (above 1: the candidate is better), higher_is_better. vLLM measures ITL per streamed chunk,
    and a speculative run streams several tokens per chunk: when either side speculates, the ITL rows
    say so in their label and carry no speedup (TPOT is the per-token figure to compare)."""
    chunked = speculative(baseline) or speculative(candidate)
    out = []
    for label, key, higher in _rows():
        a, b = baseline.figure(key), candidate.figure(key)
        if chunked and _per_chunk(key):
            out.append({"metric": key, "label": label.replace("(ms)", "(ms, per chunk)"), "baseline": a,
                        "candidate": b, "speedup": None, "higher_is_better": higher})
        else:
            out.append({"metric": key, "label": label, "baseline": a, "candidate": b,
                        "speedup": _speedup(a, b, higher), "higher_is_better": higher})
    return out


def notes(baseline: BenchRecord, candidate: BenchRecord) -> list[str]:
    """One-line notes printed below the table."""
    return [ITL_NOTE] if speculative(baseline) or speculative(candidate) else []


def rows(baseline: BenchRecord, candidate: BenchRecord) -> list[tuple[str, float | None, float | None, float | None]]:
    """(metric, baseline, candidate, speedup) for every figure of the comparison."""
    out = [(m["label"], m["baseline"], m["candidate"], m["speedup"]) for m in metrics(baseline, candidate)]
    out.append(("acceptance length", baseline.acceptance_length, candidate.acceptance_length, None))
    base_rates, cand_rates = baseline.acceptance_rates or [], candidate.acceptance_rates or []
    for i in range(max(len(base_rates), len(cand_rates))):
        a = base_rates[i] if i < len(base_rates) else None
        b = cand_rates[i] if i < len(cand_rates) else None
        out.append((f"acceptance at position {i}", a, b, None))
    if baseline.prefix_cache is not None or candidate.prefix_cache is not None:  # the servers' own counters
        out.append(("prefix-cache hit rate", _hit_rate(baseline), _hit_rate(candidate), None))
    return out


def _hit_rate(record: BenchRecord) -> float | None:
    """A record's prefix-cache hit rate (hits over queried prompt tokens, from the server's /metrics)."""
    return record.prefix_cache.hit_rate if record.prefix_cache is not None else None


def document(baseline: BenchRecord, candidate: BenchRecord, baseline_file: Path | str | None = None,
             candidate_file: Path | str | None = None) -> dict[str, Any]:
    """The comparison as one JSON document (``llama4spec compare --json``; its shape:
    docs/machine-readable-output.md)."""
    found = metrics(baseline, candidate)

    def side(record: BenchRecord, file: Path | str | None) -> dict[str, Any]:
        return {"label": record.label, "file": None if file is None else str(file), "speculative": speculative(record)}

    return {
        "schema": SCHEMA,
        "baseline": side(baseline, baseline_file),
        "candidate": side(candidate, candidate_file),
        "metrics": found,
        "speedup": {m["metric"]: m["speedup"] for m in found},
        "acceptance_length": {"baseline": baseline.acceptance_length, "candidate": candidate.acceptance_length},
        "acceptance_rate_per_position": {"baseline": baseline.acceptance_rates, "candidate": candidate.acceptance_rates},
        "prefix_cache_hit_rate": {"baseline": _hit_rate(baseline), "candidate": _hit_rate(candidate)},
        "notes": notes(baseline, candidate),
    }


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def render(console: Console, baseline: BenchRecord, candidate: BenchRecord) -> None:
    table = Table(title=escape(f"{candidate.label} vs {baseline.label}"))
    table.add_column("metric")
    table.add_column(escape(baseline.label), justify="right")
    table.add_column(escape(candidate.label), justify="right")
    table.add_column("speedup", justify="right")
    for label, a, b, speed in rows(baseline, candidate):
        table.add_row(label, _fmt(a), _fmt(b), "-" if speed is None else f"{speed:.2f}x")
    console.print(table)
    for note in notes(baseline, candidate):
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


def markdown(baseline: BenchRecord, candidate: BenchRecord) -> str:
    lines = [f"| metric | {baseline.label} | {candidate.label} | speedup |", "|---|---:|---:|---:|"]
    for label, a, b, speed in rows(baseline, candidate):
        lines.append(f"| {label} | {_fmt(a)} | {_fmt(b)} | {'-' if speed is None else f'{speed:.2f}x'} |")
    lines += [f"\nNote: {note}" for note in notes(baseline, candidate)]
    return "\n".join(lines) + "\n"


def render_single(console: Console, res: BenchRecord) -> None:
    """One benchmark's throughput, latency (mean, median, P99) and acceptance."""
    table = Table(title=escape(res.label))
    table.add_column("metric")
    table.add_column("value", justify="right")
    for label, key, _ in _rows():
        table.add_row(label, _fmt(res.figure(key)))
    table.add_row("acceptance length", _fmt(res.acceptance_length))
    for i, rate in enumerate(res.acceptance_rates or []):
        table.add_row(f"acceptance at position {i}", _fmt(rate))
    console.print(table)
