"""``--json`` prints what the command prints without it, as strict JSON, and exits as it does: a
figure that is not a number is null (named in ``written_null`` and on stderr), never an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.recorded_runs import finished_run


def _strict(text: str):
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))


def test_regress_json_exits_as_without_it_with_a_version_that_is_no_number(cli, tmp_path: Path) -> None:
    """A version written by hand as a number that is none (1e999) is refused by host.json's model: both
    forms exit 2 with the same one line, and --json prints nothing half-written."""
    before = finished_run(tmp_path / "runs" / "before", seed=1)
    after = finished_run(tmp_path / "runs" / "after", seed=2)
    host = json.loads((after / "host.json").read_text())
    host["versions"]["vllm"] = [float("inf")]  # written by hand: 1e999 in the file
    (after / "host.json").write_text(json.dumps(host))
    plain = cli("regress", str(before), str(after))
    as_json = cli("regress", str(before), str(after), "--json")
    assert "Traceback" not in plain.stderr + as_json.stderr
    assert as_json.returncode == plain.returncode == 2, (plain.stderr, as_json.stderr)
    assert as_json.stderr == plain.stderr and "'versions.vllm'" in plain.stderr and not as_json.stdout.strip()
