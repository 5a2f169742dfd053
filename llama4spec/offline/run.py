"""Offline runs: vLLM's ``LLM`` on the composed config, acceptance from its own counters."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from llama4spec.config.compose import Composed
from llama4spec.config.schema import Config
from llama4spec.engine.args import engine_env, llm_kwargs
from llama4spec.errors import UserError
from llama4spec.offline import render
from llama4spec.offline.prompts import Prompts, load_prompts
from llama4spec.results.acceptance import RunStats, from_offline_metrics
from llama4spec.results.provenance import model_revisions, public_config, versions


@dataclass
class EngineRun:
    """One engine's pass over the prompts."""

    label: str
    stats: RunStats
    token_ids: list[list[int]]
    texts: list[str]
    engine_start_s: float


def without_draft(cfg: Config) -> Config:
    return dataclasses.replace(cfg, draft=dataclasses.replace(cfg.draft, name="none", method=None, model=None))


def engine_error(error: BaseException) -> str:
    """What vLLM rejected, in one line: the field and pydantic's message for a validation error
    (not pydantic's closing "For further information visit ..."), else the error's last line."""
    items = None
    if callable(getattr(error, "errors", None)):
        try:
            items = error.errors()
        except Exception:  # noqa: BLE001  (not pydantic's: fall back to the text)
            items = None
    if items:
        title = getattr(error, "title", type(error).__name__)
        parts = []
        for item in items[:3]:
            where = ".".join(str(x) for x in item.get("loc", ())) or title
            parts.append(f"{where}: {item.get('msg', '').strip()}")
        return "; ".join(parts)
    lines = [line.strip() for line in str(error).splitlines()
             if line.strip() and not line.strip().startswith("For further information")]
    return f"{type(error).__name__}: {lines[-1] if lines else ''}".rstrip(": ")


def _progress(label: str):
    """A Rich progress bar that vLLM drives through its ``use_tqdm`` hook."""
    import functools
    import warnings

    from tqdm import TqdmExperimentalWarning
    from tqdm.rich import tqdm as rich_tqdm

    warnings.filterwarnings("ignore", category=TqdmExperimentalWarning)

    def make(*args: Any, **kwargs: Any):
        kwargs["desc"] = label
        return rich_tqdm(*args, **kwargs)

    return functools.wraps(rich_tqdm)(make)


def run_engine(
    cfg: Config, prompts: Prompts, label: str, show_progress: bool = True, console: Console | None = None
) -> EngineRun:
    """Start one engine, generate, read the counters, shut the engine down."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")  # set it to INFO to see the engine's log
    for key, value in engine_env(cfg).items():
        os.environ[key] = value
    from vllm import LLM, SamplingParams

    kwargs = llm_kwargs(cfg)
    start = time.perf_counter()
    try:
        with (console or Console(stderr=True)).status(f"starting the vLLM engine ({label})"):
            llm = LLM(**kwargs)
    except Exception as error:  # engine start failures become one readable line
        raise UserError(f"vLLM could not start the {label} engine: {engine_error(error)}") from None
    engine_start_s = time.perf_counter() - start
    try:
        texts = prompts.texts
        if prompts.chat:
            tok = llm.get_tokenizer()
            texts = [
                tok.apply_chat_template([{"role": "user", "content": t}], tokenize=False, add_generation_prompt=True)
                for t in texts
            ]
        g = cfg.generation
        params = SamplingParams(
            max_tokens=g.max_tokens, temperature=g.temperature, ignore_eos=g.ignore_eos, seed=g.seed
        )
        # A short warm-up keeps first-call costs out of the timing; counters are taken as deltas.
        llm.generate(texts[:1], SamplingParams(max_tokens=4, temperature=0), use_tqdm=False)
        before = from_offline_metrics(llm.get_metrics())
        start = time.perf_counter()
        outputs = llm.generate(texts, params, use_tqdm=_progress(label) if show_progress else False)
        wall = time.perf_counter() - start
        counters = from_offline_metrics(llm.get_metrics()) - before
    finally:
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
    token_ids = [list(o.outputs[0].token_ids) for o in outputs]
    speculative = cfg.draft.method is not None
    stats = RunStats(
        total_num_output_tokens=sum(len(t) for t in token_ids),
        counters=counters if speculative else None,
        k=cfg.lookahead if speculative else None,
        wall_time_s=wall,
        scheduled=bool(cfg.draft.lookahead_schedule),
    )
    return EngineRun(label, stats, token_ids, [o.outputs[0].text for o in outputs], engine_start_s)


def first_difference(a: list[list[int]], b: list[list[int]]) -> tuple[int, int] | None:
    """(prompt index, token position) of the first place two runs' outputs differ, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            pos = next((j for j, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            return i, pos
    return None


