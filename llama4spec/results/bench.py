"""The benchmark record: one typed object for one benchmark point, written by the bench runner and
read by compare, resume, the sweep report and run summaries alike.

A point measured once is one ``vllm bench serve`` run. A point measured with repeats holds its
counted runs in ``runs`` (each a record of one run); its own ``result`` then carries, for every
number vLLM reports, the median over the runs, and its acceptance is the sum of the runs'
counters (exact: each run's counters are the server's deltas around that run alone).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from llama4spec import figures as registry
from llama4spec.errors import UserError
from llama4spec.files import count, json_or_none, number, plain
from llama4spec.records import bench as model
from llama4spec.results import requests as per_request
from llama4spec.results.acceptance import AcceptanceCounters
from llama4spec.results.prefix_cache import PrefixCache, summed
from llama4spec.results.requests import RequestRow

KIND = "llama4spec.bench"


@dataclass
class BenchRecord:
    """What one benchmark run produced: vLLM's result JSON plus acceptance from /metrics deltas."""

    label: str
    url: str | None = None
    argv: list[str] = field(default_factory=list)  # the pasteable `vllm bench serve` command
    returncode: int | None = None
    wall_time_s: float | None = None
    lookahead: int | None = None
    acceptance: AcceptanceCounters | None = None
    result: dict[str, Any] | None = None  # vLLM's result JSON (None: the run wrote none)
    runs: list["BenchRecord"] = field(default_factory=list)  # repeats: each counted run (empty: one run)
    warmup: int = 0  # warm-up requests sent in an unrecorded run before the counted ones
    models: dict[str, str] = field(default_factory=dict)  # config key -> fingerprint of a local model directory
    category_prompts: int | None = None  # a category point: the distinct prompts its category has, when known
    # a point measured until decided (repeats: auto): why it stopped ("resolved", "eliminated", "max_repeats",
    # "needs another server start"), after how many runs, and its verdict against no speculation
    stop: dict[str, Any] | None = None
    start: int = 1  # a counted run of a revisited point: the server start (pass of the sweep) it came from
    # a counted run of an interleaved sweep's baseline: the candidate point (its bench step id) it was
    # measured back to back with; the n-th run tagged so pairs with that point's n-th run
    pair: str | None = None
    started: float | None = None  # a counted run: when it started (seconds since the epoch); its end adds wall_time_s
    client_cpu_s: float | None = None  # one run: the CPU time the load generator (vLLM's benchmark) took
    # a run against a server with a draft: each request's acceptance and latencies (serving.vllm_bench)
    requests: list[RequestRow] = field(default_factory=list)
    prefix_cache: PrefixCache | None = None  # the server's prefix-cache counters: deltas around the run (runs: summed)

    @classmethod
    def of_runs(cls, label: str, runs: list["BenchRecord"], *, url: str | None = None, argv: list[str] | None = None,
                lookahead: int | None = None, warmup: int = 0, wall_time_s: float | None = None) -> "BenchRecord":
        """One point from its repeated runs: medians of vLLM's numbers, summed acceptance counters.
        It counts only when every run counts (its returncode is the first failing run's)."""
        failing = next((r for r in runs if not r.counted), None)
        counted = [r for r in runs if r.counted]
        result: dict[str, Any] | None = None
        if counted:
            result = dict(counted[0].result or {})
            for key, value in list(result.items()):
                values = [r.figure(key) for r in counted]
                if isinstance(value, (int, float)) and not isinstance(value, bool) and all(v is not None for v in values):
                    median = statistics.median(values)
                    result[key] = int(median) if isinstance(value, int) and median == int(median) else median
        acceptance = None
        for r in counted:
            if r.acceptance is not None:
                acceptance = r.acceptance if acceptance is None else acceptance + r.acceptance
        return cls(label=label, url=url, argv=list(argv or (runs[0].argv if runs else [])),
                   returncode=(failing.returncode if failing is not None and failing.returncode else
                               (1 if failing is not None or not runs else 0)),
                   wall_time_s=wall_time_s, lookahead=lookahead, acceptance=acceptance, result=result,
                   runs=list(runs), warmup=warmup, prefix_cache=summed([r.prefix_cache for r in counted]))

    @property
    def repeats(self) -> int:
        return len(self.runs) or 1

    def samples(self, key: str) -> list[float]:
        """``key`` of every counted run (one value without repeats); runs without it are left out."""
        runs = self.counted_runs()
        return [v for v in (r.figure(key) for r in runs) if v is not None]

    def counted_runs(self) -> list["BenchRecord"]:
        """Its counted runs (itself, for a point of one run)."""
        return [r for r in self.runs if r.counted] if self.runs else [self]

    def with_runs(self, runs: list["BenchRecord"], wall_time_s: float | None, *, label: str | None = None,
                  url: str | None = None) -> "BenchRecord":
        """The same point over ``runs`` (medians and counters recomputed by ``of_runs``), its models,
        category and stop reason kept; ``label`` and ``url`` replace its own when given."""
        new = BenchRecord.of_runs(self.label if label is None else label, runs, url=self.url if url is None else url,
                                  lookahead=self.lookahead, warmup=self.warmup, wall_time_s=wall_time_s)
        new.models, new.category_prompts, new.stop = self.models, self.category_prompts, self.stop
        return new

    def counted_only(self) -> "BenchRecord":
        """The same point over its counted runs alone: what a later block's or server start's failed
        run leaves of it (the failure is that step's to say; the earlier runs stay measurements)."""
        kept = [r for r in self.runs if r.counted]
        return self.with_runs(kept, sum(r.wall_time_s or 0.0 for r in kept))

    def sample_starts(self, key: str) -> list[int]:
        """The server start of each of ``samples(key)``, in the same order."""
        runs = self.counted_runs()
        return [r.start for r in runs if r.figure(key) is not None]

    def sample_pairs(self, key: str) -> list[str | None]:
        """The candidate each of ``samples(key)`` pairs with (None: not measured in a pair)."""
        runs = self.counted_runs()
        return [r.pair for r in runs if r.figure(key) is not None]

    def counted_requests(self) -> list[tuple[int, list[RequestRow]]]:
        """(run index, its requests) of every counted run that kept them."""
        runs = self.runs or [self]
        return [(i, r.requests) for i, r in enumerate(runs) if r.counted and r.requests]

    def acceptance_shown(self) -> AcceptanceCounters | None:
        """Its acceptance counters with the steps that drafted each position where its requests' per-step
        arrays give them (``requests.with_drafted``; a point: summed over its counted runs)."""
        if self.acceptance is None:
            return None
        if self.runs:
            parts = [r.acceptance_shown() for r in self.counted_runs() if r.acceptance is not None]
            summed = sum(parts, AcceptanceCounters()) if parts else None
            return summed if summed is not None and summed == self.acceptance else self.acceptance
        return per_request.with_drafted(self.acceptance, self.requests) if self.requests else self.acceptance

    def requests_check(self) -> dict[str, Any] | None:
        """One run's per-request sums against its ``/metrics`` delta (``requests.check``)."""
        return per_request.check(self.requests, self.acceptance)

    def acceptance_samples(self) -> list[float]:
        """The mean acceptance length of every counted run that drafted."""
        runs = self.counted_runs()
        return [r.acceptance.mean_acceptance_length for r in runs
                if r.acceptance is not None and r.acceptance.mean_acceptance_length is not None]

    @property
    def completed(self) -> int:
        value = (self.result or {}).get("completed", 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @property
    def counted(self) -> bool:
        """Whether this run counts as a measurement: exited 0 and completed at least one request."""
        return self.returncode == 0 and self.completed > 0

    def figure(self, key: str) -> float | None:
        """A finite number from vLLM's result, else None."""
        return number((self.result or {}).get(key))

    @property
    def acceptance_length(self) -> float | None:
        if self.acceptance is not None:
            return self.acceptance.mean_acceptance_length
        return self.figure("spec_decode_acceptance_length")

    @property
    def acceptance_rates(self) -> list[float] | None:
        if self.acceptance is not None:
            return self.acceptance.rate_per_position(self.lookahead)
        rates = (self.result or {}).get("spec_decode_per_position_acceptance_rates")
        return list(rates) if isinstance(rates, list) else None

    # -- a latency SLO (vLLM's --goodput): attainment = good requests / requests sent --

    @property
    def request_goodput(self) -> float | None:
        """vLLM's good completed requests per second of the run (None: run without --goodput)."""
        return self.figure("request_goodput")

    def _slo_runs(self) -> list["BenchRecord"]:
        """The runs whose requests count towards attainment: every run that exited 0 and wrote a
        result with goodput (a run whose every request failed included: all misses)."""
        return [r for r in (self.runs or [self]) if r.returncode in (0, None) and r.good_requests is not None
                and r.requests_sent]

    @property
    def requests_sent(self) -> int | None:
        """Completed plus failed requests of one run (None without a result)."""
        done, failed = count((self.result or {}).get("completed")), count((self.result or {}).get("failed", 0))
        return None if done is None or failed is None else done + failed

    @property
    def good_requests(self) -> int | None:
        """Requests of one run that met every threshold: request_goodput x duration, rounded."""
        goodput, duration = self.request_goodput, self.figure("duration")
        if goodput is None or duration is None or goodput < 0 or duration <= 0:
            return None
        return min(round(goodput * duration), self.requests_sent or 0)

    @property
    def attainment(self) -> float | None:
        """Good requests over requests sent (a failed request is a miss), over every run of a
        point; None for a run without --goodput."""
        runs = self._slo_runs()
        sent = sum(r.requests_sent or 0 for r in runs)
        return sum(r.good_requests or 0 for r in runs) / sent if sent else None

    def percentile_ms(self, metric: str, percent: float) -> float | None:
        """vLLM's ``p<percent>_<metric>_ms`` (``metric``: ttft, tpot, itl, e2el), as its result names it."""
        word = str(int(percent)) if float(percent).is_integer() else str(float(percent))
        return self.figure(f"p{word}_{metric}_ms")

    def attainment_with_queue(self, thresholds: Mapping[str, float]) -> float | None:
        """Attainment from the per-request data (``--save-detailed``) with the client's wait
        counted: TTFT and E2E latency measured from when a request was due, not from when a
        client concurrency cap let it go (vLLM times both after its semaphore). ``thresholds``:
        metric (ttft, tpot, e2el) -> ms. None when the run kept no per-request data."""
        data = self.result or {}
        columns = [data.get(k) for k in ("ttfts", "latencies", "output_lens", "queue_times", "errors")]
        if not all(isinstance(c, list) for c in columns) or len({len(c) for c in columns}) != 1 or not columns[0]:
            return None
        good = 0
        for ttft, latency, tokens, queue, error in zip(*columns):
            if any(number(v) is None for v in (ttft, latency, tokens, queue)):
                return None
            if error or latency <= 0:
                continue  # failed: a miss
            tpot = (latency - ttft) / (tokens - 1) if tokens > 1 else 0.0  # vLLM's definition
            seen = {"ttft": queue + ttft, "tpot": tpot, "e2el": queue + latency}
            good += all(seen[m] <= limit / 1000.0 for m, limit in thresholds.items() if m in seen)
        return good / len(columns[0])

    def shares_with_queue(self, thresholds: Mapping[str, float]) -> dict[str, float] | None:
        """Per bounded metric, the share of requests sent within that metric's threshold alone (the
        client's wait counted, as ``attainment_with_queue``; a failed request is a miss). None when
        the run kept no per-request data."""
        data = self.result or {}
        columns = [data.get(k) for k in ("ttfts", "latencies", "output_lens", "queue_times", "errors")]
        if not all(isinstance(c, list) for c in columns) or len({len(c) for c in columns}) != 1 or not columns[0]:
            return None
        good = {m: 0 for m in thresholds if m in registry.SLO_METRICS}
        for ttft, latency, tokens, queue, error in zip(*columns):
            if any(number(v) is None for v in (ttft, latency, tokens, queue)):
                return None
            if error or latency <= 0:
                continue
            tpot = (latency - ttft) / (tokens - 1) if tokens > 1 else 0.0
            seen = {"ttft": queue + ttft, "tpot": tpot, "e2el": queue + latency}
            for m in good:
                good[m] += seen[m] <= thresholds[m] / 1000.0
        return {m: n / len(columns[0]) for m, n in good.items()}

    def figures(self) -> dict[str, Any]:
        """The figures a run summary shows."""
        result = self.result or {}
        out: dict[str, Any] = {f.key: result[f.key] for f in registry.shown_in(registry.SUMMARY) if f.key in result}
        if self.request_goodput is not None:  # an SLO: goodput, attainment and the P99 of every metric it may bind
            out.update(request_goodput=self.request_goodput, attainment=self.attainment,
                       **{f"p99_{m}_ms": self.figure(f"p99_{m}_ms") for m in registry.SLO_METRICS})
        out["mean_acceptance_length"] = self.acceptance.mean_acceptance_length if self.acceptance else None
        out["acceptance_rate_per_position"] = (self.acceptance.rate_per_position(self.lookahead)
                                               if self.acceptance else None)
        out["prefix_cache_hit_rate"] = self.prefix_cache.hit_rate if self.prefix_cache else None
        return out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": KIND, "label": self.label, "url": self.url, "argv": self.argv,
            "returncode": self.returncode, "wall_time_s": self.wall_time_s, "lookahead": self.lookahead,
            "acceptance": self.acceptance_shown().to_record(self.lookahead) if self.acceptance else None,
        }
        if self.result is not None:
            data["result"] = self.result
        if self.models:
            data["models"] = dict(self.models)
        if self.category_prompts is not None:
            data["category_prompts"] = self.category_prompts
        if self.runs:
            data.update(repeats=len(self.runs), warmup=self.warmup, runs=[r.to_dict() for r in self.runs])
        elif self.warmup:
            data["warmup"] = self.warmup
        if self.stop is not None:
            data["stop"] = dict(self.stop)
        if self.start != 1:
            data["start"] = self.start
        if self.pair is not None:
            data["pair"] = self.pair
        if self.started is not None:
            data["started"] = self.started
        if self.client_cpu_s is not None:
            data["client_cpu_s"] = self.client_cpu_s
        if self.prefix_cache is not None:
            data["prefix_cache"] = self.prefix_cache.to_record()
        if self.requests:
            data["requests"] = [r.to_dict() for r in self.requests]
            data["requests_check"] = self.requests_check()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], fallback_label: str = "result", where: str | None = None) -> "BenchRecord":
        """A record of this tool (through its model, ``records.bench``: UserError in one line naming
        ``where``, the file, for a damaged one), or a plain ``vllm bench serve --save-result`` JSON."""
        if data.get("kind") == KIND:
            return cls.of_model(model.check(data, plain(where or fallback_label)), data, fallback_label)
        return cls(label=str(data.get("label") or fallback_label), returncode=0, result=dict(data))

    @classmethod
    def of_model(cls, m: "model.BenchRun", data: Mapping[str, Any], fallback_label: str = "result") -> "BenchRecord":
        """The record a validated ``records.bench.Bench`` holds; ``data``: what it was validated from
        (vLLM's result is kept whole: its other keys too)."""
        raw_runs = data.get("runs") or []
        return cls(
            label=m.label or fallback_label, url=m.url, argv=list(m.argv), returncode=m.returncode,
            wall_time_s=m.wall_time_s, lookahead=m.lookahead, acceptance=_counters(m.acceptance),
            result=dict(data["result"]) if m.result is not None else None,
            runs=[cls.of_model(r, d, fallback_label) for r, d in zip(getattr(m, "runs", []), raw_runs)], warmup=m.warmup or 0,
            models=dict(m.models), category_prompts=m.category_prompts,
            stop=m.stop.model_dump(exclude_none=True) if m.stop is not None else None, start=m.start,
            pair=m.pair if m.pair is not None and m.pair.isprintable() else None, started=m.started,
            client_cpu_s=m.client_cpu_s, requests=[_row(r) for r in m.requests],
            prefix_cache=PrefixCache(m.prefix_cache.queries, m.prefix_cache.hits) if m.prefix_cache else None)

    def write(self, path: Path) -> None:
        from llama4spec.files import finite, plain, write_json

        data = self.to_dict()
        model.check(finite(data), plain(str(path)), model.WRITE_FIX)  # what is written (a NaN as null) reads back
        write_json(Path(path), data)


