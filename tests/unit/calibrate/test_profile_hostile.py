"""noise.json read back through its model: a field out of its bounds or of the wrong type is one
line naming the file, the field and the rule (exit 2), and its text never prints as markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.calibrate.test_calibrate import _written


def _spoiled(tmp_path: Path, edit) -> Path:
    path = _written(tmp_path)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["between"].update(sd=1e308), "'between.sd' is 1e+308, not a log-sd from 0 to 10"),
    (lambda d: d["within"].update(sd=-0.1), "'within.sd' is -0.1, not a log-sd from 0 to 10"),
    (lambda d: d["between"].update(df="x"), "'between.df' is 'x'"),
    (lambda d: d["costs"].update(start_s=1e308, run_s=1e-300), "'costs.start_s' is 1e+308, not seconds"),
    (lambda d: d["costs"].update(run_s=1e-300), "'costs.run_s' is 1e-300, not seconds from 1e-06 to 1e6"),
    (lambda d: d.update(aa_check={"pairs": "x", "declared": 1}), "'aa_check.pairs' is 'x', not a whole number"),
    (lambda d: d["fingerprint"].pop("device"), "'fingerprint.device' is missing"),
    (lambda d: d["fingerprint"].update(tensor_parallel_size=True), "'fingerprint.tensor_parallel_size' is True"),
    (lambda d: d.update(design="diagonal"), "'design' is 'diagonal', not sequential or back_to_back"),
    (lambda d: d["fingerprint"].update(device_detail="x" * 100_000), "'fingerprint.device_detail' is 'xxx"),
], ids=["sd 1e308", "sd negative", "df text", "costs overflow", "run tiny", "aa pairs text", "fingerprint missing",
        "tp bool", "design", "100 kB string"])
def test_a_damaged_profile_is_one_line_naming_the_field(cli, tmp_path, edit, words) -> None:
    result = cli("calibrate", "--check", str(_spoiled(tmp_path, edit)))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(tmp_path / "noise.json") in lines[0] and words in lines[0] and "calibrate" in lines[0]


def test_markup_in_a_profile_prints_as_written(cli, tmp_path) -> None:
    path = _spoiled(tmp_path, lambda d: d["fingerprint"].update(device_detail="[/x]"))
    result = cli("calibrate", "--check", str(path))
    assert result.returncode == 0, result.stderr
    assert "([/x])" in result.stdout


def test_the_allocation_caps_a_ratio_that_overflows() -> None:
    from llama4spec.stats.design import MAX_RUNS_PER_START, runs_per_start
    from llama4spec.stats.noise import prior

    noise = prior(1e-150, 10.0, "x")
    assert runs_per_start(noise, 1e6, 1e-6).runs == MAX_RUNS_PER_START
