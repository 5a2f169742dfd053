"""``schema``: the records a run writes and reads back, each with its typed model: the list, one
record's JSON Schema (or its fields as a table), or a file checked against its model."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from llama4spec.cli.common import Command, out, say
from llama4spec.errors import UserError

# The modules that register a record model (``records.registry.register``), loaded by this command.
CATALOG = ["llama4spec.stats.profile", "llama4spec.sweep.sweep_records", "llama4spec.sweep.records",
           "llama4spec.breakeven.records", "llama4spec.lossless.records", "llama4spec.records.plan",
           "llama4spec.records.status", "llama4spec.records.host", "llama4spec.records.job",
           "llama4spec.records.bench", "llama4spec.records.points", "llama4spec.capacity.records"]


def entries() -> dict:
    """Every registered record, by name (``plan``, ``noise``, ...), in the order of their names."""
    from llama4spec.records.registry import ENTRIES

    for module in CATALOG:
        importlib.import_module(module)
    return dict(sorted(ENTRIES.items()))


def json_schema(entry) -> dict:
    """``entry``'s JSON Schema as published: pydantic's, with its name, version and file."""
    schema = entry.model.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": entry.schema,
            "title": f"{entry.file} ({entry.schema})", "description": entry.what, **{
                k: v for k, v in schema.items() if k not in ("title", "description")}}


def _entry(name: str):
    known = entries()
    key = name.removesuffix(".json").removeprefix("llama4spec.").split("/")[0]
    found = known.get(key) or next((e for e in known.values() if e.file.endswith(name)), None)
    if found is None:
        raise UserError(f"schema {name!r}: no such record; one of: {', '.join(known)} (llama4spec schema lists them)")
    return found


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="a record's name (plan, status, noise, ...; llama4spec schema lists them)")
    p.add_argument("file", nargs="?", type=Path, help="a file to check against the record's model")
    p.add_argument("--fields", action="store_true", help="the record's fields as a table (path, type, rule)")


def _schema(args: argparse.Namespace) -> int:
    from rich.table import Table

    from llama4spec.console import text
    from llama4spec.records import shape

    if args.name is None:
        table = Table("record", "file", "schema", "written and read by", title="records a run writes and reads back")
        for key, e in entries().items():
            table.add_row(text(key), text(e.file), text(e.schema), text(e.what))
        out.print(table)
        return 0
    entry = _entry(args.name)
    if args.file is not None:
        entry.read(args.file)  # the tool's own reader: UserError (one line) for a damaged record
        say(f"{args.file}: a valid {entry.schema} record")
        return 0
    schema = json_schema(entry)
    if args.fields:
        table = Table("field", "type", "rule", title=text(f"{entry.file} ({entry.schema})"))
        for row in shape.rows(schema):
            table.add_row(*(text(c) for c in row))
        out.print(table)
        return 0
    sys.stdout.write(json.dumps(schema, indent=2) + "\n")
    return 0


COMMANDS = [Command(
    "schema", "the records a run writes and reads back: the list, a record's JSON Schema or fields, or a "
    "file checked against its model (one line naming the field and the rule when it breaks one)",
    _arguments, _schema,
    examples=["llama4spec schema", "llama4spec schema noise --fields", "llama4spec schema noise > noise.schema.json",
              "llama4spec schema plan runs/tiny_cpu_sweep/latest/plan.json"])]
