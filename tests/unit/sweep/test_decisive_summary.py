"""benchmarks/decisive.py, the pure part: a run directory read into a summary (status.json,
record.json, sweep.json in the shapes the tool writes), two runs compared, the generated runbook.
No engine."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.schema import load, with_measurement
from llama4spec.sweep import to_json as sweep_json
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import analyse
from tests.helpers import REPO

_SPEC = importlib.util.spec_from_file_location("benchmarks_decisive", REPO / "benchmarks" / "decisive.py")
decisive = sys.modules.setdefault("benchmarks_decisive", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(decisive)

D = "tiny_eagle_imperfect"


def _pid(k: int | None, c: int) -> str:
    return f"sweep-none-c{c}" if k is None else f"sweep-{D}-k{k}-c{c}"


def _record(pid: str, k: int | None, throughputs: list[float], stop: dict | None) -> dict:
    runs = [BenchRecord(pid, returncode=0, lookahead=k, result={"completed": 16, "output_throughput": x})
            for x in throughputs]
    record = BenchRecord.of_runs(pid, runs, lookahead=k, warmup=2)
    record.stop = stop
    return record.to_dict()


def _cell(c: int, recommended: int | None, decided: bool, verdicts: dict[int, str],
          comparisons: list[tuple[int | None, int | None, str]]) -> dict:
    """One concurrency of sweep.json (sweep_json.to_record's keys that the summary reads)."""
    label = "no speculation" if recommended is None else f"k={recommended}"
    return {"concurrency": c, "category": None, "baseline": _pid(None, c),
            "choices": {D: {"recommended": _pid(recommended, c), "label": label, "decided": decided,
                            "undecided_against": [] if decided else ["k=3"], "sentence": label}},
            "comparisons": [{"first": _pid(a, c), "second": _pid(b, c), "verdict": v} for a, b, v in comparisons],
            "rows": [{"id": _pid(k, c), "draft": D, "lookahead": k, "verdict": v} for k, v in verdicts.items()]}


def _run_dir(root: Path, auto: bool, runs: dict[int | None, int], cells: list[dict],
             skipped: list[int] = ()) -> Path:
    """A fake run directory: per server serve / bench per concurrency / (settle) / stop, the
    sweep step; ``runs``: lookahead -> counted runs of each of its points; ``skipped``: servers
    not started (dominated)."""
    steps: list[dict] = []
    for k in [None, 1, 2, 3, 5]:
        server = "sweep-none" if k is None else f"sweep-{D}-k{k}"
        if k in skipped:
            steps += [{"id": server, "kind": "serve", "status": "skipped",
                       "reason": f"k={k} not measured: its bound is below k=2's lower bound"}]
            steps += [{"id": _pid(k, c), "kind": "bench", "status": "skipped", "reason": "server skipped"}
                      for c in (1, 4)]
            continue
        steps.append({"id": server, "kind": "serve", "status": "done", "seconds": 40.0})
        for c in (1, 4):
            pid = _pid(k, c)
            steps.append({"id": pid, "kind": "bench", "status": "done", "seconds": 10.0})
            stop = {"reason": "resolved", "runs": runs[k], "verdict": "faster"} if auto else None
            (root / pid).mkdir(parents=True)
            (root / pid / "record.json").write_text(json.dumps(_record(pid, k, [100.0 + i for i in range(runs[k])], stop)))
        if auto:
            steps.append({"id": f"{server}-settle", "kind": "settle", "status": "done", "seconds": 5.0})
        steps.append({"id": f"{server}-stop", "kind": "stop", "status": "done", "seconds": 1.0})
    steps.append({"id": "sweep", "kind": "sweep", "status": "done", "seconds": 2.0})
    (root / "status.json").write_text(json.dumps({"runbook": "decisive", "status": "done", "steps": steps}))
    (root / "sweep").mkdir()
    (root / "sweep" / "sweep.json").write_text(json.dumps({"verdict": "-", "concurrency": cells}))
    return root


def _pair(tmp_path: Path):
    auto = _run_dir(tmp_path / "auto", True, {None: 2, 1: 3, 2: 4, 3: 2}, [
        _cell(1, 2, True, {1: "faster", 2: "faster", 3: "undecided"},
              [(1, None, "faster"), (2, None, "faster"), (2, 1, "faster"), (3, None, "undecided")]),
        _cell(4, 1, False, {1: "faster", 2: "undecided", 3: "undecided"},
              [(1, None, "faster"), (1, 2, "undecided"), (3, 1, "slower")]),
    ], skipped=[5])
    fixed = _run_dir(tmp_path / "fixed", False, {None: 10, 1: 10, 2: 10, 3: 10, 5: 10}, [
        # c=1: k=1 declared faster than k=2 (the auto run: the opposite), k=1 decided
        _cell(1, 1, True, {1: "faster", 2: "faster", 3: "undecided", 5: "undecided"},
              [(1, None, "faster"), (2, None, "faster"), (1, 2, "faster"), (5, None, "undecided")]),
        # c=4: decided k=1 (auto undecided there: no contradiction), the same pair agrees from the other side
        _cell(4, 1, True, {1: "faster", 2: "faster", 3: "faster", 5: "slower"},
              [(1, None, "faster"), (1, 3, "faster"), (5, None, "slower")]),
    ])
    return decisive.read_summary(auto), decisive.read_summary(fixed)


def test_a_run_directory_read_into_its_summary(tmp_path: Path) -> None:
    auto, fixed = _pair(tmp_path)
    assert (auto.design, fixed.design) == ("auto", "fixed")
    # counted runs: each point's record's repeats; none, k=1, k=2, k=3 at two concurrencies
    assert (auto.counted_runs, auto.points) == (2 * (2 + 3 + 4 + 2), 8)
    assert (fixed.counted_runs, fixed.points) == (100, 10)
    # the dominated server was skipped: not a start
    assert auto.server_starts == 4 and list(auto.not_started) == [f"sweep-{D}-k5"]
    assert auto.not_started[f"sweep-{D}-k5"].startswith("skipped: k=5 not measured")
    assert fixed.server_starts == 5 and fixed.not_started == {}
    # benchmark time: bench and settle steps; start time: serve steps (stop and sweep in neither)
    assert (auto.bench_seconds, auto.start_seconds) == (8 * 10.0 + 4 * 5.0, 4 * 40.0)
    assert (fixed.bench_seconds, fixed.start_seconds) == (10 * 10.0, 5 * 40.0)
    assert auto.stops == {"resolved": 8} and fixed.stops == {}
    c1, c4 = auto.cells[1], auto.cells[4]
    assert c1.choices[D] == decisive.Choice(_pid(2, 1), "k=2", True, ())
    assert c4.choices[D].text() == "k=1, undecided against k=3"
    assert c1.verdicts == {"k=1": "faster", "k=2": "faster", "k=3": "undecided"}
    assert c4.comparisons[(_pid(3, 4), _pid(1, 4))] == "slower"
    text = decisive.run_text("auto 1", auto)
    assert "counted runs 22 over 8 points; server starts 4" in text
    assert "c=1: recommended k=2, decided; against no speculation: k=1 faster, k=2 faster, k=3 undecided" in text


def test_contradictions_and_cells_where_one_design_is_undecided(tmp_path: Path) -> None:
    auto, fixed = _pair(tmp_path)
    against, open_ = decisive.compare_runs(auto, fixed, "auto 1", "fixed 1")
    # c=1: both decided, different picks, and k=2 against k=1 decided both ways; c=4 agrees
    assert [f.concurrency for f in against] == [1]
    assert against[0].what == ("auto 1 decided k=2, fixed 1 decided k=1",
                               "k=2 against k=1: faster in auto 1, slower in fixed 1")
    assert [f.concurrency for f in open_] == [4]
    assert open_[0].what == ("auto 1 k=1, undecided against k=3; fixed 1 k=1, decided",)
    assert decisive.compare_runs(auto, auto, "a", "b") == ([], [])
    text = decisive.comparison_text([("auto 1", auto), ("fixed 1", fixed)])
    assert "a decided auto answer contradicts a decided fixed one: 1 of 2 cells (target: none): MISSED" in text
    assert "exactly one design undecided: 1 of 2 cells" in text
    assert "counted runs: auto 22, fixed 100: 22.0% (target at most 50%: met)" in text
    assert "benchmark time: auto 100 s, fixed 100 s: 100.0% (target at most 60%: MISSED)" in text


def test_sweep_json_as_the_tool_writes_it_reads(tmp_path: Path) -> None:
    def p(k: int | None, c: int, tput: float) -> Point:
        xs = tuple(tput * f for f in (0.98, 1.0, 1.02, 0.99, 1.01, 1.0))
        return Point(id=_pid(k, c), draft=D if k else "none", lookahead=k, concurrency=c, output_throughput=tput,
                     acceptance_length=1.5 if k else None, rates=(0.5,) * (k or 0),
                     samples={"output_throughput": xs})

    analysis = analyse([p(None, 1, 100.0), p(1, 1, 300.0), p(2, 1, 900.0)])
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep_json.to_record(analysis)))
    cell = decisive.read_cells(path)[1]
    assert cell.choices[D].recommended == _pid(2, 1) and cell.choices[D].label == "k=2"
    assert set(cell.verdicts) == {"k=1", "k=2"} and cell.names[_pid(None, 1)] == "no speculation"
    assert len(cell.comparisons) == 3 and set(cell.comparisons.values()) <= {"faster", "slower", "undecided"}


