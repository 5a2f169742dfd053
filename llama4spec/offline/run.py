"""Offline runs: vLLM's ``LLM`` on the composed config, acceptance from its own counters; the
engine's noise kept out of the terminal, each request's temperature and seed."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama4spec.config import methods
from llama4spec.config.composed import Composed
from llama4spec.config.schema import Config
from llama4spec.engine.args import engine_env, llm_kwargs
from llama4spec.errors import UserError
from llama4spec.offline.outcome import EngineRun, Outcome, Reporter
from llama4spec.offline.prompts import Prompts, load_prompts
from llama4spec.offline.record import run_record
from llama4spec.offline.stats import category_stats, exact_rates, first_difference
from llama4spec.results.acceptance import (AcceptanceCounters, RequestSteps, RunStats, from_offline_metrics, total,
                                           with_drafted)
from llama4spec.results.offline_record import CategoryRun, OfflineRecord, TemperatureRun


def without_draft(cfg: Config) -> Config:
    return dataclasses.replace(cfg, draft=dataclasses.replace(cfg.draft, name="none", method=None, model=None))


def compared(cfg: Config) -> tuple[Config, Config, str | None]:
    """The two sides of ``offline.baseline=true`` (the draft's, then no draft's), with async scheduling
    pinned off on both where the draft's method makes vLLM turn it off (unless serve.async_scheduling
    is set): the note saying so, or None."""
    base = without_draft(cfg)
    pin = methods.pinned_async_scheduling([cfg.draft.method, None])
    if cfg.serve.async_scheduling is not None or pin is None:
        return cfg, base, None
    pinned = [dataclasses.replace(c, serve=dataclasses.replace(c.serve, async_scheduling=pin)) for c in (cfg, base)]
    note = (f"async scheduling pinned off on both sides: vLLM 0.32 turns it off for {methods.label(cfg.draft.method)} "
            "(set serve.async_scheduling to choose)")
    return pinned[0], pinned[1], note


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


# What the engine prints besides vLLM's own log (whose level VLLM_LOGGING_LEVEL sets): Python
# warnings from torch, transformers, triton and vLLM itself, torch's C++ warnings (NUMA binding),
# notices printed before vLLM's logging is set up ("Triton is installed, but ..."), loading bars.
NOISY_WARNINGS = (FutureWarning, UserWarning, DeprecationWarning)
NOISY_MODULES = r"(torch|transformers|triton|vllm|huggingface_hub)(\.|$)"


@contextlib.contextmanager
def engine_noise(verbosity: int) -> Any:
    """Keep the engine's noise out of the terminal unless ``verbosity`` > 0 (-v): Python warnings
    from the noisy modules are ignored in this process, and while the engine starts stderr (fd 2)
    points to a log file, which the engine's processes inherit for their whole life. Yields that
    file (None with -v); the caller removes it after a clean run and names it after a failure."""
    if verbosity > 0:
        yield None
        return
    fd, name = tempfile.mkstemp(prefix="llama4spec-engine-", suffix=".log")
    os.close(fd)
    with warnings.catch_warnings():
        for category in NOISY_WARNINGS:
            warnings.filterwarnings("ignore", category=category, module=NOISY_MODULES)
        yield Path(name)


@contextlib.contextmanager
def stderr_to(path: Path | None) -> Any:
    """Point this process's stderr (fd 2, so the processes started meanwhile too) at ``path``."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _log_tail(path: Path, lines: int = 15) -> list[str]:
    from collections import deque

    try:
        with open(path, errors="replace") as f:
            return [line.rstrip() for line in deque(f, maxlen=lines)]
    except OSError:
        return []


def run_engine(cfg: Config, prompts: Prompts, label: str, reporter: Reporter, verbosity: int = 0) -> EngineRun:
    """Start one engine, generate, read the counters, shut the engine down. ``verbosity``: 0 (and
    -1, -q) the engine's noise in a log file shown only after a failure, 1 (-v) the engine's INFO
    log and every warning."""
    with engine_noise(verbosity) as engine_log:
        try:
            run = _run_engine(cfg, prompts, label, reporter, verbosity, engine_log)
        except Exception:
            if engine_log is not None:  # the engine's own words on what went wrong
                reporter.engine_failed(engine_log, _log_tail(engine_log))
            raise
        except BaseException:
            if engine_log is not None:
                engine_log.unlink(missing_ok=True)
            raise
    if engine_log is not None:
        engine_log.unlink(missing_ok=True)
    return run


