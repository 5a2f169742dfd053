"""A breakeven step's report from its points' records: each record sorted into no speculation,
synthetic acceptance and the draft itself by its own config, then the map written whole."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from llama4spec.breakeven import tables as breakeven_report
from llama4spec.breakeven.map_fit import build
from llama4spec.breakeven.report import runs_of
from llama4spec.stats.noise import prior as known_noise


@dataclass
class _Record:
    throughputs: tuple[float, ...]
    concurrency: int
    acceptance: tuple[float, ...] = ()

    def samples(self, key: str) -> list[float]:
        assert key == "output_throughput"
        return list(self.throughputs)

    def figure(self, key: str) -> float | None:
        return float(self.concurrency) if key == "max_concurrency" else None

    def acceptance_samples(self) -> list[float]:
        return list(self.acceptance)


@dataclass
class _Measured:
    config: dict
    record: _Record


def _cfg(method=None, k=3, length=None) -> dict:
    return {"lookahead": k, "draft": {"method": method, "synthetic_acceptance_length": length}}


def _measured() -> dict[str, _Measured]:
    out = {"none": _Measured(_cfg(), _Record((100.0, 104.0, 98.0), 1))}
    for length, speed in ((1.0, 70.0), (2.0, 92.0), (3.0, 112.0), (4.0, 130.0)):
        out[f"L{length}"] = _Measured(_cfg("eagle", 3, length), _Record((speed, speed * 1.03, speed * 0.98), 1,
                                                                         (length,) * 3))
    out["draft"] = _Measured(_cfg("eagle", 3), _Record((101.0, 104.0, 99.0), 1, (2.4, 2.5, 2.45)))
    return out


def test_records_are_sorted_by_their_own_config() -> None:
    base, synthetic, real = runs_of(_measured())
    assert [r.label for r in base] == ["none"] and [r.label for r in real] == ["draft"]
    assert [r.set_length for r in synthetic] == [1.0, 2.0, 3.0, 4.0] and all(r.lookahead == 3 for r in synthetic)
    assert real[0].acceptance == (2.4, 2.5, 2.45)


def test_the_report_names_break_even_the_cost_of_k0_and_the_self_check(tmp_path: Path) -> None:
    m = build(*runs_of(_measured()), noise=known_noise(0.13, 0.0, 'test'))
    text = breakeven_report.markdown(m, "breakeven.png")
    assert "break-even acceptance length" in text and "cost of k=0" in text and "30% of throughput lost" in text
    assert "self-check: passed" in text and "![" in text
    labels = breakeven_report.plot(m, tmp_path / "b.png")
    assert (tmp_path / "b.png").stat().st_size > 1000 and "c=1 k=3 real draft (draft)" in labels
    record = json.loads(json.dumps(breakeven_report.to_record(m)))
    assert record["curves"][0]["breakeven"]["state"] == "crosses" and record["noise"]["between"]["sd"] == 0.13
    console = Console(record=True, width=200, file=io.StringIO())
    breakeven_report.render(console, m)
    assert "self-check: passed" in console.export_text()
