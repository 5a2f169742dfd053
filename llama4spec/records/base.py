"""What every record model shares: strict types (no text read as a number, no bool as a count),
unknown keys ignored, and ``validated``: a record read back through its model, or one line naming
the file, the field and the rule it breaks (``UserError``), never a traceback."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from llama4spec.errors import UserError
from llama4spec.files import shown

MAX_TEXT = 500  # a name, a version, a source: far below this

M = TypeVar("M", bound=BaseModel)


class Record(BaseModel):
    """A record's model: strict, finite (a float field never takes NaN or infinity), frozen."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, allow_inf_nan=False)


def _rule(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The ``description`` of the field at ``loc`` (the rule in words), where the model gives one."""
    current: Any = model
    fields = getattr(model, "model_fields", {})
    info = fields["root"] if set(fields) == {"root"} else None  # a RootModel: its own rule, unless deeper
    for part in loc:
        fields = getattr(current, "model_fields", None)
        if fields and set(fields) == {"root"} and part != "root":  # a RootModel: its rule, its item's model
            info, current = fields["root"], _inner(fields["root"].annotation)
            fields = getattr(current, "model_fields", None)
        if not isinstance(part, str) or not fields or part not in fields:
            continue  # a list index, or a union's branch name
        info = fields[part]
        current = _inner(info.annotation)
    if not loc and info is None:
        return getattr(model, "RULE", None)  # the record as a whole: a model may say what it is
    return (info.description or _described(info.annotation)) if info is not None else None


def _described(annotation: Any) -> str | None:
    """The rule an optional field's inner ``Annotated[..., Field(description=...)]`` gives, if any."""
    for meta in getattr(annotation, "__metadata__", ()):
        if getattr(meta, "description", None):
            return meta.description
    for a in getattr(annotation, "__args__", ()):
        found = _described(a)
        if found:
            return found
    return None


def _inner(annotation: Any) -> Any:
    """The model a field's annotation holds (itself, a list's item, an optional's), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for a in getattr(annotation, "__args__", ()):
        inner = _inner(a)
        if inner is not None:
            return inner
    return None


def problem(model: type[BaseModel], err: ValidationError) -> str:
    """The first problem of ``err`` in one line: the field (dotted), its value, the rule."""
    first = err.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    field = ".".join(str(p) for p in loc) or "the record"
    if first["type"] == "missing":
        return f"'{field}' is missing"
    rule = _rule(model, loc)
    if rule is None:
        return f"'{field}' is {shown(first.get('input'))}: {first['msg'][:1].lower()}{first['msg'][1:]}"
    return f"'{field}' is {shown(first.get('input'))}, not {rule}"


def validated(model: type[M], data: Any, where: str, fix: str) -> M:
    """``data`` read through ``model``; UserError ``where: 'field' is value, not rule; fix`` otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UserError(f"{where}: {problem(model, err)}; {fix}") from None