def _run_engine(cfg: Config, prompts: Prompts, label: str, reporter: Reporter, verbosity: int,
                engine_log: Path | None) -> EngineRun:
    llm, engine_start_s, resolved = _start_engine(cfg, label, reporter, verbosity, engine_log)
    from vllm import SamplingParams  # imported with the engine

    try:
        texts = prompts.texts
        if prompts.chat:
            tok = llm.get_tokenizer()
            texts = [
                tok.apply_chat_template([{"role": "user", "content": t}], tokenize=False, add_generation_prompt=True)
                for t in texts
            ]
        g = cfg.generation
        # A short warm-up keeps first-call costs out of the timing; counters are taken as deltas.
        llm.generate(texts[:1], SamplingParams(max_tokens=4, temperature=0), use_tqdm=False)
        requests = batch_requests(cfg, len(texts))
        # offline.by_category: each category is a batch of its own, its counters the deltas around it
        groups = prompts.by_category() if cfg.offline.by_category else {"": list(range(len(requests)))}
        outputs: list[Any] = [None] * len(requests)
        parts: list[tuple[str, list[int], AcceptanceCounters, float]] = []
        for category, indices in groups.items():
            before = from_offline_metrics(llm.get_metrics())
            start = time.perf_counter()
            params = [SamplingParams(max_tokens=g.max_tokens, temperature=requests[i].temperature,
                                     ignore_eos=g.ignore_eos, seed=requests[i].seed) for i in indices]
            done = llm.generate([texts[requests[i].prompt] for i in indices], params,
                                use_tqdm=reporter.progress(label, category))
            wall = time.perf_counter() - start
            parts.append((category, indices, from_offline_metrics(llm.get_metrics()) - before, wall))
            for i, output in zip(indices, done):
                outputs[i] = output
    finally:
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
    return _engine_run(cfg, label, requests, outputs, parts, engine_start_s, resolved)


def _start_engine(cfg: Config, label: str, reporter: Reporter, verbosity: int,
                  engine_log: Path | None) -> tuple[Any, float, Any]:
    """Start one engine (its environment set first): the engine, its start-up time in seconds and
    async scheduling as the engine resolved it."""
    # the engine's log: INFO with -v, else errors only, into the engine log with the rest (set by
    # the user, VLLM_LOGGING_LEVEL and VLLM_LOGGING_STREAM win)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if verbosity > 0 else "ERROR")
    if engine_log is not None:
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    for key, value in engine_env(cfg).items():
        os.environ[key] = value
    start = time.perf_counter()
    try:
        with reporter.starting(label), stderr_to(engine_log):  # the engine's processes start here and inherit it
            from vllm import LLM

            llm = LLM(**llm_kwargs(cfg))
    except Exception as error:  # engine start failures become one readable line
        raise UserError(f"vLLM could not start the {label} engine: {engine_error(error)}") from None
    engine_start_s = time.perf_counter() - start
    # async scheduling as the engine resolved it (vLLM decides per method when the config leaves it open)
    scheduler = getattr(getattr(llm.llm_engine, "vllm_config", None), "scheduler_config", None)
    return llm, engine_start_s, getattr(scheduler, "async_scheduling", None)


def _engine_run(cfg: Config, label: str, requests: list[Request], outputs: list[Any],
                parts: list[tuple[str, list[int], AcceptanceCounters, float]], engine_start_s: float,
                resolved: Any) -> EngineRun:
    """The pass's figures from its outputs and each batch's counter deltas (``parts``)."""
    token_ids = [list(o.outputs[0].token_ids) for o in outputs]
    speculative = cfg.draft.method is not None

    def stats_of(indices: list[int], counters: AcceptanceCounters, wall: float) -> RunStats:
        return RunStats(
            total_num_output_tokens=sum(len(token_ids[i]) for i in indices),
            counters=counters if speculative else None,
            k=cfg.lookahead if speculative else None,
            wall_time_s=wall,
            scheduled=bool(cfg.draft.lookahead_schedule),
        )

    steps = [RequestSteps.from_vllm(getattr(o.outputs[0], "spec_decode_metrics", None)) for o in outputs]
    counted = total(c for _, _, c, _ in parts)
    # the steps that drafted each position, from the same requests' per-step arrays
    parts = [(name, idx, with_drafted(c, [steps[i] for i in idx]), w) for name, idx, c, w in parts]
    stats = stats_of(list(range(len(requests))), with_drafted(counted, steps), sum(w for *_, w in parts))
    categories = [CategoryRun(name, len(idx), stats_of(idx, c, w)) for name, idx, c, w in parts] \
        if cfg.offline.by_category else []
    run = EngineRun(label, stats, token_ids, [o.outputs[0].text for o in outputs], engine_start_s, categories,
                    seeds=[r.seed for r in requests], steps=steps if speculative else [],
                    async_scheduling=resolved if isinstance(resolved, bool) else None)
    if cfg.offline.temperatures and speculative:
        run.temperatures = by_temperature(cfg, requests, steps, token_ids)
        run.requests_match_counters = total(r.counters() for r in steps) == counted
    return run