def _counters(a: "model.Acceptance | None") -> AcceptanceCounters | None:
    """The counters a validated acceptance block holds (None: no acceptance). Records written before
    the raw per-position counts were kept carry only rates: counts are then rates x drafts."""
    if a is None or a.num_drafts is None:
        return None
    per_pos = a.accepted_per_pos
    if per_pos is None and a.num_drafts:
        per_pos = [round(r * a.num_drafts) for r in a.acceptance_rate_per_position or []]
    return AcceptanceCounters(a.num_drafts, a.num_draft_tokens or 0, a.num_accepted_tokens or 0, list(per_pos or []),
                              None if a.drafted_per_pos is None else list(a.drafted_per_pos))


def _row(r: "model.Request") -> RequestRow:
    """One request as a validated record holds it."""
    sha = r.prompt_sha256
    return RequestRow(id=r.id, ok=r.ok, index=r.index,
                      category=r.category[:100] if r.category is not None and r.category.isprintable() else None,
                      ttft_ms=r.ttft_ms, tpot_ms=r.tpot_ms, e2e_ms=r.e2e_ms, queue_ms=r.queue_ms,
                      arrival_ms=r.arrival_ms, output_tokens=r.output_tokens or 0, drafts=r.drafts,
                      draft_tokens=r.draft_tokens, accepted=r.accepted, accepted_per_pos=list(r.accepted_per_pos or []),
                      prompt_sha256=sha if sha is not None and len(sha) == 64 and sha.isalnum() else None,
                      drafted_per_pos=None if r.drafted_per_pos is None else list(r.drafted_per_pos))