def _run_record(composed: Composed, prompts: Prompts, runs: list[EngineRun], identical: bool | None) -> dict:
    main = runs[0]
    record: dict[str, Any] = {
        "kind": "offline",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": versions(),
        "models": model_revisions(composed.cfg),  # each model's commit in the local hub cache
        "overrides": composed.overrides,
        "choices": composed.choices,
        "config": public_config(composed.raw),
        "prompts": prompts.source,
        "timings": {"engine_start_s": main.engine_start_s, "generate_s": main.stats.wall_time_s},
        "output_tokens_per_s": main.stats.output_tokens_per_s,
        "stats": main.stats.to_record(),
        "outputs": [{"token_ids": ids, "text": text} for ids, text in zip(main.token_ids, main.texts)],
    }
    if len(runs) > 1:
        base = runs[1]
        record["baseline"] = {
            "timings": {"engine_start_s": base.engine_start_s, "generate_s": base.stats.wall_time_s},
            "output_tokens_per_s": base.stats.output_tokens_per_s,
            "stats": base.stats.to_record(),
            "outputs": [{"token_ids": ids, "text": text} for ids, text in zip(base.token_ids, base.texts)],
        }
        record["speedup"] = (
            main.stats.output_tokens_per_s / base.stats.output_tokens_per_s
            if main.stats.output_tokens_per_s and base.stats.output_tokens_per_s
            else None
        )
        record["outputs_identical"] = identical
    return record


def run_offline(composed: Composed, json_path: Path | None = None, console: Console | None = None) -> dict | None:
    """Run the offline job (the pre-flight checks have run: this starts engines); returns the
    record it wrote to ``json_path``, if any."""
    console = console or Console()
    cfg = composed.cfg
    prompts = load_prompts(cfg.dataset)  # bad input fails before any engine starts
    speculative = cfg.draft.method is not None
    label = f"{cfg.draft.name} k={cfg.lookahead}" if speculative else "no draft"
    console.print(
        f"[bold]offline[/bold] target={cfg.target.name} draft={cfg.draft.name}"
        + (f" lookahead={cfg.lookahead}" if speculative else "")
        + f" prompts={len(prompts.texts)} ({prompts.source['kind']}) max_tokens={cfg.generation.max_tokens}",
        highlight=False,
    )
    runs = [run_engine(cfg, prompts, label, console=console)]
    if cfg.offline.baseline and speculative:
        runs.append(run_engine(without_draft(cfg), prompts, "no draft", console=console))

    identical = None
    render.offline_stats(console, runs[0].stats, runs[0].label)
    if len(runs) > 1:
        render.offline_comparison(console, runs[0].stats, runs[1].stats, runs[0].label)
        if cfg.generation.temperature == 0:
            diff = first_difference(runs[0].token_ids, runs[1].token_ids)
            identical = diff is None
            render.greedy_check(console, diff, runs[0].token_ids, runs[1].token_ids)
    if json_path is None:
        return None
    record = _run_record(composed, prompts, runs, identical)
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(record, indent=2) + "\n")
    console.print(f"run record: [bold]{escape(str(json_path))}[/bold]")
    return record
