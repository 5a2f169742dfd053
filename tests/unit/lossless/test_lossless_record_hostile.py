"""A lossless.json read back for ``regress``: every field ``worse`` and the verdict lines read is
checked; a missing or wrongly typed one is one line naming the field, never a traceback."""

from __future__ import annotations

import json

import pytest

from llama4spec.errors import UserError
from llama4spec.lossless.record import load, worse
from llama4spec.lossless.verdict_lines import lines
from tests.unit.lossless.test_lossless_cli import PASS, _record, _run_dir


def _edit_sampled(**change):
    return lambda d: d["sampled"][0].update(change)


CASES = [
    ("test missing", lambda d: d["sampled"][0].pop("test"), "'sampled.0.test' is missing"),
    ("level missing", lambda d: d["sampled"][0].pop("level"), "'sampled.0.level' is missing"),
    ("level text", _edit_sampled(level="x"), "'sampled.0.level' is 'x', not a level between 0 and 1"),
    ("p_value 1e308", _edit_sampled(p_value=1e308), "'sampled.0.p_value' is 1e+308, not a p-value from 0 to 1"),
    ("temperature bool", _edit_sampled(temperature=True), "'sampled.0.temperature' is True, not a temperature from 0 to 100"),
    ("counts huge", _edit_sampled(counts=[10**300]), "'sampled.0.counts.0' is 1000"),
    ("settings a list", lambda d: d.update(settings=[1]), "'settings' is [1], not a mapping"),
    ("greedy requests text", lambda d: d["greedy"].update(requests="4"), "'greedy.requests' is '4', not a whole number from 0 to 1e12"),
    ("sampled item text", lambda d: d["sampled"].append("x"), "'sampled.1' is 'x', not a list of at most 1000 tests (mappings)"),
    ("target markup", lambda d: d.update(target=7), "'target' is 7, not text of at most 500 characters"),
]


@pytest.mark.parametrize("name, edit, words", CASES, ids=[c[0] for c in CASES])
def test_a_damaged_field_is_one_line_naming_it(tmp_path, name, edit, words) -> None:
    _record(PASS).write(tmp_path / "lossless.json")
    data = json.loads((tmp_path / "lossless.json").read_text())
    edit(data)
    (tmp_path / "lossless.json").write_text(json.dumps(data))
    with pytest.raises(UserError) as err:
        load(tmp_path / "lossless.json")
    assert len(err.value.problems) == 1 and "\n" not in str(err.value)
    assert words in str(err.value) and "not a lossless record this tool wrote" in str(err.value)


def test_a_record_that_loads_is_compared_and_said_without_error(tmp_path) -> None:
    _record(PASS).write(tmp_path / "lossless.json")
    data = load(tmp_path / "lossless.json")
    assert worse(data, data) == [] and lines(data)[0].startswith("lossless: pass")


def test_regress_fail_on_lossless_refuses_a_record_without_a_level(cli, tmp_path) -> None:
    old = _run_dir(tmp_path / "old", _record(PASS))
    new = _run_dir(tmp_path / "new", _record(PASS))
    path = new / "check" / "lossless.json"
    data = json.loads(path.read_text())
    data["sampled"][0]["level"] = "x"
    path.write_text(json.dumps(data))
    result = cli("regress", str(old), str(new), "--fail-on-lossless")
    lines_ = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines_) == 1 and "'sampled.0.level' is 'x'" in lines_[0], result.stderr
