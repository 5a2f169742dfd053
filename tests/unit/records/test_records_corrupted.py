"""Every record the tool reads back, corrupted one field at a time and read back by the tool's own
reader (the registry's ``read``): NaN, +-1e308, a negative, the wrong type, the field missing, a 5 MB
string, Rich markup. Each either reads (the value is one the field's rule allows) or is ONE line
naming the file and the field (or the file as too large): never a traceback, never another error."""

from __future__ import annotations

import importlib
import json
import pkgutil
import typing
from pathlib import Path
from typing import Any, Iterator

import pytest
from pydantic import BaseModel

import tests.unit.records as here
from llama4spec.cli.schema import entries
from llama4spec.errors import UserError

EXAMPLES: dict[str, Any] = {}
for _info in pkgutil.iter_modules(here.__path__):
    if _info.name.startswith("examples_"):
        EXAMPLES.update(importlib.import_module(f"tests.unit.records.{_info.name}").EXAMPLES)

BIG = "x" * (5 << 20)
CORRUPTIONS: dict[str, Any] = {"nan": float("nan"), "huge": 1e308, "-huge": -1e308, "negative": -5,
                               "text": "x", "bool": True, "object": {"a": 1}, "big": BIG, "markup": "[/x]"}
MISSING = object()


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The record models inside an annotation (through Optional, Union, Annotated, list, dict)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models(arg)


def fields(model: type[BaseModel], data: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every modelled field present in ``data`` (a list's first item, a mapping's first value)."""
    if getattr(model, "model_fields", {}).keys() == {"root"}:  # a list or a mapping at the top
        if isinstance(data, dict) and data and not list(_models(model.model_fields["root"].annotation)):
            yield from ((*path, key) for key in list(data)[:3])  # a mapping of plain values: its first keys
        else:
            yield from _inside(model.model_fields["root"].annotation, data, path)
        return
    if not isinstance(data, dict):
        return
    for name, info in model.model_fields.items():
        if name not in data:
            continue
        yield (*path, name)
        yield from _inside(info.annotation, data[name], (*path, name))


def _inside(annotation: Any, value: Any, path: tuple) -> Iterator[tuple]:
    models = list(_models(annotation))
    if isinstance(value, dict) and models:
        inner = [m for m in models if m.model_fields.keys() & value.keys()]
        if inner:
            yield from fields(inner[0], value, path)
            return
        if value:  # a mapping of models: its first value
            first = next(iter(value))
            yield (*path, first)
            yield from fields(models[0], value[first], (*path, first))
    elif isinstance(value, list) and value and models:
        yield (*path, 0)
        yield from _inside(annotation, value[0], (*path, 0)) if not isinstance(value[0], dict) else \
            fields(next((m for m in models if m.model_fields.keys() & value[0].keys()), models[0]), value[0], (*path, 0))


def _set(data: Any, path: tuple, value: Any) -> Any:
    data = json.loads(json.dumps(data))
    node = data
    for part in path[:-1]:
        node = node[part]
    if value is MISSING:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


class _Examples(dict):
    """Each record's example, written the first time a test asks for it (a worker writes only its own)."""

    def __init__(self, factory) -> None:
        super().__init__()
        self.factory = factory

    def __missing__(self, key: str) -> Path:
        self[key] = EXAMPLES[key](self.factory.mktemp(key))
        return self[key]


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> dict[str, Path]:
    return _Examples(tmp_path_factory)


def test_every_registered_record_has_an_example() -> None:
    assert set(entries()) <= set(EXAMPLES), f"records without an example: {set(entries()) - set(EXAMPLES)}"


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_the_example_reads_back(key, examples) -> None:
    entries()[key].read(examples[key])


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_every_field_corrupted_is_one_line_naming_file_and_field(key, examples, tmp_path) -> None:
    entry, source = entries()[key], examples[key]
    data = json.loads(source.read_text())
    paths = list(fields(entry.model, data))
    assert len(paths) >= min(3, len(data)), f"{key}: the walk found {len(paths)} fields of {entry.model.__name__}"
    bad = []
    for path in paths:
        for name, value in [*CORRUPTIONS.items(), ("missing", MISSING)]:
            target = tmp_path / source.name
            target.write_text(json.dumps(_set(data, path, value)))
            try:
                entry.read(target)
            except UserError as err:
                said = str(err)
                named = str(path[-1]) in said or "MiB" in said or "too large" in said or "bytes" in said
                if "\n" in said or str(target) not in said or not named:
                    bad.append(f"{'.'.join(map(str, path))} {name}: {said[:300]}")
            except Exception as err:  # noqa: BLE001 - the point: no other error
                bad.append(f"{'.'.join(map(str, path))} {name}: {type(err).__name__}: {str(err)[:200]}")
    assert not bad, f"{key}: {len(bad)} of {len(paths) * (len(CORRUPTIONS) + 1)} corruptions:\n" + "\n".join(bad[:30])
