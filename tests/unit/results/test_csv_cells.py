"""The CSV files a run leaves (sweep.csv, requests.csv) are opened in spreadsheets: a text cell that
a spreadsheet would run as a formula is written as text (a leading ``'``), numbers stay numbers."""

from __future__ import annotations

import csv
import io

import pytest

from llama4spec.files import cell, csv_text
from llama4spec.results.requests import RequestRow, to_csv


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_formula_text_is_kept_as_text(text: str) -> None:
    assert cell(text) == "'" + text


@pytest.mark.parametrize("value", ["coding", "w100 w101", "", -3, -0.5, 2.0, None])
def test_other_values_are_left_alone(value) -> None:
    assert cell(value) == value


def test_rows_as_lists_or_dicts_give_the_same_file() -> None:
    header = ["id", "category", "ttft"]
    as_lists = csv_text(header, [["a", "=cmd|' /C calc'!A0", -1.5], ["b", None, 2]])
    as_dicts = csv_text(header, [{"id": "a", "category": "=cmd|' /C calc'!A0", "ttft": -1.5, "extra": 1},
                                 {"id": "b", "ttft": 2}])
    assert as_lists == as_dicts
    rows = list(csv.reader(io.StringIO(as_lists)))
    assert rows == [header, ["a", "'=cmd|' /C calc'!A0", "-1.5"], ["b", "", "2"]]


def test_requests_csv_keeps_a_hostile_category_as_text() -> None:
    row = RequestRow.__dataclass_fields__  # the table's own columns, whatever they are
    assert "category" in row
    fields = {name: None for name in row}
    fields.update(id="r-0", ok=True, category="=1+1", accepted_per_pos=[1, 0])
    text = to_csv([(0, [RequestRow(**fields)])])
    header, line = list(csv.reader(io.StringIO(text)))
    assert line[header.index("category")] == "'=1+1" and line[header.index("run")] == "0"
