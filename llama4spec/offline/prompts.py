"""Where offline prompts come from: built-in word chains, a local JSONL file, or mt-bench."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from llama4spec.config.schema import DatasetConfig
from llama4spec.errors import UserError

MTBENCH = "philschmid/mt-bench"


@dataclass
class Prompts:
    texts: list[str]
    source: dict  # what the run record says about where they came from
    chat: bool = False  # apply the tokenizer's chat template before generating


def builtin_prompts(n: int) -> list[str]:
    """Word chains for the tiny pair; each repeats its start, so n-gram lookup has matches too."""
    prompts = []
    for i in range(n):
        start = 4 + (37 * i) % 230
        chain = [f"w{start + j}" for j in range(10)]
        prompts.append(" ".join(chain + chain[:3]))
    return prompts


def load_jsonl(path: str | Path, n: int) -> list[str]:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise UserError(f"dataset.path: cannot read '{path}': {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"dataset.path: '{path}' is not UTF-8 text; give a JSONL file") from None
    prompts: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserError(f"{path}:{number}: not valid JSON ({error.msg}); each line must be {{\"prompt\": \"...\"}}") from None
        if not isinstance(item, dict) or not isinstance(item.get("prompt"), str):
            raise UserError(f"{path}:{number}: expected an object with a string \"prompt\" field")
        prompts.append(item["prompt"])
        if len(prompts) == n:
            break
    if not prompts:
        raise UserError(f"{path}: no prompts found; add lines like {{\"prompt\": \"Hello\"}}")
    return prompts


def load_mtbench(dataset_id: str, n: int) -> list[str]:
    """First turn of each mt-bench question, fetched with huggingface-hub (the local cache offline)."""
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
    prompts = []
    for line in files[0].read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            turns = item.get("turns") or [item.get("prompt", "")]
            prompts.append(turns[0])
        if len(prompts) == n:
            break
    return prompts


def load_prompts(ds: DatasetConfig) -> Prompts:
    if ds.name == "builtin":
        return Prompts(builtin_prompts(ds.num_prompts), {"kind": "builtin", "num_prompts": ds.num_prompts}, ds.chat_template)
    if ds.name == "jsonl":
        texts = load_jsonl(ds.path, ds.num_prompts)
        return Prompts(texts, {"kind": "jsonl", "path": str(Path(ds.path).resolve()), "num_prompts": len(texts)}, ds.chat_template)
    if ds.name == "mtbench":
        dataset_id = ds.path or MTBENCH
        texts = load_mtbench(dataset_id, ds.num_prompts)
        return Prompts(texts, {"kind": "mtbench", "hub_id": dataset_id, "turn": 1, "num_prompts": len(texts)}, ds.chat_template)
    raise UserError(f"dataset.name '{ds.name}' is not known; use builtin, jsonl or mtbench")
