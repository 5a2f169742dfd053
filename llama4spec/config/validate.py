"""One validation pass over a composed config: every problem at once, in the user's words."""

from __future__ import annotations

import re
from pathlib import Path

from llama4spec.config.schema import Config
from llama4spec.tiny.paths import is_tiny_path

METHODS = ("eagle", "eagle3", "ngram")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def looks_local(model: str) -> bool:
    """A model reference is a local directory when it is spelled as a path or exists as one."""
    if model.startswith(("/", "./", "../", "~")) or model in (".", ".."):
        return True
    return Path(model).exists() or not HUB_ID.match(model)


def _check_model(key: str, model: str | None, problems: list[str]) -> None:
    if not model or is_tiny_path(model):
        return  # tiny models are built on first use
    if looks_local(model):
        path = Path(model).expanduser()
        if not path.is_dir():
            problems.append(
                f"{key}: local model directory '{model}' does not exist; "
                f"give an existing directory or a hub id such as org/name"
            )
        elif not (path / "config.json").is_file():
            problems.append(f"{key}: '{model}' has no config.json; point it at a model directory")


def validate(cfg: Config) -> list[str]:
    problems: list[str] = []
    d, p, t = cfg.draft, cfg.parallel, cfg.target
    _check_model("target.model", t.model, problems)
    if d.method is not None and d.method not in METHODS:
        problems.append(f"draft.method '{d.method}' is not supported; use one of {', '.join(METHODS)} or draft=none")
    if d.method is not None and cfg.lookahead < 1:
        problems.append(
            f"lookahead={cfg.lookahead}: a draft needs at least 1 speculative token; set lookahead>=1 or draft=none"
        )
    if d.method in ("eagle", "eagle3"):
        if not d.model:
            problems.append(f"draft.model: method {d.method} needs a draft model (hub id or local directory)")
        _check_model("draft.model", d.model, problems)
    if d.method == "ngram":
        lo, hi = d.prompt_lookup_min, d.prompt_lookup_max
        if lo is None or hi is None or lo < 1 or hi < lo:
            problems.append(
                f"draft: ngram needs 1 <= prompt_lookup_min <= prompt_lookup_max (got {lo}, {hi})"
            )
    for key, value in (("tensor_parallel_size", p.tensor_parallel_size), ("pipeline_parallel_size", p.pipeline_parallel_size), ("nnodes", p.nnodes)):
        if value < 1:
            problems.append(f"parallel.{key}={value}: must be at least 1")
    tp = p.tensor_parallel_size
    if d.method is not None and p.draft_tensor_parallel_size is not None and p.draft_tensor_parallel_size not in (1, tp):
        problems.append(
            f"parallel.draft_tensor_parallel_size={p.draft_tensor_parallel_size}: vLLM needs 1 or the "
            f"target's tensor_parallel_size ({tp})"
        )
    if tp >= 1 and t.num_attention_heads and t.num_attention_heads % tp:
        problems.append(
            f"parallel.tensor_parallel_size={tp} does not divide the target's {t.num_attention_heads} "
            f"attention heads; pick a divisor of {t.num_attention_heads}"
        )
    if d.method in ("eagle", "eagle3") and cfg.serve.enable_prefix_caching:
        problems.append(
            "serve.enable_prefix_caching=true with an EAGLE draft on Llama 4 fails at the first request "
            "(chunked local attention); set serve.enable_prefix_caching=false"
        )
    m = cfg.memory
    if m.gpu_memory_utilization is not None and not 0 < m.gpu_memory_utilization <= 1:
        problems.append(f"memory.gpu_memory_utilization={m.gpu_memory_utilization}: must be in (0, 1]")
    if m.max_model_len is not None and t.max_position_embeddings and m.max_model_len > t.max_position_embeddings:
        problems.append(
            f"memory.max_model_len={m.max_model_len} exceeds the target's {t.max_position_embeddings} positions"
        )
    if cfg.dataset.name == "jsonl" and cfg.dataset.path in (None, "???"):
        problems.append("dataset=jsonl needs a file: add dataset.path=FILE (one {\"prompt\": ...} per line)")
    elif cfg.dataset.name == "jsonl" and not Path(cfg.dataset.path).is_file():
        problems.append(f"dataset.path: JSONL file '{cfg.dataset.path}' does not exist")
    if cfg.dataset.num_prompts < 1:
        problems.append(f"dataset.num_prompts={cfg.dataset.num_prompts}: must be at least 1")
    if cfg.generation.max_tokens < 1:
        problems.append(f"generation.max_tokens={cfg.generation.max_tokens}: must be at least 1")
    return problems
