"""The sweep's, the break-even map's and the losslessness records read through their models: each
example the tool writes reads back; a damaged field is one line naming the file, the field and the
rule, through the command that reads it (exit 2, no traceback); a writer checks its data through the
same model and writes nothing when a value breaks a rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.errors import UserError
from llama4spec.records.registry import ENTRIES
from tests.unit.records.examples_h3 import EXAMPLES

TINY = ["target=tiny", "memory=cpu", "bench=random_tiny"]


def _registered() -> None:
    import llama4spec.lossless.records  # noqa: F401
    import llama4spec.sweep.sweep_records  # noqa: F401
    import llama4spec.breakeven.records  # noqa: F401
    import llama4spec.sweep.records  # noqa: F401


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_every_example_reads_back_through_its_registered_model(tmp_path, key) -> None:
    _registered()
    path = EXAMPLES[key](tmp_path)
    entry = ENTRIES[key]
    assert isinstance(entry.read(path), entry.model) and entry.schema == f"llama4spec.{key}/1" or key == "lossless"


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _one_line(result) -> str:
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_a_damaged_sweep_json_is_one_line_in_breakeven_draft_from(cli, tmp_path) -> None:
    path = EXAMPLES["sweep"](tmp_path)
    _edit(path, lambda d: d["concurrency"][0]["rows"][0].update(output_throughput=1e308))
    done = cli("breakeven", *TINY, "--lookaheads", "1,3", "--concurrencies", "1,4", "--draft-from", path, "--dry-run")
    line = _one_line(done)
    assert str(path) in line and done.stdout == ""
    assert "'concurrency.0.rows.0.output_throughput' is 1e+308, not a throughput from 1e-06 to 1e9" in line


def test_a_sweep_json_the_tool_wrote_places_its_drafts(tmp_path) -> None:
    from llama4spec.breakeven.draft_from import read

    path = EXAMPLES["sweep"](tmp_path)
    given, problems = read(path, None, [1, 3], [1, 4])
    assert problems == [] and {(g.lookahead, g.concurrency) for g in given} == {(1, 1), (3, 1), (1, 4), (3, 4)}


@pytest.mark.parametrize("change, words", [
    (lambda d: d["sampled"][0].update(p_value=1e308), "'sampled.0.p_value' is 1e+308, not a p-value from 0 to 1"),
    (lambda d: d["sampled"][0].pop("test"), "'sampled.0.test' is missing"),
    (lambda d: d["settings"].update(level=1.5), "'settings.level' is 1.5, not a level between 0 and 1"),
    (lambda d: d.update(kind="sweep"), "'kind' is 'sweep', not a lossless record (kind: lossless)"),
], ids=["p_value", "test missing", "level", "kind"])
def test_a_damaged_lossless_json_is_one_line_in_regress(cli, tmp_path, change, words) -> None:
    from tests.unit.lossless.test_lossless_cli import PASS, _record, _run_dir

    old = _run_dir(tmp_path / "old", _record(PASS))
    new = _run_dir(tmp_path / "new", _record(PASS))
    _edit(new / "check" / "lossless.json", change)
    line = _one_line(cli("regress", str(old), str(new), "--fail-on-lossless"))
    assert str(new / "check" / "lossless.json") in line and words in line


def test_a_damaged_breakeven_json_is_one_line_from_its_reader(tmp_path) -> None:
    _registered()
    path = EXAMPLES["breakeven"](tmp_path)
    _edit(path, lambda d: d["curves"][0]["placements"][0].update(acceptance_length=4.5))  # k = 3
    with pytest.raises(UserError) as err:
        ENTRIES["breakeven"].read(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert "'curves.0.placements' is" in str(err.value) and "lookahead + 1" in str(err.value)


def test_writers_check_through_the_model_and_write_nothing_out_of_bounds(tmp_path) -> None:
    from llama4spec.records.io import write_checked
    from llama4spec.sweep.sweep_records import Schedule
    from llama4spec.sweep.records import SettleRecord

    settle = tmp_path / "settle.json"
    with pytest.raises(UserError) as err:
        write_checked(SettleRecord, settle, {"extra_runs": -1, "points": {}})
    assert "'extra_runs' is -1, not a whole number from 0 to 1e9" in str(err.value) and not settle.exists()
    schedule = tmp_path / "schedule.json"
    with pytest.raises(UserError) as err:
        write_checked(Schedule, schedule, {"draft": "d", "schedule": [(1, 4, 99)], "from_points": ["../x"]})
    assert "'from_points.0' is '../x', not a list of at most 4096 points, each a step id" in str(err.value)
    assert not schedule.exists()


def test_the_bytes_written_are_those_write_json_writes(tmp_path) -> None:
    from llama4spec.files import json_text
    from llama4spec.records.io import write_checked
    from llama4spec.sweep.sweep_records import Schedule

    data = {"draft": "d", "schedule": [(1, 4, 3), (5, 64, 0)], "lookahead": 3, "override": None,
            "from_points": ["a-c1"], "missing": []}
    write_checked(Schedule, tmp_path / "schedule.json", data)
    assert (tmp_path / "schedule.json").read_text() == json_text(data) + "\n"
