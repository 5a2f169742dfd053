"""A prompt file banded by input length: each prompt's token count by the target's own tokenizer (its
``tokenizer.json``, read with ``tokenizers``, special tokens added as vLLM's benchmark counts them), and
the file of one band's prompts that a run of ``bench.input_band=LOW-HIGH`` sends (written beside its
result before it runs, ``engine.bench_flags.band_file``)."""

from __future__ import annotations

import json
from pathlib import Path

from llama4spec.config.schema import Config
from llama4spec.engine.bench_flags import band_file
from llama4spec.errors import UserError
from llama4spec.files import Expect, read_text, write_atomic

PROMPT_FILE = Expect("prompt file", "give a JSONL file of {\"prompt\": ...} lines (vLLM's custom dataset)", 256 << 20)


def tokenizer_file(cfg: Config) -> Path | None:
    """The target's ``tokenizer.json`` when it lies on this machine (None: a hub id not downloaded)."""
    for where in (cfg.target.tokenizer, cfg.target.model):
        if where and (Path(where) / "tokenizer.json").is_file():
            return Path(where) / "tokenizer.json"
    return None


def prompt_lines(path: Path) -> list[tuple[str, int]]:
    """Each line of a prompt file with a prompt, and its text (UserError naming the file when unreadable)."""
    text = read_text(path, PROMPT_FILE)
    out = []
    for line in text.splitlines():
        try:
            item = json.loads(line) if line.strip() else None
        except ValueError:
            raise UserError(f"{path}: a line is not JSON: {line[:80]}") from None
        if isinstance(item, dict) and isinstance(item.get("prompt"), str):
            out.append((line, item["prompt"]))
    return out


def token_counts(cfg: Config, path: Path) -> list[tuple[str, int]] | None:
    """(line, tokens) of each prompt of ``path``; None when the target's tokenizer is not on this machine."""
    tok = tokenizer_file(cfg)
    if tok is None:
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tok))
    lines = prompt_lines(path)
    encoded = tokenizer.encode_batch([p for _, p in lines]) if lines else []
    return [(line, len(e.ids)) for (line, _), e in zip(lines, encoded)]


def bounds(band: str) -> tuple[int, int]:
    low, high = band.split("-")
    return int(low), int(high)


def write_band(cfg: Config, result_dir: Path) -> Path | None:
    """The file of ``bench.input_band``'s prompts for a run writing into ``result_dir`` (None without a band)."""
    b = cfg.bench
    if b.input_band is None or b.dataset_name != "custom" or not b.dataset_path:
        return None
    counted = token_counts(cfg, Path(b.dataset_path))
    if counted is None:
        raise UserError(f"bench.input_band={b.input_band}: the target's tokenizer.json is not on this machine "
                        f"({cfg.target.tokenizer or cfg.target.model}), so its prompts cannot be counted")
    low, high = bounds(b.input_band)
    kept = [line for line, n in counted if low <= n <= high]
    if not kept:
        raise UserError(f"bench.input_band={b.input_band}: no prompt of {b.dataset_path} has {low} to {high} tokens")
    path = band_file(result_dir, b.input_band)
    result_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "\n".join(kept) + "\n")
    return path
