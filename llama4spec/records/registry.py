"""The records the tool writes and reads back, each registered once with its model: the file's name,
the model (``records.base.Record``), the schema's name and version, what writes and what reads it, and
``read``: the reader the tool itself uses (a path to the validated model, or ``UserError`` in one
line). The published JSON Schemas (``llama4spec schema``, docs/schemas/) and the shape tables in
docs/machine-readable-output.md are generated from this registry; the corruption test walks it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel


@dataclass(frozen=True)
class Entry:
    file: str  # the record's file name in a run directory ("plan.json"), or its pattern ("<step>/record.json")
    model: type[BaseModel]
    schema: str  # "llama4spec.plan/1": the number changes only when a field is removed or changes meaning
    what: str  # one line: who writes it, who reads it back
    read: Callable[[Path], Any]  # the tool's own reader: the validated model, or UserError (one line)

    @property
    def key(self) -> str:
        return self.schema.split("/")[0].removeprefix("llama4spec.")


ENTRIES: dict[str, Entry] = {}


def register(entry: Entry) -> Entry:
    """Add ``entry`` (once per schema name); the feature that owns a record registers it beside its model."""
    known = ENTRIES.get(entry.key)
    if known is not None and known != entry:
        raise ValueError(f"two records registered as {entry.key}: {known.file} and {entry.file}")
    ENTRIES[entry.key] = entry
    return entry
