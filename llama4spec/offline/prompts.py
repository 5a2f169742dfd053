"""Where offline prompts come from: built-in word chains, a local JSONL file, or mt-bench; each
prompt may carry a category (the chains' own, a JSONL line's "category", mt-bench's)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from llama4spec.config.schema import DatasetConfig
from llama4spec.errors import UserError
from llama4spec.tiny.prompts import CATEGORIES as BUILTIN_CATEGORIES
from llama4spec.tiny.prompts import builtin_items, builtin_prompts, category_prompts

__all__ = ["BUILTIN_CATEGORIES", "MTBENCH", "Prompts", "builtin_items", "builtin_prompts", "load_jsonl",
           "load_prompts"]

MTBENCH = "philschmid/mt-bench"
UNCATEGORISED = "uncategorised"


@dataclass
class Prompts:
    texts: list[str]
    source: dict  # what the run record says about where they came from
    chat: bool = False  # apply the tokenizer's chat template before generating
    categories: list[str | None] = field(default_factory=list)  # one per text; empty: none known

    def by_category(self) -> dict[str, list[int]]:
        """Category -> the indices of its prompts, in first-seen order (``UNCATEGORISED`` for none)."""
        groups: dict[str, list[int]] = {}
        for i, category in enumerate(self.categories or [None] * len(self.texts)):
            groups.setdefault(category or UNCATEGORISED, []).append(i)
        return groups


def load_jsonl(path: str | Path, n: int) -> list[str]:
    return [text for text, _ in load_jsonl_items(path, n)]


def load_jsonl_items(path: str | Path, n: int, category: str | None = None) -> list[tuple[str, str | None]]:
    """Up to ``n`` (prompt, category) pairs of a JSONL file (of ``category`` only, when given)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise UserError(f"dataset.path: cannot read '{path}': {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"dataset.path: '{path}' is not UTF-8 text; give a JSONL file") from None
    items: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserError(f"{path}:{number}: not valid JSON ({error.msg}); each line must be {{\"prompt\": \"...\"}}") from None
        if not isinstance(item, dict) or not isinstance(item.get("prompt"), str):
            raise UserError(f"{path}:{number}: expected an object with a string \"prompt\" field")
        found = item.get("category")
        if found is not None and not isinstance(found, str):
            raise UserError(f"{path}:{number}: \"category\" must be a string")
        if found:
            seen.add(found)
        if category is not None and found != category:
            continue
        items.append((item["prompt"], found or None))
        if len(items) == n:
            break
    if not items and category is not None:
        raise UserError(f"{path}: no prompt of category '{category}' (categories in the file: "
                        f"{', '.join(sorted(seen)) or 'none'}); fix dataset.category")
    if not items:
        raise UserError(f"{path}: no prompts found; add lines like {{\"prompt\": \"Hello\"}}")
    return items


def mtbench_file(dataset_id: str) -> Path:
    """mt-bench's question file: ``dataset_id`` itself when it is a local file, else the JSONL of the
    hub dataset, fetched with huggingface-hub (the local cache offline)."""
    if Path(dataset_id).expanduser().is_file():
        return Path(dataset_id).expanduser()
    from huggingface_hub import snapshot_download

    from llama4spec.preflight.sources import hub_offline, hub_reachable

    offline = hub_offline() or not hub_reachable()
    try:
        local = Path(snapshot_download(
            dataset_id, repo_type="dataset", allow_patterns=["*.jsonl", "*.json"], local_files_only=offline
        ))
    except Exception as error:  # any hub or network failure: one line, with the way out
        where = "is not in the local cache and the hub cannot be reached" if offline else "could not be fetched"
        raise UserError(
            f"mt-bench ({dataset_id}) {where} ({type(error).__name__}); "
            f"connect to the Hugging Face hub once, or use dataset=jsonl dataset.path=FILE"
        ) from None
    files = sorted(local.rglob("*.jsonl"))
    if not files:
        raise UserError(f"dataset {dataset_id}: no JSONL file in the dataset repository")
    return files[0]


def load_mtbench_items(dataset_id: str, n: int, category: str | None = None) -> list[tuple[str, str | None]]:
    """First turn of each mt-bench question, with its category (of ``category`` only, when given)."""
    path = mtbench_file(dataset_id)
    items: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserError(f"{path}:{number}: not valid JSON ({error.msg})") from None
        found = item.get("category") if isinstance(item, dict) and isinstance(item.get("category"), str) else None
        if found:
            seen.add(found)
        if category is not None and found != category:
            continue
        turns = item.get("turns") or [item.get("prompt", "")]
        items.append((turns[0], found))
        if len(items) == n:
            break
    if not items and category is not None:
        raise UserError(f"mt-bench has no category '{category}' (it has {', '.join(sorted(seen)) or 'none'}); "
                        f"fix dataset.category")
    return items


def _builtin(ds: DatasetConfig) -> list[tuple[str, str | None]]:
    if ds.category is None:
        return list(builtin_items(ds.num_prompts))
    if ds.category not in BUILTIN_CATEGORIES:
        raise UserError(f"dataset.category '{ds.category}' is not a category of the built-in prompts; "
                        f"use one of {', '.join(BUILTIN_CATEGORIES)}")
    return [(text, ds.category) for text in category_prompts(ds.category, ds.num_prompts)]


def _split(items: list[tuple[str, str | None]]) -> tuple[list[str], list[str | None]]:
    return [t for t, _ in items], [c for _, c in items]


def load_prompts(ds: DatasetConfig) -> Prompts:
    """The prompts ``ds`` names (only ``ds.category``'s, when set), each with its category."""
    picked = {"category": ds.category} if ds.category is not None else {}
    if ds.name == "builtin":
        texts, cats = _split(_builtin(ds))
        return Prompts(texts, {"kind": "builtin", "num_prompts": len(texts), **picked}, ds.chat_template, cats)
    if ds.name == "jsonl":
        texts, cats = _split(load_jsonl_items(ds.path, ds.num_prompts, ds.category))
        source = {"kind": "jsonl", "path": str(Path(ds.path).resolve()), "num_prompts": len(texts), **picked}
        return Prompts(texts, source, ds.chat_template, cats)
    if ds.name == "mtbench":
        dataset_id = ds.path or MTBENCH
        texts, cats = _split(load_mtbench_items(dataset_id, ds.num_prompts, ds.category))
        source = {"kind": "mtbench", "hub_id": dataset_id, "turn": 1, "num_prompts": len(texts), **picked}
        return Prompts(texts, source, ds.chat_template, cats)
    raise UserError(f"dataset.name '{ds.name}' is not known; use builtin, jsonl or mtbench")
