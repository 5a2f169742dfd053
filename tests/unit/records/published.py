"""What docs/ publishes of the record models: each record's JSON Schema file and the Markdown section
of docs/machine-readable-output.md that lists the records with their fields, both generated from the
models (``records.shape``), never written by hand."""

from __future__ import annotations

import json
from typing import Any, Iterable

from llama4spec.records import shape

BEGIN = "<!-- generated from the record models (llama4spec schema); do not edit by hand -->"
END = "<!-- end of the generated section -->"


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2) + "\n"


def section(records: Iterable[tuple[str, Any, dict[str, Any]]]) -> str:
    """The generated section: for each (key, entry, JSON Schema) its heading, what writes and reads
    it, where its schema is, and its fields."""
    lines = [BEGIN, ""]
    for key, entry, schema in records:
        lines += [f"### `{entry.file}` ({entry.schema})", "", f"{entry.what[:1].upper()}{entry.what[1:]}. "
                  f"JSON Schema: [schemas/{key}.schema.json](schemas/{key}.schema.json); "
                  f"`llama4spec schema {key} FILE` checks a file against it.", "",
                  *shape.markdown(schema), ""]
    return "\n".join([*lines, END])


def replaced(page: str, generated: str) -> str:
    """``page`` with its generated section replaced by ``generated`` (appended when it has none)."""
    head, found, rest = page.partition(BEGIN)
    if not found:
        return page.rstrip("\n") + "\n\n" + generated + "\n"
    _, _, tail = rest.partition(END)
    return head + generated + tail
