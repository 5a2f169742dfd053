"""Contradictions are refused the same way wherever they are written: ``--repeats N`` on a runbook
whose sweep revisits (as ``repeats: N`` beside ``revisit: true`` in the runbook is), keys of
another design than the sweep's, and a category filter that empties or replaces a bench preset's
prompts. One line each, exit 2, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest




def _refused(done, *words: str) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words), done.stderr
    return lines[0]


SWEEP = ("name: b\noverrides: [target=tiny, memory=cpu, bench=random_tiny]\nsteps:\n"
         "  - {{id: s, kind: sweep, matrix: {{draft: [none, tiny_eagle]}}, {keys}}}\n")


def test_command_line_repeats_on_a_revisiting_sweep_is_refused_as_the_runbook_form_is(cli, tmp_path: Path) -> None:
    runs = str(tmp_path / "runs")
    book, written = tmp_path / "b.yaml", tmp_path / "w.yaml"
    book.write_text(SWEEP.format(keys="repeats: auto, revisit: true"))
    written.write_text(SWEEP.format(keys="repeats: 3, revisit: true"))
    _refused(cli("run", str(book), "--repeats", "3", "--dry-run", "--runs-dir", runs),
             "--repeats 3", "revisit: true", "repeats: auto")
    _refused(cli("run", str(written), "--dry-run", "--runs-dir", runs), "revisit: true", "repeats: auto")
    assert cli("run", str(book), "--repeats", "auto", "--dry-run", "--runs-dir", runs).returncode == 0


@pytest.mark.parametrize("key", ["gap_s: 5", "swap_devices: true"])
def test_a_key_of_another_design_is_refused_naming_the_design(cli, tmp_path: Path, key: str) -> None:
    book = tmp_path / "b.yaml"
    book.write_text(SWEEP.format(keys=f"design: sequential, {key}"))
    _refused(cli("run", str(book), "--dry-run", "--runs-dir", str(tmp_path / "runs")),
             key.split(":")[0], "interleaved", "sequential")
    book.write_text(SWEEP.format(keys=key))  # design: auto: they act where it takes back-to-back blocks
    assert cli("run", str(book), "--dry-run", "--runs-dir", str(tmp_path / "runs")).returncode == 0


@pytest.mark.parametrize("preset", ["tiny_contrast", "mtbench"])
def test_a_category_that_would_replace_a_presets_prompts_is_refused(cli, preset: str) -> None:
    line = _refused(cli("validate", "target=tiny", f"bench={preset}", "bench.category=clean_start"),
                    "bench.category=clean_start", "its own prompts")
    assert "drop bench.category" in line
    assert cli("validate", "target=tiny", "bench=random_tiny", "bench.category=clean_start").returncode == 0


def test_a_category_a_spec_bench_file_does_not_hold_is_refused(cli, tmp_path: Path) -> None:
    questions = tmp_path / "question.jsonl"
    questions.write_text('{"category": "coding", "turns": ["a"]}\n{"category": "math", "turns": ["b"]}\n')
    given = ["target=tiny", "bench.dataset_name=spec_bench", f"bench.dataset_path={questions}"]
    line = _refused(cli("validate", *given, "bench.category=writing"), "bench.category=writing", "coding, math")
    assert "send none" in line
    assert cli("validate", *given, "bench.category=coding").returncode == 0
