"""A sweep step's matrix values in Hydra's own sweep syntax (a string instead of a list), expanded by
Hydra's override parser: range(1,8), "1,3,5", choice(none,tiny_eagle). Bad syntax is one line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from llama4spec.runbook.matrix import check_matrix
AT = "rb.yaml: step 'sweep'"


@pytest.mark.parametrize("raw,expected", [
    ({"lookahead": "range(1,8)"}, {"lookahead": ["1", "2", "3", "4", "5", "6", "7"]}),
    ({"lookahead": "1,3,5"}, {"lookahead": ["1", "3", "5"]}),
    ({"draft": "choice(none,tiny_eagle)"}, {"draft": ["none", "tiny_eagle"]}),
    ({"draft": "none,tiny_eagle", "bench.max_concurrency": [1, 4]},
     {"draft": ["none", "tiny_eagle"], "bench.max_concurrency": ["1", "4"]}),
    ({"lookahead": "range(1,7,2)"}, {"lookahead": ["1", "3", "5"]}),
    ({"lookahead": "3"}, {"lookahead": ["3"]}),  # one value: a one-point axis
])
def test_hydra_sweep_strings_expand(raw: dict, expected: dict) -> None:
    matrix, problems = check_matrix(raw, AT)
    assert problems == [] and matrix == expected


@pytest.mark.parametrize("raw,expected", [
    ({"lookahead": "range(1,"}, "matrix 'lookahead'"),
    ({"lookahead": "1,,3"}, "matrix 'lookahead'"),
    ({"draft": "choice(none,nonexistent)"}, "unknown option 'nonexistent'"),
    ({"lookahead": "1,3,1"}, "lists a value twice"),
    ({"lookahead": "range(5,1)"}, "matrix 'lookahead'"),  # empty
])
def test_bad_sweep_strings_are_one_line(raw: dict, expected: str) -> None:
    matrix, problems = check_matrix(raw, AT)
    assert len(problems) == 1 and expected in problems[0] and problems[0].startswith(AT), problems
    assert "\n" not in problems[0]


def test_runbook_with_hydra_syntax_plans(cli, tmp_path: Path) -> None:
    runbook = tmp_path / "hydra_sweep.yaml"
    runbook.write_text("""name: hydra_sweep
overrides: [bench=random_tiny]
steps:
  - id: sweep
    kind: sweep
    matrix:
      draft: choice(none,tiny_eagle)
      lookahead: range(1,3)
      bench.max_concurrency: "1,4"
""")
    res = cli("run", str(runbook), "--dry-run", timeout=180)
    assert res.returncode == 0, res.stderr
    for step in ("sweep-none-c1", "sweep-none-c4", "sweep-tiny_eagle-k1-c4", "sweep-tiny_eagle-k2-c1"):
        assert f"{step}: bench" in res.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(runbook.read_text().replace("range(1,3)", "range(1,"))
    res = cli("run", str(bad), "--dry-run", timeout=180)
    assert res.returncode == 2 and "matrix 'lookahead'" in res.stderr and "Traceback" not in res.stderr
