"""What any command refuses, ``validate`` refuses, through the one validation function; no JSON
output holds NaN or infinity.

``validate bench.category=nope`` and ``validate dataset.category=nope`` said "config is valid"
while ``run`` and ``offline`` refused them; ``validate generation.temperature=nan`` passed and
``show --json`` then crashed on the NaN. The cases are generated from the schema: every float
field given NaN and infinity, every text field given an empty string.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import pytest

from llama4spec.config import schema
from llama4spec.config.schema import Config


def _fields(cls, prefix: str = ""):
    """(dotted key, type) of every scalar field of the schema."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind):
            yield from _fields(kind, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", kind


def _of(kind, wanted: type) -> bool:
    """``wanted`` or ``Optional[wanted]`` (not a list of it)."""
    return kind is wanted or (typing.get_origin(kind) is typing.Union and wanted in typing.get_args(kind))


FLOATS = [key for key, kind in _fields(Config) if _of(kind, float)]
TEXTS = [key for key, kind in _fields(Config) if _of(kind, str)]
NON_FINITE = [f"{key}={v}" for key in FLOATS for v in ("nan", "inf", "-inf")] + ["offline.temperatures=[0.5,nan]"]
EMPTY = [f"{key}=''" for key in TEXTS] + [f"{key}=' '" for key in ("target.model", "serve.host", "draft.name")]
CATEGORIES = ["bench.category=nope", "dataset.category=nope", "bench.category=''",
              "dataset=jsonl dataset.path=README.md bench.category=clean_start"]


def test_the_schema_has_the_fields_the_cases_cover() -> None:
    assert {"generation.temperature", "bench.temperature", "memory.gpu_memory_utilization",
            "serve.health_timeout_s", "hardware.memory_gib"} <= set(FLOATS)
    assert {"serve.host", "target.model", "draft.model", "bench.category", "serve.served_model_name"} <= set(TEXTS)
    assert schema.Config is Config


@pytest.mark.parametrize("override", NON_FINITE + EMPTY + CATEGORIES)
def test_validate_refuses_in_one_line_per_problem(cli, override: str) -> None:
    done = cli("validate", *override.split(" "))
    assert done.returncode == 2, (override, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "config is valid" not in done.stdout, done.stderr
    key = override.split(" ")[-1].split("=", 1)[0]
    assert key in done.stderr, (override, done.stderr)


@pytest.mark.parametrize("override", NON_FINITE[::3] + ["generation.temperature=nan", "bench.temperature=inf"])
def test_show_json_is_strict_json_or_one_line(cli, override: str) -> None:
    done = cli("show", "--json", override)
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode == 0:
        json.loads(done.stdout, parse_constant=lambda c: pytest.fail(f"{override}: {c} in show --json"))
    else:
        assert done.returncode == 2 and "not a finite number" in done.stderr, done.stderr


@pytest.mark.parametrize("override", ["bench.category=nope", "dataset.category=nope", "generation.temperature=nan",
                                      "serve.host=999.999.999.999", "target.model=''", "bench.request_rate=nan"])
def test_run_refuses_with_the_lines_validate_gives(cli, tmp_path: Path, override: str) -> None:
    checked = cli("validate", "target=tiny", override)
    book = tmp_path / "b.yaml"
    book.write_text("name: b\noverrides: [target=tiny]\nsteps:\n"
                    "  - {id: b, kind: bench, url: 'http://127.0.0.1:9'}\n")
    ran = cli("run", book, override, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert checked.returncode == ran.returncode == 2, (checked.stderr, ran.stderr)
    for line in checked.stderr.strip().splitlines():
        assert line.removeprefix("error: ") in ran.stderr, (line, ran.stderr)


def test_json_printer_prints_null_and_names_the_value(capsys) -> None:
    from llama4spec.cli.jsonout import emit

    emit({"a": [1.0, {"b": float("nan")}], "c": float("inf")})  # no error: the exit code is the command's own
    printed = capsys.readouterr()
    document = json.loads(printed.out, parse_constant=lambda c: pytest.fail(c))
    assert document == {"a": [1.0, {"b": None}], "c": None, "written_null": ["a.1.b", "c"]}
    assert "a.1.b" in printed.err and "null" in printed.err


def test_records_are_strict_json(tmp_path: Path) -> None:
    from llama4spec.files import write_json

    write_json(tmp_path / "r.json", {"x": float("inf"), "y": [float("nan"), 1.5], "z": "nan"})
    text = (tmp_path / "r.json").read_text()
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c)) == {"x": None, "y": [None, 1.5], "z": "nan",
                                                                         "written_null": ["x", "y.0"]}
