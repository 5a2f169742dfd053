"""The offline record: one typed object for one ``llama4spec offline`` run (or runbook ``offline``
step), written as ``--json PATH`` or the step's ``record.json``.

A run is one engine's pass over the prompts; with ``offline.baseline=true`` the same prompts go
through a second engine without a draft, whose figures the record holds under ``baseline``, with
the speedup and, for greedy sampling, whether both gave the same tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.results.acceptance import RequestSteps, RunStats

KIND = "offline"


@dataclass
class CategoryRun:
    """One category's batch (``offline.by_category``): its counters are the deltas around it."""

    category: str
    prompts: int
    stats: RunStats

    def to_dict(self) -> dict[str, Any]:
        """Its entry of ``stats.by_category``: the acceptance record (``AcceptanceCounters.to_record``'s
        shape, nothing without a draft), then its prompts, output tokens and generation time."""
        acceptance = self.stats.counters.to_record(self.stats.k) if self.stats.counters else {}
        return {**acceptance, "num_prompts": self.prompts,
                "total_num_output_tokens": self.stats.total_num_output_tokens, "generate_s": self.stats.wall_time_s}


@dataclass
class TemperatureRun:
    """One temperature's share of a batch (``offline.temperatures``): its requests' own counters
    (vLLM's per-request ones, summed) and each request's steps with its seed."""

    temperature: float
    stats: RunStats
    seeds: list[int]
    requests: list[RequestSteps]
    expected: list[float] | None = None  # the exact per-position rates, for a pair that has them (the spread tiny pair)

    def to_dict(self) -> dict[str, Any]:
        acceptance = self.stats.counters.to_record(self.stats.k) if self.stats.counters else {}
        exact = {"expected_rate_per_position": self.expected} if self.expected is not None else {}
        return {"temperature": self.temperature, **acceptance, **exact, "num_requests": len(self.seeds),
                "total_num_output_tokens": self.stats.total_num_output_tokens,
                "requests": [{"seed": seed, **r.to_record()} for seed, r in zip(self.seeds, self.requests)]}


@dataclass
class Timings:
    engine_start_s: float
    generate_s: float | None  # the prompts' generation (all categories), warm-up excluded


@dataclass
class Stats:
    """A pass's ``stats``: its output tokens and acceptance, then each category's (``by_category``)."""

    total: RunStats
    by_category: list[CategoryRun] = field(default_factory=list)  # offline.by_category only
    by_temperature: list[TemperatureRun] = field(default_factory=list)  # offline.temperatures only
    # offline.temperatures: the per-request counters' sums equal the engine's counter deltas
    requests_match_counters: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        data = self.total.to_record()
        if self.by_category:
            data["by_category"] = {c.category: c.to_dict() for c in self.by_category}
        if self.by_temperature:
            data["by_temperature"] = [t.to_dict() for t in self.by_temperature]
            data["requests_match_counters"] = self.requests_match_counters
        return data


@dataclass
class Output:
    token_ids: list[int]
    text: str
    seed: int | None = None  # the request's sampling seed
    steps: dict[str, list[int]] | None = None  # its verify steps (``RequestSteps.to_record``), with a draft


@dataclass
class PassRecord:
    """One engine's pass as the record holds it: the record's own (its top-level keys) and, with
    ``offline.baseline=true``, the same prompts without a draft (its ``baseline``)."""

    timings: Timings
    output_tokens_per_s: float | None
    stats: Stats
    outputs: list[Output]
    async_scheduling: bool | None = None  # as the engine resolved it (None: not read)

    def to_dict(self) -> dict[str, Any]:
        return {
            "timings": {"engine_start_s": self.timings.engine_start_s, "generate_s": self.timings.generate_s},
            "async_scheduling": self.async_scheduling,
            "output_tokens_per_s": self.output_tokens_per_s,
            "stats": self.stats.to_dict(),
            "outputs": [{"token_ids": o.token_ids, "text": o.text, "seed": o.seed,
                         **({"spec_steps": o.steps} if o.steps is not None else {})} for o in self.outputs],
        }


@dataclass
class OfflineRecord:
    """What one offline run produced: provenance, the run's figures and outputs, and its baseline's."""

    created: str  # local time, ``%Y-%m-%dT%H:%M:%S%z``
    versions: dict[str, Any]  # provenance.versions()
    models: dict[str, Any]  # each model's commit in the local hub cache (provenance.model_revisions)
    overrides: list[str]
    choices: dict[str, Any]
    config: dict[str, Any]  # the composed config, redacted (provenance.public_config)
    prompts: dict[str, Any]  # where the prompts came from (Prompts.source)
    timings: Timings
    output_tokens_per_s: float | None
    stats: Stats
    outputs: list[Output]
    baseline: PassRecord | None = None  # offline.baseline=true with a draft
    speedup: float | None = None  # with a baseline: output tokens/s over the baseline's
    outputs_identical: bool | None = None  # with a baseline: greedy outputs the same (None: not greedy)
    async_scheduling: bool | None = None  # the run's own pass, as its engine resolved it
    async_pinned: str | None = None  # with a baseline: how async scheduling was pinned on both sides

    def figures(self) -> dict[str, Any]:
        """The figures a run summary shows."""
        return {"output_tokens_per_s": self.output_tokens_per_s, "speedup": self.speedup}

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": KIND, "created": self.created, "versions": self.versions, "models": self.models,
            "overrides": self.overrides, "choices": self.choices, "config": self.config, "prompts": self.prompts,
            **PassRecord(self.timings, self.output_tokens_per_s, self.stats, self.outputs,
                         self.async_scheduling).to_dict(),
        }
        if self.baseline is not None:
            data.update(baseline=self.baseline.to_dict(), speedup=self.speedup,
                        outputs_identical=self.outputs_identical, async_scheduling_pinned=self.async_pinned,
                        async_scheduling_match=self.async_scheduling == self.baseline.async_scheduling
                        if self.async_scheduling is not None and self.baseline.async_scheduling is not None else None)
        return data

    def write(self, path: Path) -> None:
        from llama4spec.files import write_json

        write_json(Path(path), self.to_dict())
