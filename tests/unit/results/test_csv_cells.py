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
    assert cell(text).startswith("'") and cell(text).replace("'", "") == text


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


@pytest.mark.parametrize("text", ["x\r=cmd|' /C calc'!A0", "x\n@SUM(A1)", "x\r\n+1", "ok\r-2"])
def test_a_formula_after_a_line_break_is_kept_as_text(text: str) -> None:
    written = csv_text(["c"], [[text]])
    assert written.endswith("\r\n") and written.count("\r\n") >= 2
    body = written[len("c\r\n"):-2]
    assert body.startswith('"') and body.endswith('"')  # quoted: the break stays inside the cell
    for line in body.strip('"').replace("\r\n", "\n").replace("\r", "\n").split("\n")[1:]:
        assert line.startswith("'"), (text, written)
    assert next(csv.reader(io.StringIO(written[len("c\r\n"):], newline="")))[0].replace("'", "") == text.replace("'", "")


def test_rows_end_with_crlf_as_rfc_4180_says() -> None:
    written = csv_text(["a", "b"], [["x", 1], ["y", 2]])
    assert written == "a,b\r\nx,1\r\ny,2\r\n"
