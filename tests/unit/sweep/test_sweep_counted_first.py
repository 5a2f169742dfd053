"""A sweep's values are counted on Hydra's parsed sweep objects before anything expands them, and
every size and count refusal comes before any composition.

``shuffle(range(1,100000000))`` made Hydra build the whole list (``sweep_iterator`` copies and
shuffles it); ``range(1,inf)`` never ends. Each is now one line, at once. The largest inputs that
must be refused are those of ``benchmarks/dry_run_scale.py`` (its ``REFUSALS``), run here
in-process with composition forbidden.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from llama4spec.runbook import matrix
from tests.helpers import REPO


def _parsed(text: str):
    return matrix.parse_override(text)


@pytest.mark.parametrize("text, count", [
    ("lookahead=1,3,5", 3),
    ("lookahead=choice(1,3)", 2),
    ("lookahead=range(1,8)", 7),
    ("lookahead=range(1,8,3)", 3),
    ("lookahead=range(8,1,-2)", 4),
    ("lookahead=range(5,1)", 0),
    ("lookahead=range(1,100000000)", 99_999_999),
    ("lookahead=shuffle(range(1,100000000))", 99_999_999),
    ("lookahead=sort(range(1,100000000),reverse=true)", 99_999_999),
    ("lookahead=range(0.5,2.5,0.5)", 4),
    ("lookahead=range(0.5,100000,0.01)", 9_999_950),
    ("lookahead=range(1,inf)", math.inf),
    ("lookahead=shuffle(range(1,nan))", math.inf),
    ("lookahead=range(-inf,1)", math.inf),
    ("lookahead=interval(1,2)", None),
])
def test_sweep_count_is_arithmetic(text: str, count, monkeypatch) -> None:
    parsed = _parsed(text)
    monkeypatch.setattr(type(parsed), "sweep_iterator", lambda *a, **k: pytest.fail("expanded"))
    assert matrix.sweep_count(parsed) == count


def test_counted_expansion_matches_hydra() -> None:
    for text in ("lookahead=range(1,8,3)", "lookahead=range(8,1,-2)", "lookahead=range(0.5,2.5,0.5)",
                 "lookahead=shuffle(range(1,50))", "lookahead=choice(1,3,5)"):
        values, count = matrix.sweep_values(_parsed(text))
        assert count == len(values) == len(list(_parsed(text).sweep_string_iterator())), text


@pytest.mark.parametrize("sweep, said", [
    ("lookahead=shuffle(range(1,100000000))", "99,999,999 values"),
    ("lookahead=range(1,inf)", "a range without end"),
    ("lookahead=shuffle(range(1,nan))", "a range without end"),
    ("lookahead=range(0.5,100000,0.01)", "9,999,950 values"),
    ("lookahead=range(0,1,0)", "cannot expand this sweep"),
    ("lookahead=shuffle(range(1,10,0.0))", "cannot expand this sweep"),
])
def test_sweep_command_refuses_in_one_line(cli, sweep: str, said: str) -> None:
    done = cli("sweep", sweep, "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_runbook_matrix_string_counted_first(tmp_path: Path, cli) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("name: r\nsteps:\n  - {id: s, kind: sweep, matrix: {lookahead: 'shuffle(range(1,100000000))'}}\n")
    done = cli("run", path, "--dry-run")
    assert done.returncode == 2 and "99,999,999 values" in done.stderr, done.stderr


def _refusals():
    spec = importlib.util.spec_from_file_location("dry_run_scale", REPO / "benchmarks" / "dry_run_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.REFUSALS


@pytest.mark.parametrize("what, argv, files", _refusals(), ids=lambda x: x if isinstance(x, str) else "")
def test_maximal_refusals_come_before_any_composition(cli, tmp_path: Path, monkeypatch, what, argv, files) -> None:
    from llama4spec.config import compose

    monkeypatch.setattr(compose, "_compose_checked", lambda overrides: pytest.fail(f"{what}: composed"))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = cli(*[a.format(dir=tmp_path) for a in argv], "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 2 and "Traceback" not in done.stderr, (what, done.stderr[-2000:])
    assert len(done.stderr.strip().splitlines()) == 1, (what, done.stderr)
