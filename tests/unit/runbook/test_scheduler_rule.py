"""The doctor's rule over a whole runbook: servers whose results one step compares must run one
scheduler. vLLM 0.32 serves n-gram without async scheduling and no speculation (or EAGLE) with it,
so a compare of the two, unpinned, is warned of before anything starts (the dry run and the run
say it), naming both servers, the method and the fix; sides pinned equal, or methods scheduled
alike, are not."""

from __future__ import annotations

from pathlib import Path

from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.schedulers import RULE, findings

PAIR = """name: pair
overrides: [target=tiny, memory=cpu, bench=random_tiny, lookahead=3, serve.port=8793]
steps:
  - id: cand
    kind: serve
    overrides: [draft={candidate}{cand_extra}]
  - id: bench_cand
    kind: bench
    server: cand
  - id: stop_cand
    kind: stop
    server: cand
  - id: base
    kind: serve
    needs: [stop_cand]
    overrides: [draft={baseline}{base_extra}]
  - id: bench_base
    kind: bench
    server: base
  - id: stop_base
    kind: stop
    server: base
  - id: versus
    kind: compare
    baseline: bench_base
    candidate: bench_cand
"""

BREAKEVEN = """name: be
overrides: [target=tiny, memory=cpu, bench=random_tiny, serve.port=8794]
steps:
  - id: map
    kind: breakeven
    overrides: [draft={draft}{extra}]
    lookaheads: [2]
    concurrencies: [1]
"""


def _found(tmp_path: Path, text: str, **values: str):
    path = tmp_path / "rb.yaml"
    path.write_text(text.format(**values))
    return findings(plan_file(path, lambda name: tmp_path / "runs" / name, []))


def _pair(tmp_path: Path, candidate: str, baseline: str = "none", cand_extra: str = "", base_extra: str = ""):
    return _found(tmp_path, PAIR, candidate=candidate, baseline=baseline, cand_extra=cand_extra, base_extra=base_extra)


def test_ngram_against_no_speculation_unpinned_is_warned_naming_both_servers_the_method_and_the_fix(tmp_path):
    (f,) = _pair(tmp_path, "ngram")
    assert f.rule == RULE and f.severity == "warning"
    assert "step 'versus'" in f.what and "'cand' (n-gram), which runs without" in f.what
    assert "'base' (no speculation), which runs with async scheduling" in f.what
    assert "vLLM 0.32 turns async scheduling off for n-gram" in f.why
    assert f.fix == "set serve.async_scheduling=false on the other side: in the overrides of 'base'"


def test_either_side_may_be_the_baseline(tmp_path):
    (f,) = _pair(tmp_path, "tiny_eagle", baseline="ngram")
    assert "'base' (n-gram), which runs without" in f.what and f.fix.endswith("in the overrides of 'cand'")


def test_sides_pinned_equal_or_scheduled_alike_are_not_warned(tmp_path):
    assert _pair(tmp_path, "ngram", base_extra=", serve.async_scheduling=false") == []
    assert _pair(tmp_path, "ngram", cand_extra=", serve.async_scheduling=false",
                 base_extra=", serve.async_scheduling=false") == []
    assert _pair(tmp_path, "tiny_eagle") == []  # EAGLE keeps async scheduling on, as no speculation does
    assert _pair(tmp_path, "ngram", baseline="ngram") == []


def test_a_pin_on_one_side_that_leaves_them_apart_is_still_warned(tmp_path):
    (f,) = _pair(tmp_path, "tiny_eagle", base_extra=", serve.async_scheduling=false")
    assert "'base' (no speculation), which runs without" in f.what and "their flags turn" in f.why


def test_a_breakeven_map_of_ngram_is_warned_with_the_fix_in_its_own_overrides(tmp_path):
    (f,) = _found(tmp_path, BREAKEVEN, draft="ngram", extra="")
    assert "step 'map'" in f.what and "'map-none' (no speculation)" in f.what and "and 2 more" in f.what
    assert f.fix == "set serve.async_scheduling=false in the overrides of step 'map' (every server it starts)"
    assert _found(tmp_path, BREAKEVEN, draft="ngram", extra=", serve.async_scheduling=false") == []
    assert _found(tmp_path, BREAKEVEN, draft="tiny_eagle_imperfect", extra="") == []


def test_a_sweep_pins_itself_and_is_not_warned(tmp_path):
    text = ("name: sw\noverrides: [experiment=tiny_cpu, serve.port=8795]\nsteps:\n  - id: sweep\n    kind: sweep\n"
            "    matrix:\n      draft: [none, ngram]\n      lookahead: [2]\n")
    assert _found(tmp_path, text) == []


def test_the_dry_run_says_it_before_the_records(cli, tmp_path):
    path = tmp_path / "rb.yaml"
    path.write_text(PAIR.format(candidate="ngram", baseline="none", cand_extra="", base_extra=""))
    done = cli("run", path, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    warned = [i for i, line in enumerate(lines) if line.startswith(f"doctor: warning {RULE}: step 'versus'")]
    records = [i for i, line in enumerate(lines) if line.startswith("records: ")]
    assert len(warned) == 1 and warned[0] < records[0]
    assert "fix: set serve.async_scheduling=false on the other side" in lines[warned[0]]


def test_the_doctor_checks_a_runbook_with_its_steps_and_the_rules_across_them(cli, tmp_path):
    import json

    path = tmp_path / "rb.yaml"
    path.write_text(PAIR.format(candidate="ngram", baseline="none", cand_extra="", base_extra=""))
    done = cli("doctor", "--runbook", path)
    assert done.returncode == 0, done.stderr  # a warning, no error
    assert f"warning {RULE}: step 'versus' compares server 'cand' (n-gram)" in done.stdout
    assert "step cand: vLLM 0.32 serves n-gram" in done.stdout  # the step's own pairing rules, named by step
    found = json.loads(cli("doctor", "--runbook", path, "--json").stdout)["findings"]
    assert [(f["rule"], f["steps"]) for f in found] == [(RULE, []), ("async-scheduling", ["cand"])]
    fixed = cli("doctor", "--runbook", path, "serve.async_scheduling=false")
    assert fixed.returncode == 0 and RULE not in fixed.stdout