def test_generated_runbook_is_the_shipped_sweep_over_four_lookaheads(tmp_path: Path) -> None:
    book = decisive.runbook(10, 8769)
    path = tmp_path / "decisive.yaml"
    path.write_text(json.dumps(book))
    loaded, problems = load(path)
    assert problems == []
    assert "serve.port=8769" in loaded.overrides and not any(o == "serve.port=8751" for o in loaded.overrides)
    (sweep,) = loaded.steps
    assert sweep.keys.matrix == {"draft": ["none", D], "lookahead": ["1", "2", "3", "5"],
                                 "bench.max_concurrency": ["1", "4"]}
    assert (sweep.keys.repeats, sweep.keys.rule.max_repeats, sweep.keys.warmup) == ("auto", 10, 2)
    assert sweep.keys.extra_args == ["--ignore-eos"]
    assert with_measurement(loaded, 10).steps[0].keys.repeats == 10  # the fixed design: --repeats 10


def test_generated_runbook_with_revisit_keeps_it_for_auto_only(tmp_path: Path) -> None:
    path = tmp_path / "decisive.yaml"
    path.write_text(json.dumps(decisive.runbook(10, 8769, revisit=True)))
    loaded, problems = load(path)
    assert problems == [] and loaded.steps[0].keys.revisit is True
    assert "revisit" not in decisive.runbook(10, 8769)["steps"][0]
