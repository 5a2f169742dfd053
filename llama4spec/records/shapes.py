"""Field shapes a record model builds from a bounded type (``Annotated[..., Field(description=...)]``)
without losing its rule in words: ``maybe`` (the value or null) and ``listed`` (a bounded list of
them). ``records.base.problem`` names a field's rule from the field's own description, so the
element's rule is carried up to the field."""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field
from pydantic.fields import FieldInfo


def rule_of(kind: Any) -> str | None:
    """The rule in words of a bounded type (its ``Field(description=...)``), if it has one."""
    return next((m.description for m in getattr(kind, "__metadata__", ()) if isinstance(m, FieldInfo)), None)


def maybe(kind: Any) -> Any:
    """``kind`` or null, its rule kept on the field: "a p-value from 0 to 1, or null"."""
    rule = rule_of(kind)
    return Annotated[Union[kind, None], Field(description=rule and f"{rule}, or null")]


def listed(kind: Any, most: int, what: str) -> Any:
    """A list of at most ``most`` of ``kind``: "a list of at most 1000 counts, each a whole number ..."."""
    rule = rule_of(kind)
    return Annotated[list[kind], Field(max_length=most, description=f"a list of at most {most} {what}"
                                                                    + (f", each {rule}" if rule else ""))]
