"""The published JSON Schemas (docs/schemas/) and the records' tables in docs/machine-readable-output.md
are what the models generate: a model changed without them fails here.
``LLAMA4SPEC_UPDATE_SCHEMAS=1 pytest tests/unit/records/test_published_schemas.py`` writes them."""

from __future__ import annotations

import json
import os

from llama4spec.cli.schema import entries, json_schema
from llama4spec.records import shape
from tests.unit.records import published
from tests.helpers import REPO

DOCS = REPO / "docs"
PAGE = DOCS / "machine-readable-output.md"
UPDATE = os.environ.get("LLAMA4SPEC_UPDATE_SCHEMAS") == "1"


def _generated() -> tuple[dict[str, str], str]:
    records = [(key, e, json_schema(e)) for key, e in entries().items()]
    files = {f"{key}.schema.json": published.schema_text(s) for key, _, s in records}
    return files, published.section(records)


def test_the_published_schemas_are_the_models() -> None:
    files, _ = _generated()
    folder = DOCS / "schemas"
    if UPDATE:
        folder.mkdir(exist_ok=True)
        for old in folder.glob("*.schema.json"):
            old.unlink()
        for name, text in files.items():
            (folder / name).write_text(text)
    assert sorted(p.name for p in folder.glob("*.schema.json")) == sorted(files)
    for name, text in files.items():
        assert (folder / name).read_text() == text, f"docs/schemas/{name} differs from its model"
        json.loads(text)


def test_the_records_tables_in_the_docs_are_generated_from_the_models() -> None:
    _, section = _generated()
    page = PAGE.read_text()
    if UPDATE:
        PAGE.write_text(page := published.replaced(page, section))
    assert section in page, "docs/machine-readable-output.md: its records section is not the models' (see this test's docstring)"


def test_every_field_of_a_model_has_a_row() -> None:
    for key, entry in entries().items():
        listed = {p.split(".")[0].split("[")[0].split("{")[0] for p, _, _ in shape.rows(json_schema(entry))}
        assert {f.alias or n for n, f in entry.model.model_fields.items()} - {"root"} <= listed, key
