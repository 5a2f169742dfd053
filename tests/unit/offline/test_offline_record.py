"""The offline record (``results.offline_record.OfflineRecord``) and what an offline run shows, without an
engine: the record's JSON is, key for key and value for value, what the dict-building code before
it wrote (kept below as the reference); ``run_offline`` prints nothing itself, its reporter
(``offline.display.OfflineDisplay``) shows what the verbosity asks for."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from llama4spec.config.compose import compose_config
from llama4spec.offline import run as offline_run
from llama4spec.offline.prompts import Prompts, load_prompts
from llama4spec.offline.display import OfflineDisplay
from llama4spec.offline.outcome import EngineRun
from llama4spec.offline.record import run_record
from llama4spec.offline.run import run_offline
from llama4spec.results.acceptance import AcceptanceCounters, RunStats
from llama4spec.results.offline_record import CategoryRun
from llama4spec.results.provenance import model_revisions, public_config, versions

CREATED = "2026-01-02T03:04:05+0000"


# -- the reference: the record as the code before OfflineRecord built it (a plain dict) -----------
def _old_categories_record(run: EngineRun) -> dict[str, Any]:
    out = {}
    for c in run.categories:
        acceptance = c.stats.counters.to_record(c.stats.k) if c.stats.counters else {}
        out[c.category] = {**acceptance, "num_prompts": c.prompts,
                           "total_num_output_tokens": c.stats.total_num_output_tokens,
                           "generate_s": c.stats.wall_time_s}
    return out


def _old_run_record(composed, prompts: Prompts, runs: list[EngineRun], identical: bool | None) -> dict:
    main = runs[0]
    record: dict[str, Any] = {
        "kind": "offline",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": versions(),
        "models": model_revisions(composed.cfg),
        "overrides": composed.overrides,
        "choices": composed.choices,
        "config": public_config(composed.raw),
        "prompts": prompts.source,
        "timings": {"engine_start_s": main.engine_start_s, "generate_s": main.stats.wall_time_s},
        "async_scheduling": main.async_scheduling,  # added with the async-scheduling pin
        "output_tokens_per_s": main.stats.output_tokens_per_s,
        "stats": main.stats.to_record(),
        "outputs": [{"token_ids": ids, "text": text, "seed": None} for ids, text in zip(main.token_ids, main.texts)],
    }
    if main.categories:
        record["stats"]["by_category"] = _old_categories_record(main)
    if len(runs) > 1:
        base = runs[1]
        record["baseline"] = {
            "timings": {"engine_start_s": base.engine_start_s, "generate_s": base.stats.wall_time_s},
            "async_scheduling": base.async_scheduling,
            "output_tokens_per_s": base.stats.output_tokens_per_s,
            "stats": base.stats.to_record(),
            "outputs": [{"token_ids": ids, "text": text, "seed": None} for ids, text in zip(base.token_ids, base.texts)],
        }
        if base.categories:
            record["baseline"]["stats"]["by_category"] = _old_categories_record(base)
        record["speedup"] = (
            main.stats.output_tokens_per_s / base.stats.output_tokens_per_s
            if main.stats.output_tokens_per_s and base.stats.output_tokens_per_s
            else None
        )
        record["outputs_identical"] = identical
        record["async_scheduling_pinned"] = None
        record["async_scheduling_match"] = None  # neither side's setting known in these fixtures
    return record


# -- fixture runs ------------------------------------------------------------------------------
K = 3
IDS = [[5, 6, 7, 8], [9, 10, 11]]
TEXTS = ["w5 w6 w7 w8", "w9 w10 w11"]


def _spec(categories: bool = False, wall: float = 0.37) -> EngineRun:
    counters = AcceptanceCounters(5, 15, 9, [4, 3, 2])
    cats = [CategoryRun("clean_start", 1, RunStats(4, AcceptanceCounters(2, 6, 6, [2, 2, 2]), K, 0.125)),
            CategoryRun("early_miss", 1, RunStats(3, AcceptanceCounters(3, 9, 3, [2, 1, 0]), K, 0.25))] \
        if categories else []
    return EngineRun("tiny_eagle k=3", RunStats(7, counters, K, wall), IDS, TEXTS, 1.5, cats)


def _base(categories: bool = False, ids: list[list[int]] = IDS) -> EngineRun:
    cats = [CategoryRun("clean_start", 1, RunStats(4, None, None, 0.5)),
            CategoryRun("early_miss", 1, RunStats(3, None, None, 0.75))] if categories else []
    return EngineRun("no draft", RunStats(7, None, None, 1.1), ids, TEXTS, 0.9, cats)


CASES = {
    "no draft": ([_base()], None, ["draft=none"]),
    "draft": ([_spec()], None, ["draft=tiny_eagle"]),
    "draft by category": ([_spec(categories=True)], None, ["draft=tiny_eagle", "offline.by_category=true"]),
    "baseline, greedy": ([_spec(), _base()], True, ["draft=tiny_eagle", "offline.baseline=true"]),
    "baseline, by category, outputs differ": ([_spec(categories=True), _base(categories=True, ids=[[5], [9]])],
                                              False, ["draft=tiny_eagle", "offline.baseline=true"]),
    "baseline, not greedy": ([_spec(), _base()], None, ["draft=tiny_eagle", "generation.temperature=0.7"]),
    "no generation time": ([_spec(wall=0.0), _base()], True, ["draft=tiny_eagle", "offline.baseline=true"]),
}


@pytest.fixture
def fixed_time(monkeypatch):
    monkeypatch.setattr(time, "strftime", lambda fmt, *args: CREATED)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_record_is_what_the_dict_was(case: str, fixed_time, tmp_path: Path) -> None:
    runs, identical, overrides = CASES[case]
    composed = compose_config(overrides)
    prompts = Prompts(["w4", "w8"], {"kind": "builtin", "num_prompts": 2})
    old = _old_run_record(composed, prompts, runs, identical)
    record = run_record(composed, prompts, runs, identical)
    assert record.to_dict() == old
    assert json.dumps(record.to_dict(), indent=2) == json.dumps(old, indent=2)  # the same keys in the same order
    record.write(tmp_path / "run" / "record.json")
    assert (tmp_path / "run" / "record.json").read_text() == json.dumps(old, indent=2) + "\n"
    assert record.figures() == {"output_tokens_per_s": old.get("output_tokens_per_s"), "speedup": old.get("speedup")}


def test_the_record_keys_in_order(fixed_time) -> None:
    runs, identical, overrides = CASES["baseline, by category, outputs differ"]
    data = run_record(compose_config(overrides), Prompts(["w4"], {"kind": "builtin"}), runs, identical).to_dict()
    assert list(data) == ["kind", "created", "versions", "models", "overrides", "choices", "config", "prompts",
                          "timings", "async_scheduling", "output_tokens_per_s", "stats", "outputs", "baseline",
                          "speedup", "outputs_identical", "async_scheduling_pinned", "async_scheduling_match"]
    assert list(data["stats"]) == ["total_num_output_tokens", "acceptance", "by_category"]
    assert list(data["stats"]["by_category"]["early_miss"])[-3:] == ["num_prompts", "total_num_output_tokens",
                                                                     "generate_s"]
    assert list(data["baseline"]) == ["timings", "async_scheduling", "output_tokens_per_s", "stats", "outputs"]
    assert data["created"] == CREATED and data["speedup"] == pytest.approx((7 / 0.37) / (7 / 1.1))
    assert data["outputs_identical"] is False and data["baseline"]["stats"]["acceptance"] is None


# -- run_offline without an engine: what it tells its reporter, and what that shows ------------
class Calls:
    """A reporter that notes every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def header(self, cfg, prompts) -> None:
        self.calls.append(("header", len(prompts.texts)))

    def starting(self, label: str):
        self.calls.append(("starting", label))
        return contextlib.nullcontext()

    def progress(self, label: str, category: str):
        self.calls.append(("progress", (label, category)))
        return False

    def engine_failed(self, log: Path, tail: list[str]) -> None:
        self.calls.append(("engine_failed", tail))

    def finished(self, outcome) -> None:
        self.calls.append(("finished", outcome))

    def recorded(self, path: Path) -> None:
        self.calls.append(("recorded", path))


