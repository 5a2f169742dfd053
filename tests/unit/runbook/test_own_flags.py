"""Every step kind that builds a benchmark command (bench, sweep, capacity) refuses extra_args that
repeat a flag the step sets itself, by one rule (``fields.own_flag_problems``): one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import REPO

CAPACITY = (REPO / "runbooks" / "tiny_cpu_capacity.yaml").read_text()


def _runbook(tmp_path: Path, extra: str, kind: str) -> Path:
    path = tmp_path / "book.yaml"
    if kind == "capacity":
        text = CAPACITY.replace("    price: 2.5\n    extra_args: [--ignore-eos]", f"    price: 2.5\n    extra_args: [{extra}]")
        assert text != CAPACITY
    elif kind == "sweep":
        text = ("name: b\noverrides: [target=tiny, memory=cpu, bench=random_tiny]\nsteps:\n"
                f"  - {{id: s, kind: sweep, matrix: {{draft: [none]}}, extra_args: [{extra}]}}\n")
    else:
        text = ("name: b\noverrides: [target=tiny]\nsteps:\n"
                f"  - {{id: b, kind: bench, url: 'http://127.0.0.1:9', extra_args: [{extra}]}}\n")
    path.write_text(text)
    return path


@pytest.mark.parametrize("extra,flag", [("--result-dir, /etc", "--result-dir"), ("--label=x", "--label"),
                                        ("--request-rate, '3'", "--request-rate"),
                                        ("--max-concurrency, '4'", "--max-concurrency"),
                                        ("--goodput, 'ttft:1'", "--goodput"), ("--result-d, /etc", "--result-dir")])
def test_capacity_refuses_the_flags_its_probes_set(cli, tmp_path: Path, extra: str, flag: str) -> None:
    done = cli("run", str(_runbook(tmp_path, extra, "capacity")), "--dry-run", "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and flag in lines[0] and "sets itself" in lines[0], done.stderr


@pytest.mark.parametrize("kind", ["bench", "sweep", "capacity"])
def test_every_kind_refuses_by_the_same_rule(cli, tmp_path: Path, kind: str) -> None:
    done = cli("run", str(_runbook(tmp_path, "--result-filename=x.json", kind)), "--dry-run",
               "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "extra_args repeats --result-filename, which llama4spec sets itself" in done.stderr, done.stderr
