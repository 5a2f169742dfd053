"""An offline run's record: each pass's timings, figures and outputs as ``OfflineRecord`` holds
them (the run's own, and its baseline's), with the speedup between them and the run's provenance."""

from __future__ import annotations

import time

from llama4spec.config.composed import Composed
from llama4spec.offline.outcome import EngineRun
from llama4spec.offline.prompts import Prompts
from llama4spec.results.offline_record import OfflineRecord, Output, PassRecord, Stats, Timings
from llama4spec.results.provenance import model_revisions, public_config, versions


def _recorded_pass(run: EngineRun) -> PassRecord:
    """A pass's figures as the record holds them (the record's own, or its baseline's)."""
    seeds = run.seeds or [None] * len(run.token_ids)
    steps = [s.to_record() for s in run.steps] or [None] * len(run.token_ids)
    outputs = [Output(ids, text, seed, st) for ids, text, seed, st in zip(run.token_ids, run.texts, seeds, steps)]
    return PassRecord(Timings(run.engine_start_s, run.stats.wall_time_s), run.stats.output_tokens_per_s,
                      Stats(run.stats, run.categories, run.temperatures, run.requests_match_counters), outputs,
                      run.async_scheduling)


def run_record(composed: Composed, prompts: Prompts, runs: list[EngineRun], identical: bool | None,
                pinned: str | None = None) -> OfflineRecord:
    main = _recorded_pass(runs[0])
    base = _recorded_pass(runs[1]) if len(runs) > 1 else None
    speedup = None
    if base is not None and main.output_tokens_per_s and base.output_tokens_per_s:
        speedup = main.output_tokens_per_s / base.output_tokens_per_s
    return OfflineRecord(
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        versions=versions(),
        models=model_revisions(composed.cfg),  # each model's commit in the local hub cache
        overrides=composed.overrides,
        choices=composed.choices,
        config=public_config(composed.raw),
        prompts=prompts.source,
        timings=main.timings, output_tokens_per_s=main.output_tokens_per_s, stats=main.stats, outputs=main.outputs,
        baseline=base, speedup=speedup, outputs_identical=identical, async_scheduling=main.async_scheduling,
        async_pinned=pinned,
    )