def _fake_engine(monkeypatch, fail: bool = False) -> None:
    """``_run_engine`` without vLLM: it starts (the reporter's spinner), runs one batch, returns a
    fixture pass (or, with ``fail``, writes to the engine log and raises)."""

    def fake(cfg, prompts, label, reporter, verbosity, engine_log):
        with reporter.starting(label):
            pass
        if fail:
            engine_log.write_text("first line\nthe engine's last words\n")
            raise RuntimeError("engine died")
        reporter.progress(label, "")
        return _spec() if cfg.draft.method else _base()

    monkeypatch.setattr(offline_run, "_run_engine", fake)


BASELINE = ["draft=tiny_eagle", "lookahead=3", "offline.baseline=true", "dataset.num_prompts=2"]


def test_run_offline_tells_its_reporter_and_prints_nothing(monkeypatch, capsys, tmp_path: Path) -> None:
    _fake_engine(monkeypatch)
    reporter = Calls()
    record = run_offline(compose_config(BASELINE), reporter, json_path=tmp_path / "run.json")
    assert capsys.readouterr() == ("", "")
    names = [name for name, _ in reporter.calls]
    assert names == ["header", "starting", "progress", "starting", "progress", "finished", "recorded"]
    assert reporter.calls[1] == ("starting", "tiny_eagle k=3") and reporter.calls[3] == ("starting", "no draft")
    outcome = reporter.calls[5][1]
    assert [r.label for r in outcome.runs] == ["tiny_eagle k=3", "no draft"]
    assert outcome.identical is True and outcome.difference is None
    assert reporter.calls[6] == ("recorded", tmp_path / "run.json")
    assert json.loads((tmp_path / "run.json").read_text()) == record.to_dict()
    assert record.outputs_identical is True and record.baseline is not None