@dataclass(frozen=True)
class Request:
    """One request of an offline batch: which prompt, at which temperature, with which seed."""

    prompt: int
    temperature: float
    seed: int


def request_seed(seed: int, index: int) -> int:
    """The seed of request ``index`` of a batch whose ``generation.seed`` is ``seed``: one of its own,
    so that requests sample independently (the same seed on the same prompt repeats the same draws,
    and a test of distributions over such samples counts one sample many times)."""
    return seed + index


def batch_requests(cfg: Config, prompts: int) -> list[Request]:
    """The batch: every prompt at ``generation.temperature``, or (``offline.temperatures``) every
    prompt at each temperature, each request with a seed of its own (``request_seed``: from
    ``generation.seed`` and its index in the batch), so the samplers draw from per-request generators."""
    g = cfg.generation
    temperatures = cfg.offline.temperatures or [g.temperature]
    pairs = [(t, j) for t in temperatures for j in range(prompts)]
    return [Request(j, float(t), request_seed(g.seed, n)) for n, (t, j) in enumerate(pairs)]


def by_temperature(cfg: Config, requests: list[Request], steps: list[RequestSteps],
                   token_ids: list[list[int]]) -> list[TemperatureRun]:
    """Each temperature's requests, with the sum of their own counters (vLLM's per-request ones)."""
    out = []
    for t in cfg.offline.temperatures:
        mine = [i for i, r in enumerate(requests) if r.temperature == float(t)]
        counters = total(steps[i].counters() for i in mine)
        stats = RunStats(sum(len(token_ids[i]) for i in mine), counters, cfg.lookahead,
                         scheduled=bool(cfg.draft.lookahead_schedule))
        out.append(TemperatureRun(float(t), stats, [requests[i].seed for i in mine], [steps[i] for i in mine],
                                  exact_rates(cfg, float(t))))
    return out


def run_offline(composed: Composed, reporter: Reporter, json_path: Path | None = None,
                verbosity: int = 0) -> OfflineRecord | None:
    """Run the offline job (the pre-flight checks have run: this starts engines), telling
    ``reporter`` what it does; returns the record it wrote to ``json_path``, if any. ``verbosity``:
    1 (-v) the engine's log and warnings in the terminal, else in a log file."""
    cfg = composed.cfg
    prompts = load_prompts(cfg.dataset)  # bad input fails before any engine starts
    speculative = cfg.draft.method is not None
    label = f"{cfg.draft.name} k={cfg.lookahead}" if speculative else "no draft"
    reporter.header(cfg, prompts)
    note = None
    if cfg.offline.baseline and speculative:
        first, base, note = compared(cfg)
        runs = [run_engine(first, prompts, label, reporter, verbosity),
                run_engine(base, prompts, "no draft", reporter, verbosity)]
    else:
        runs = [run_engine(cfg, prompts, label, reporter, verbosity)]

    outcome = Outcome(runs, category_stats(cfg, runs[0], runs[1] if len(runs) > 1 else None), pinned=note)
    if len(runs) > 1 and all(r.temperature == 0 for r in batch_requests(cfg, 1)):
        outcome.difference = first_difference(runs[0].token_ids, runs[1].token_ids)
        outcome.identical = outcome.difference is None
    reporter.finished(outcome)
    if json_path is None:
        return None
    record = run_record(composed, prompts, runs, outcome.identical, outcome.pinned)
    json_path = Path(json_path)
    record.write(json_path)
    reporter.recorded(json_path)
    return record
