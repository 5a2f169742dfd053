"""A sweep point from what a benchmark step leaves behind: its composed config (as plain data, the
step's ``config.yaml``) and its record. The run's own report and ``llama4spec report`` both build
points this way, so a report rebuilt from the records equals the one the run wrote.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Iterable, Mapping

from llama4spec import figures as registry
from llama4spec.files import count
from llama4spec.results.bench import BenchRecord
from llama4spec.stats.point import SCHEDULED, Point

# config keys a point's name or its table already says: the draft, the lookahead, the concurrency,
# the prompts' category and the sampling temperature
NAMED = ("draft.", "lookahead", "bench.max_concurrency", "bench.category", "bench.temperature")
# config keys that say where a server ran, not what it is: each server group of a parallel, Slurm or
# multi-node run gets a port and hosts of its own, which never name a setting
PLACEMENT = ("serve.port", "serve.host", "cluster.")
MAX_SHOWN = 40  # characters of a varied value in a name


def points(measured: Iterable[tuple[str, Mapping[str, Any], BenchRecord]]) -> list[Point]:
    """The points of one sweep (step id, config, record each), every one named with the other keys
    the sweep varies (``varied_keys``), so two settings never share a name in a table, a plot, the
    CSV or a verdict."""
    measured = list(measured)
    keys = varied_keys([config for _, config, _ in measured])
    return [replace(point(pid, config, record), varied=tuple((k, _shown(dotted(config, k))) for k in keys))
            for pid, config, record in measured]


def _flat(data: Any, prefix: str = "") -> dict[str, str]:
    """Dotted keys of nested config data, each value as JSON text (walked without recursion)."""
    out: dict[str, str] = {}
    stack = [(data, prefix)]
    while stack:
        value, key = stack.pop()
        if isinstance(value, Mapping) and value:
            stack.extend((v, f"{key}{k}.") for k, v in value.items())
        else:
            out[key[:-1]] = json.dumps(value, sort_keys=True, default=str)
    return out


def varied_keys(configs: list[Mapping[str, Any]]) -> list[str]:
    """The config keys whose values differ between the points of a sweep, beyond those ``NAMED`` and
    those of ``PLACEMENT``."""
    flat = [_flat(c) for c in configs if isinstance(c, Mapping)]
    keys = sorted({k for f in flat for k in f if k and not k.startswith(NAMED + PLACEMENT)})
    return [k for k in keys if len({f.get(k) for f in flat}) > 1]


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…"


def dotted(data: Mapping[str, Any], key: str) -> Any:
    """``data``'s value at a dotted key (``bench.max_concurrency``); None where any part is missing."""
    for part in key.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data


def point(step_id: str, config: Mapping[str, Any], record: BenchRecord) -> Point:
    """One sweep point from its bench step's config (plain data) and record. A point measured under
    a lookahead schedule (``draft.lookahead_schedule`` set) carries the draft's name + SCHEDULED."""
    method, name = dotted(config, "draft.method"), dotted(config, "draft.name") or "draft"
    k = dotted(config, "lookahead") if method else None
    k = count(k)
    acc = record.acceptance if k else None
    concurrency = record.figure("max_concurrency") or dotted(config, "bench.max_concurrency")
    category = dotted(config, "bench.category")
    measured = [f.key for f in registry.sweep() if f.source == registry.RESULT]
    samples: dict[str, tuple[float, ...]] = {key: tuple(record.samples(key)) for key in measured}
    samples["median_tpot_ms"] = tuple(record.samples("median_tpot_ms"))  # a frontier's per-user speed
    if k:
        samples["acceptance_length"] = tuple(record.acceptance_samples())
    draft = "none"
    if method:
        draft = f"{name}{SCHEDULED}" if dotted(config, "draft.lookahead_schedule") else str(name)
    return Point(
        id=step_id,
        draft=draft,
        lookahead=k,
        concurrency=int(concurrency) if concurrency else 0,
        output_throughput=record.figure("output_throughput"),
        mean_tpot_ms=record.figure("mean_tpot_ms"),
        mean_ttft_ms=record.figure("mean_ttft_ms"),
        acceptance_length=acc.mean_acceptance_length if acc else None,
        rates=tuple(acc.rate_per_position(k)) if acc else (),
        num_drafts=acc.num_drafts if acc else 0,
        accepted_per_pos=tuple(acc.accepted_per_pos) if acc else (),
        samples={key: values for key, values in samples.items() if values},
        figures={key: record.figure(key) for key in measured if not hasattr(Point, key)},
        category=str(category) if category is not None else None,
        prompts=record.category_prompts,
        stop_verdict=(record.stop or {}).get("verdict") if k else None,
        starts=tuple(record.sample_starts("output_throughput")),
        rule=_rule(record.stop),
        pairs=tuple(tags) if any(tags := record.sample_pairs("output_throughput")) else (),
        temperature=_temperature(config),
        requests=tuple(row for _, rows in record.counted_requests() for row in rows) if k else (),
    )


def _temperature(config: Mapping[str, Any]) -> float:
    """The point's sampling temperature (``bench.temperature``; 0 when absent or unreadable)."""
    value = dotted(config, "bench.temperature")
    try:
        t = float(value) if value is not None and not isinstance(value, bool) else 0.0
    except (TypeError, ValueError):
        return 0.0
    return t if 0 <= t < float("inf") else 0.0


def _rule(stop: Mapping[str, Any] | None) -> tuple[int, int, float] | None:
    """The rule a point measured until decided was given its runs by (its record's ``stop``)."""
    rule = (stop or {}).get("rule")
    if not isinstance(rule, Mapping):
        return None
    return int(rule["min_repeats"]), int(rule["max_repeats"]), float(rule["confidence"])
