"""A sweep over methods that vLLM 0.32 schedules differently (n-gram runs without async
scheduling) pins async scheduling off on every server, so a speedup compares methods and not
schedulers, and its dry run (and plan.json's design) says so; a sweep that sets it itself, or whose
methods all keep it on, is left as written."""

from __future__ import annotations

from pathlib import Path

SWEEP = """name: m
overrides: [experiment=tiny_cpu, serve.port=8741{extra}]
steps:
  - id: sweep
    kind: sweep
    matrix:
      draft: [{drafts}]
      lookahead: [2]
"""


def _dry(cli, tmp_path: Path, drafts: str, extra: str = ""):
    path = tmp_path / "m.yaml"
    path.write_text(SWEEP.format(drafts=drafts, extra=extra))
    done = cli("run", path, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    serves = [line for line in done.stdout.splitlines() if line.strip().startswith("command: vllm serve")]
    return done.stdout, serves


def test_ngram_beside_eagle_pins_async_scheduling_off_on_every_server(cli, tmp_path):
    out, serves = _dry(cli, tmp_path, "none, tiny_eagle, ngram")
    assert len(serves) == 3 and all("--no-async-scheduling" in s for s in serves), serves
    assert "async scheduling pinned off on every server: vLLM 0.32 turns it off for n-gram" in out


def test_methods_that_keep_it_on_or_a_sweep_that_sets_it_are_left_alone(cli, tmp_path):
    out, serves = _dry(cli, tmp_path, "none, tiny_eagle")
    assert len(serves) == 2 and not any("async-scheduling" in s for s in serves) and "pinned off" not in out
    out, serves = _dry(cli, tmp_path, "none, ngram", ", serve.async_scheduling=true")
    assert all("--async-scheduling" in s for s in serves) and "pinned off" not in out


def test_a_compare_of_two_schedulers_is_named():
    from llama4spec.runbook.steps.compare import async_note

    note = async_note({"baseline": True, "candidate": False})
    assert "the baseline with it, the candidate without it" in note and "serve.async_scheduling=false" in note
    assert async_note({"baseline": False, "candidate": False}) == ""
    assert async_note({"baseline": True, "candidate": None}) == ""  # a saved file: not known, not claimed
