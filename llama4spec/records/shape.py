"""A record's shape in rows, read from its JSON Schema (as pydantic writes it): one row a field, its
dotted path (``[]`` for a list's items, ``{}`` for a mapping's values), its type and its rule. The
docs' tables and ``llama4spec schema NAME --fields`` both come from here."""

from __future__ import annotations

from typing import Any, Iterator

Row = tuple[str, str, str]  # (path, type, rule)

_TYPES = {"string": "text", "integer": "integer", "number": "number", "boolean": "true/false", "null": "null",
          "array": "list", "object": "mapping"}


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 50:
        node, seen = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}, seen + 1
    return node


def _branches(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    node = _resolve(node, defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            return [b for sub in node[key] for b in _branches(sub, defs)]
    return [node]


def type_words(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """``node``'s type in words: ``number or null``, ``one of: sequential, back_to_back``."""
    words: list[str] = []
    for branch in _branches(node, defs):
        if "const" in branch:
            word = repr(branch["const"]) if not isinstance(branch["const"], str) else branch["const"]
        elif "enum" in branch:
            word = "one of: " + ", ".join(str(v) for v in branch["enum"])
        elif branch.get("type") == "array":
            word = f"list of {type_words(branch.get('items', {}), defs)}" if branch.get("items") else "list"
        elif "properties" in branch:
            word = "mapping"
        elif branch.get("type") == "object":
            extra = branch.get("additionalProperties")
            word = f"mapping to {type_words(extra, defs)}" if isinstance(extra, dict) and extra else "mapping"
        else:
            word = _TYPES.get(branch.get("type", ""), "any")
        if word not in words:
            words.append(word)
    return " or ".join(words)


def _rule(node: dict[str, Any], defs: dict[str, Any], required: bool) -> str:
    parts = [node["description"]] if node.get("description") else []
    bounds = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<",
              "maxLength": "characters <=", "maxItems": "items <="}
    for branch in _branches(node, defs):
        for key, word in bounds.items():
            if key in branch and not parts:
                parts.append(f"{word} {branch[key]:g}" if isinstance(branch[key], float) else f"{word} {branch[key]}")
    if not required:
        parts.append("optional" + (f" (default {_default(node['default'])})" if "default" in node else ""))
    return "; ".join(parts)


def _default(value: Any) -> str:
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value).lower() \
        if isinstance(value, bool) else str(value)


def rows(schema: dict[str, Any]) -> list[Row]:
    """Every field of ``schema`` (a model's JSON Schema), parents before children."""
    defs = schema.get("$defs", {})
    return list(_walk(schema, defs, "", True, 0))


def _walk(node: dict[str, Any], defs: dict[str, Any], path: str, required: bool, depth: int) -> Iterator[Row]:
    if depth > 12:
        return
    if path:
        yield path, type_words(node, defs), _rule(node, defs, required)
    for branch in _branches(node, defs):
        if "properties" in branch:
            need = set(branch.get("required", ()))
            for name, sub in branch["properties"].items():
                yield from _walk(sub, defs, f"{path}.{name}" if path else name, name in need, depth + 1)
        elif branch.get("type") == "array" and isinstance(branch.get("items"), dict):
            yield from _children(branch["items"], defs, f"{path}[]", depth)
        elif isinstance(branch.get("additionalProperties"), dict):
            yield from _children(branch["additionalProperties"], defs, f"{path}{{}}" if path else "{}", depth)


def _children(node: dict[str, Any], defs: dict[str, Any], path: str, depth: int) -> Iterator[Row]:
    """The fields of a list's items or a mapping's values (their own row only when they hold fields)."""
    for branch in _branches(node, defs):
        if "properties" in branch or branch.get("type") in ("array", "object"):
            yield from (r for r in _walk(branch, defs, path, True, depth + 1) if r[0] != path)


def markdown(schema: dict[str, Any]) -> list[str]:
    """``schema``'s rows as a Markdown table."""
    def cell(s: str) -> str:
        return s.replace("|", "\\|")

    lines = ["| field | type | rule |", "|---|---|---|"]
    lines += [f"| `{cell(p)}` | {cell(t)} | {cell(r)} |" for p, t, r in rows(schema)]
    return lines
