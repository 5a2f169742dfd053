"""ITL beside a speculative run: vLLM measures it per streamed chunk, and speculation streams several
tokens per chunk, so the comparison marks those rows, prints no speedup for them and says why."""

from __future__ import annotations

import io

from rich.console import Console

from llama4spec.results import comparison as compare
from llama4spec.results.acceptance import AcceptanceCounters
from llama4spec.results.bench import BenchRecord

FIGURES = {"completed": 8, "output_throughput": 100.0, "mean_tpot_ms": 20.0, "mean_itl_ms": 20.0,
           "median_itl_ms": 19.0, "p99_itl_ms": 30.0}


def _record(label: str, itl: float, tpot: float, speculative: bool) -> BenchRecord:
    acceptance = AcceptanceCounters(10, 30, 20, [8, 7, 5]) if speculative else None
    return BenchRecord(label=label, returncode=0, lookahead=3 if speculative else None, acceptance=acceptance,
                       result={**FIGURES, "mean_itl_ms": itl, "mean_tpot_ms": tpot})


def _itl_rows(base: BenchRecord, cand: BenchRecord) -> dict:
    return {r[0]: r for r in compare.rows(base, cand) if "ITL" in r[0]}


def test_without_speculation_itl_is_compared_as_usual() -> None:
    base, cand = _record("a", 20.0, 20.0, False), _record("b", 10.0, 10.0, False)
    rows = _itl_rows(base, cand)
    assert set(rows) == {"mean ITL (ms)", "median ITL (ms)", "p99 ITL (ms)"}
    assert rows["mean ITL (ms)"][3] == 2.0
    assert compare.notes(base, cand) == []
    assert "Note:" not in compare.markdown(base, cand)


def test_speculative_candidate_marks_itl_per_chunk_without_speedup() -> None:
    base, cand = _record("baseline", 20.0, 20.0, False), _record("eagle", 40.0, 12.0, True)
    rows = _itl_rows(base, cand)
    assert set(rows) == {"mean ITL (ms, per chunk)", "median ITL (ms, per chunk)", "p99 ITL (ms, per chunk)"}
    assert all(r[3] is None for r in rows.values())
    assert rows["mean ITL (ms, per chunk)"][1:3] == (20.0, 40.0)  # the figures themselves are shown
    tpot = next(r for r in compare.rows(base, cand) if r[0] == "mean TPOT (ms)")
    assert tpot[3] == 20.0 / 12.0  # TPOT keeps its speedup
    note = "ITL is per streamed chunk; with speculation several tokens arrive per chunk: compare TPOT"
    assert compare.notes(base, cand) == [note]
    md = compare.markdown(base, cand)
    assert "| mean ITL (ms, per chunk) | 20.00 | 40.00 | - |" in md and md.rstrip().endswith(f"Note: {note}")
    console = Console(record=True, width=120, file=io.StringIO())
    compare.render(console, base, cand)
    text = console.export_text()
    assert "mean ITL (ms, per chunk)" in text and text.rstrip().splitlines()[-1] == f"note: {note}"


def test_speculative_baseline_marks_too() -> None:
    base, cand = _record("eagle", 40.0, 12.0, True), _record("plain", 20.0, 20.0, False)
    assert all(r[3] is None and "per chunk" in r[0] for r in _itl_rows(base, cand).values())
    doc = compare.document(base, cand)
    assert doc["baseline"]["speculative"] is True and doc["speedup"]["mean_itl_ms"] is None
    assert doc["speedup"]["mean_tpot_ms"] == 12.0 / 20.0
