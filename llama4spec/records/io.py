"""A record read back through its model, and a record's data checked through its model before it is
written: each a path, the model, and ``Expect`` (the record's noun, size cap and fix); every problem
one line naming the file, the field and the rule (``records.base.validated``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from llama4spec.errors import UserError
from llama4spec.files import Expect, json_or_none, json_text, plain, write_json
from llama4spec.records.base import M, validated

WRITTEN = "the tool computed a value outside its record's bounds; nothing was written"


def read_model(model: type[M], path: Path, expect: Expect) -> M:
    """The record at ``path`` through ``model``; UserError (one line) when it is absent, unreadable,
    or a field breaks its rule."""
    data, why = json_or_none(Path(path), expect)
    if why is not None:
        raise UserError(why)
    where = plain(str(path))
    if data is None:
        raise UserError(f"{where}: no such file; {expect.fix}")
    return validated(model, data, where, expect.fix)


def checked(model: type[M], path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as it is, once validated through ``model`` as it will be read back (its JSON text:
    tuples are lists, a NaN is null); UserError, one line, when a value breaks a rule: the writer then
    writes nothing."""
    validated(model, json.loads(json_text(data)), plain(str(path)), WRITTEN)
    return data


def write_checked(model: type[M], path: Path, data: dict[str, Any]) -> None:
    """``data`` validated through ``model``, then written as it is (the bytes ``write_json`` wrote before)."""
    write_json(path, checked(model, path, data))


def model_or_problem(read: Callable[[Path], M], path: Path) -> tuple[M | None, str | None]:
    """(``read(path)``, None); (None, None) when there is no file at ``path``; (None, the one-line
    problem) when ``read`` refuses it (``read``: a record's own reader, raising UserError)."""
    if not os.path.lexists(path):
        return None, None
    try:
        return read(Path(path)), None
    except UserError as err:
        return None, str(err)