def without_pair(record: BenchRecord, pair: str, start: int | None = None) -> BenchRecord | None:
    """``record`` without its runs paired with ``pair`` (a pair measured again replaces them), only
    those of server start ``start`` where given (a block of back-to-back blocks); None when no run is
    left."""
    runs = [r for r in (record.runs or [record]) if r.pair != pair or (start is not None and r.start != start)]
    if not runs:
        return None
    if len(runs) == len(record.runs or [record]):
        return record
    return record.with_runs(runs, sum(r.wall_time_s or 0.0 for r in runs))


def read(path: Path) -> BenchRecord | None:
    """The record (or vLLM result) at ``path``, read bounded; None when it is missing or unreadable
    (not whole JSON); a record of this tool through its model (UserError in one line naming the file,
    the field and the rule for a damaged one)."""
    data, _ = json_or_none(Path(path))
    if not isinstance(data, dict):
        return None
    if data.get("kind") == KIND:
        return BenchRecord.of_model(model.check(data, plain(str(path))), data, Path(path).parent.name)
    return BenchRecord.from_dict(data, Path(path).parent.name)


def read_record(path: Path) -> tuple[BenchRecord | None, str | None]:
    """A bench step's record read back from a run directory: (record, None); (None, None) without
    one; (None, why: one line naming the file, the field and the rule) when it is not a whole record
    of this tool (cut short, foreign, damaged)."""
    data, problem = json_or_none(Path(path))
    if problem is not None or data is None:
        return None, problem
    try:
        return BenchRecord.of_model(model.check(data, plain(str(path))), data, Path(path).parent.name), None
    except UserError as err:
        return None, err.problems[0]

