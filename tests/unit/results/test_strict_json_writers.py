"""Every JSON file the tool writes is strict JSON: a figure that is not a number is null and named
in ``written_null``; no writer turns a record into JSON but ``files.json_text``."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from llama4spec.results.bench import BenchRecord

PACKAGE = Path(__file__).resolve().parents[3] / "llama4spec"


def _strict(path: Path):
    return json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in {path.name}"))


def test_a_record_whose_wall_time_is_not_a_number_is_written_null(tmp_path: Path) -> None:
    record = BenchRecord(label="x", returncode=0, result={"completed": 3, "request_throughput": float("inf")},
                         wall_time_s=float("nan"))
    record.write(tmp_path / "record.json")
    data = _strict(tmp_path / "record.json")
    assert data["wall_time_s"] is None and set(data["written_null"]) >= {"wall_time_s"}


def _writes_json_itself(node: ast.Call) -> bool:
    """A call of write_atomic whose content is json.dumps(...) (anything but files.json_text)."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name != "write_atomic":
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("dumps", "dump")
               for arg in node.args[1:] for n in ast.walk(arg))


def test_no_module_writes_json_but_through_the_one_writer() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _writes_json_itself(node):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"JSON written without files.json_text (NaN or Infinity would reach the file): {found}"
