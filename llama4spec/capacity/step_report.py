"""A capacity step's analysis as a whole, from its searches' records: one group of searches, or
one per input band (merged, with the bands' verdicts and break), or one per back-to-back block
(each setting's gain over its blocks, ``capacity.blocks``); the run writes it (``run_report``),
``report`` and report.html analyse the same records again (``capacity.read_back``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from rich.console import Console

from llama4spec.capacity import bands, blocks
from llama4spec.capacity.gain import Between
from llama4spec.capacity.write_report import Found, Setting, analyse, between_of, medians_of, write
from llama4spec.results import bench as bench_record


def analyse_step(settings: list[Setting], baseline: str | None, band_of: Mapping[str, str],
                 failures: Mapping[str, str] | None = None, pairs: Mapping[str, str] | None = None,
                 **kw: Any) -> Found:
    """``analyse`` of a capacity step; one banded by input length (``band_of``: search step -> band)
    analysed per band (``capacity.bands.groups``: each band's gains over no speculation in the same
    band, one noise term for all) and merged (``merged``); one in back-to-back blocks (``pairs``: a
    setting's search -> its block's no speculation search) per block (``analyse_blocks``)."""
    if pairs:
        return analyse_blocks(settings, pairs, failures, **kw)
    parts = bands.groups(settings, baseline, band_of)
    if parts[0].band is None:
        return analyse(settings, baseline, failures, **kw)
    kw["between"] = kw.get("between") or between_of(settings)
    return merged([(g.band, analyse(g.settings, g.baseline, failures, **kw)) for g in parts])


def joined(parts: list[tuple[str, Found]]) -> Found:
    """Analyses of parts of one step (bands, blocks) as one: each setting named with its part's
    label ("EAGLE k=3, 16 tokens"), its sentence led by the label."""
    first = parts[0][1].record
    record: dict[str, Any] = {**first, "settings": {}, "missing": {}, "warnings": [], "demand": None}
    out = Found(record)
    for label, found in parts:
        r = found.record

        def tag(name: str) -> str:
            return f"{name}, {label}"

        record["settings"].update({tag(n): {**e, "sentence": f"{label}: {e['sentence']}"}
                                   for n, e in r["settings"].items()})
        record["missing"].update({tag(n): why for n, why in r["missing"].items()})
        record["warnings"] += [w for w in r["warnings"] if w not in record["warnings"]]
        out.searches.update({tag(n): x for n, x in found.searches.items()})
        out.slos.update({tag(n): x for n, x in found.slos.items()})
        out.settings += [dataclasses.replace(x, name=tag(x.name)) for x in found.settings]
        d = r.get("demand")
        if d:
            mine = record["demand"] = record["demand"] or {**d, "settings": {}, "saved": {}, "lines": []}
            mine["settings"].update({tag(n): x for n, x in d["settings"].items()})
            mine["saved"].update({tag(n): x for n, x in d["saved"].items()})
            mine["lines"] += [f"{label}: {line}" for line in d["lines"]]
    return out


def merged(parts: list[tuple[Any, Found]]) -> Found:
    """The bands' analyses as one (``joined``); the bands' verdicts and the break as
    ``input_bands``, whose sentence is the headline."""
    out = joined([(band.label, found) for band, found in parts])
    out.record["input_bands"] = bands.record([(band, found.record) for band, found in parts])
    out.record["headline"] = out.record["input_bands"]["sentence"]
    return out


PAIRED = Between(0.0, "none: each gain is paired block by block, the blocks' own spread holds the between-start term")


def analyse_blocks(settings: list[Setting], pairs: Mapping[str, str], failures: Mapping[str, str] | None = None,
                   **kw: Any) -> Found:
    """A capacity step in back-to-back blocks (``capacity.blocks``): each block's two searches
    analysed as a step of their own (the gain without a between-start term), every setting named
    with its block ("EAGLE k=3, block 2"), and each setting's gain over its blocks as ``blocks``,
    whose sentence is the headline. No load or price: a block's server is half the devices."""
    by_id = {s.id: s for s in settings}
    kw.update(between=PAIRED, load=None, price=None)
    parts, per_setting, seen, baseline = [], {}, {}, None
    for cand, base in pairs.items():
        if cand not in by_id or base not in by_id:
            continue
        c, b = by_id[cand], by_id[base]
        j = seen[c.name] = seen.get(c.name, 0) + 1
        baseline = baseline or b.name
        b = dataclasses.replace(b, name=f"{b.name} beside {c.name}")  # each block's own baseline, named apart
        found = analyse([b, c], b.id, failures, **kw)
        parts.append((f"block {j}", found))
        g = found.record["settings"].get(c.name, {}).get("gain")
        per_setting.setdefault(c.name, []).append(g["ratio"] if g else None)
    if not parts:  # no pair of searches to read: every setting as not measured
        out = analyse(settings, None, failures, **kw)
    else:
        out = joined(parts)
    gains = [blocks.combine(name, ratios) for name, ratios in per_setting.items()]
    out.record["blocks"] = blocks.record(gains, baseline or "no speculation")
    out.record["headline"] = out.record["blocks"]["sentence"]
    out.record["between"] = {"sd": 0.0, "source": PAIRED.source}
    return out


def run_report(plan, planned, console: Console, failures: Mapping[str, str] | None = None) -> tuple[str, dict]:
    """Analyse a capacity step's searches, write its files, print it; (markdown, record)."""
    keys = planned.step.keys
    settings = [Setting(sid, keys.names.get(sid, sid), plan.get(sid).dir) for sid in keys.points]
    ref = plan.get(keys.relative_to) if keys.relative_to else None
    record = bench_record.read(ref.artifacts["record"]) if ref is not None else None
    found = analyse_step(settings, keys.baseline, keys.band_of, failures, keys.pairs,
                         reference=medians_of(record if record is not None and record.counted else None),
                         load=keys.load, price=keys.price)
    return write(found, planned.artifacts, console), found.record