def test_without_a_record_path_nothing_is_written(monkeypatch, tmp_path: Path) -> None:
    _fake_engine(monkeypatch)
    reporter = Calls()
    assert run_offline(compose_config(["draft=tiny_eagle", "dataset.num_prompts=2"]), reporter) is None
    assert [name for name, _ in reporter.calls] == ["header", "starting", "progress", "finished"]


def test_a_failed_engine_hands_its_log_tail_to_the_reporter(monkeypatch) -> None:
    _fake_engine(monkeypatch, fail=True)
    reporter = Calls()
    with pytest.raises(RuntimeError, match="engine died"):
        run_offline(compose_config(["draft=tiny_eagle", "dataset.num_prompts=2"]), reporter)
    assert reporter.calls[-1] == ("engine_failed", ["first line", "the engine's last words"])


def _shown(monkeypatch, verbosity: int, overrides: list[str] = BASELINE) -> str:
    _fake_engine(monkeypatch)
    console = Console(record=True, width=100, file=io.StringIO())
    run_offline(compose_config(overrides), OfflineDisplay(console, verbosity), json_path=None, verbosity=verbosity)
    return console.export_text()


def test_the_display_shows_the_run_line_and_the_tables(monkeypatch) -> None:
    text = _shown(monkeypatch, 0)
    assert text.startswith("offline target=tiny draft=tiny_eagle lookahead=3 prompts=2 (builtin) max_tokens=")
    assert "offline run: tiny_eagle k=3" in text and "acceptance by draft position" in text
    assert "speculation vs no draft (same prompts)" in text
    assert "greedy outputs identical with and without speculation (2 prompts)" in text


def test_quiet_shows_the_results_only(monkeypatch) -> None:
    quiet, normal = _shown(monkeypatch, -1), _shown(monkeypatch, 0)
    assert not quiet.startswith("offline target=")
    assert quiet == normal[normal.index("\n") + 1:]  # everything but the run's line
    display = OfflineDisplay(Console(file=io.StringIO()), -1)
    assert display.progress("x", "") is False and isinstance(display.starting("x"), contextlib.nullcontext)
    assert callable(OfflineDisplay(Console(file=io.StringIO()), 0).progress("x", "cat"))


def test_a_failed_engine_shows_its_log_at_every_verbosity(tmp_path: Path) -> None:
    for verbosity in (-1, 0):
        console = Console(record=True, width=100, file=io.StringIO())
        OfflineDisplay(console, verbosity).engine_failed(tmp_path / "engine.log", ["boom"])
        assert console.export_text() == f"  | boom\nengine log: {tmp_path / 'engine.log'}\n"
