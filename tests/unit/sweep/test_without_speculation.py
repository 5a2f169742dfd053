"""Settings without speculation beside the baseline (a server setting swept without a draft, or two
identical servers: an A/A) are compared with it like candidates: in the table, sweep.json and the
verdict, in the same Holm family as the drafts."""

from __future__ import annotations

import numpy as np

from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import analyse
from llama4spec.stats.noise import prior
from llama4spec.sweep.to_json import to_record
from llama4spec.sweep.tables import rows

QUIET = prior(0.002, 0.0, "test")


def _runs(center: float, n: int = 8, sd: float = 0.002, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(center * np.exp(rng.normal(0.0, sd, n)))


def _point(pid: str, xs: list[float], seqs: int, k: int | None = None) -> Point:
    return Point(id=pid, draft="eagle" if k else "none", lookahead=k, concurrency=4,
                 output_throughput=float(np.median(xs)), samples={"output_throughput": tuple(xs)},
                 varied=(("memory.max_num_seqs", str(seqs)),))


def test_an_a_a_of_two_servers_without_a_draft_is_compared_and_can_end_equivalent() -> None:
    points = [_point("s16", _runs(100.0, seed=1), 16), _point("s15", _runs(100.2, seed=2), 15)]
    (at,) = (analysis := analyse(points, noise=QUIET, margin=0.02)).at
    assert at.baseline.id == "s16" and not at.rows
    (other,) = at.others
    assert other.point.id == "s15" and other.verdict == "equivalent"
    assert ("s15", "s16") in at.comparisons
    assert analysis.verdict().startswith("no draft measured; no speculation memory.max_num_seqs=15 against no "
                                         "speculation memory.max_num_seqs=16 at concurrency 4: 1.00x [")
    assert "equivalent within +-2%" in analysis.verdict()
    table = rows(at)
    assert [r[0] for r in table] == ["no speculation memory.max_num_seqs=16", "no speculation memory.max_num_seqs=15"]
    assert table[1][-1] == "equivalent"
    (record,) = to_record(analysis)["concurrency"]
    (saved,) = record["without_speculation"]
    assert saved["id"] == "s15" and saved["against"] == "s16" and saved["verdict"] == "equivalent"
    assert record["rows"] == []


def test_a_setting_that_changes_the_speed_is_declared_so_and_drafts_keep_their_rows() -> None:
    points = [_point("s16", _runs(100.0, seed=1), 16), _point("s4", _runs(80.0, seed=3), 4),
              _point("k2", _runs(150.0, seed=4), 16, k=2)]
    (at,) = (analysis := analyse(points, noise=QUIET, margin=0.02)).at
    assert [r.point.id for r in at.rows] == ["k2"] and at.rows[0].verdict == "faster"
    assert [(r.point.id, r.verdict) for r in at.others] == [("s4", "slower")]
    assert at.status == "faster" and analysis.verdict().startswith("speculation pays")  # drafts alone make the verdict
    assert [r[0] for r in rows(at, short=True)] == ["none memory.max_num_seqs=16", "none memory.max_num_seqs=4",
                                                    "k=2 memory.max_num_seqs=16"]


def test_single_samples_are_not_decided_and_say_so() -> None:
    points = [_point("a", [100.0], 16), _point("b", [101.0], 15)]
    (at,) = (analysis := analyse(points, noise=QUIET)).at
    assert at.others[0].comparison.interval is None and not at.others[0].comparison.decided
    assert "undecided" in analysis.verdict()
