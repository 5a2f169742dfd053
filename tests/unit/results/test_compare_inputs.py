"""compare refuses nonsense: each bad input is one clear line, never `nanx` or a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GOOD = {"output_throughput": 100.0, "completed": 16, "failed": 0, "mean_tpot_ms": 10.0}


def _write(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize("bad,expected", [
    ({**GOOD, "output_throughput": float("nan")}, "not a positive finite number"),
    ({**GOOD, "output_throughput": float("inf")}, "not a positive finite number"),
    ({**GOOD, "output_throughput": -5.0}, "not a positive finite number"),
    ({**GOOD, "output_throughput": True}, "not a positive finite number"),
    ({**GOOD, "completed": 0}, "completed no request"),
    ([1, 2, 3], "expected a JSON object"),
    ("\x00\xff garbage", "not UTF-8 text"),
    ({"kind": "llama4spec.bench", "label": "x", "returncode": 1}, "did not finish"),
])
def test_bad_inputs_are_one_line(cli, tmp_path: Path, bad, expected) -> None:
    good = _write(tmp_path / "good.json", GOOD)
    path = tmp_path / "bad.json"
    if isinstance(bad, str):
        path.write_bytes(bad.encode("latin-1"))
    else:
        path.write_text(json.dumps(bad))
    res = cli("compare", str(good), str(path), timeout=60)
    assert res.returncode == 2 and expected in res.stderr, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "nanx" not in res.stdout


def test_the_same_file_twice_is_refused(cli, tmp_path: Path) -> None:
    good = _write(tmp_path / "good.json", GOOD)
    res = cli("compare", str(good), str(good), timeout=60)
    assert res.returncode == 2 and "both baseline and candidate" in res.stderr


def test_a_directory_is_refused(cli, tmp_path: Path) -> None:
    good = _write(tmp_path / "good.json", GOOD)
    res = cli("compare", str(tmp_path), str(good), timeout=60)
    assert res.returncode == 2 and "is a directory" in res.stderr and "Traceback" not in res.stderr


def test_markup_in_a_label_is_printed_as_text(cli, tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", {**GOOD, "label": "[/x] base"})
    b = _write(tmp_path / "b.json", {**GOOD, "label": "[red]cand", "output_throughput": 150.0})
    res = cli("compare", str(a), str(b), timeout=60)
    assert res.returncode == 0, res.stderr
    assert "[/x] base" in res.stdout and "[red]cand" in res.stdout and "1.50x" in res.stdout


@pytest.mark.parametrize("bad,expected", [
    ({**GOOD, "spec_decode_acceptance_length": "2.5"}, "spec_decode_acceptance_length"),
    ({**GOOD, "spec_decode_acceptance_length": 0.5}, "spec_decode_acceptance_length"),
    ({**GOOD, "spec_decode_per_position_acceptance_rates": ["0.9", "0.8"]}, "per_position_acceptance_rates"),
    ({**GOOD, "spec_decode_per_position_acceptance_rates": 1}, "per_position_acceptance_rates"),
    ({"kind": "llama4spec.bench", "label": "x", "returncode": 0, "result": GOOD,
      "acceptance": {"num_drafts": 4, "mean_acceptance_length": "x", "acceptance_rate_per_position": [0.5]}},
     "acceptance.mean_acceptance_length"),
    ({"kind": "llama4spec.bench", "label": "x", "returncode": 0, "result": GOOD,
      "acceptance": {"num_drafts": 4, "acceptance_rate_per_position": 3}}, "acceptance.acceptance_rate_per_position"),
])
def test_acceptance_figures_that_are_no_numbers_are_one_line(cli, tmp_path: Path, bad, expected) -> None:
    good = _write(tmp_path / "good.json", GOOD)
    res = cli("compare", str(good), str(_write(tmp_path / "bad.json", bad)), timeout=60)
    assert res.returncode == 2 and expected in res.stderr, res.stdout + res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
