"""A ``capacity`` step: each server setting's request capacity under a latency SLO (the largest
request rate at which the SLO holds) and its gain over no speculation.

Its matrix (server settings only, as a sweep's: draft, lookahead, ...) expands, per server, into a
serve step, a ``search`` step (open-loop probes placed by ``capacity.fit``, or with ``search:
bisect`` by ``capacity.probing``) and a stop step; this
step then reads every search.json and writes the answer: per server the request capacity in req/s
and output tok/s with its interval, the binding constraint, any cliff, and the gain over no
speculation with its interval (``capacity.gain``), as report.md, capacity.json and a
latency-throughput plot per setting with the SLO's lines.

The SLO comes from the config (``slo=interactive``, ``slo.ttft_ms=...``) and is checked once here,
before any server is planned; ``slo.relative_to: STEP`` takes multiples of a bench step's measured
medians, resolved when that step has run and recorded in each search.json.

The search's settings (``start_rate``, ``max_rate``, ``search``, ...) are one ``Settings``
(``search_settings``), written as keys of this step and handed whole to every search step.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from llama4spec.config import methods
from llama4spec.config.validate import slo_problems
from llama4spec.frontier.load import MAX_LOAD
from llama4spec.frontier.price import MAX_PRICE
from llama4spec.runbook import bands, fields
from llama4spec.runbook.matrix import (TooLarge, bounded_id, check_matrix, claim_ids, file_label, is_client_axis,
                                       matrix_points, points_problem, server_groups, shared_config)
from llama4spec.runbook.spec import PageRead, Reference, Traits
from llama4spec.runbook.block_order import MAX_BLOCKS
from llama4spec.capacity.search_settings import Settings
from llama4spec.runbook.steps.base import BaseKind

CLIENT_KEYS = ("slo",)  # a capacity matrix varies servers; the SLO and the client are the step's own


def _matrix(raw: dict, key: str, at: str, problems: list[str]) -> dict[str, list[str]] | None:
    matrix, found = check_matrix(raw.get(key), at)
    problems.extend(p.replace("a sweep step needs", "a capacity step needs") for p in found)
    return matrix if matrix or isinstance(matrix, TooLarge) else None


@dataclass
class Keys:
    matrix: dict[str, list[str]] | None = fields.custom(_matrix, default=None)  # server settings: key -> values
    overrides: list[str] = fields.overrides()  # every server's, and the SLO (slo=interactive, slo.relative_to=...)
    settings: Settings = fields.group(Settings)  # the search's (start_rate, max_rate, ...): written beside these
    # a request rate to carry (req/s): each setting's servers and devices for it under the SLO, and those the draft saves
    load: float | None = fields.number(None, 0, MAX_LOAD, above=True, optional=True)
    # a device-hour price (a GPU's; a CPU server counts as one device): a million output tokens at each capacity
    price: float | None = fields.number(None, 0, MAX_PRICE, optional=True)
    # input-length bands (``runbook.bands``): each server searched once per band, the gain over no
    # speculation taken within a band, and where more capacity stops being gained between adjacent bands
    bands: list | None = fields.custom(bands.read, default=None)
    # back-to-back blocks (``capacity.blocks``): each setting with a draft searched in this many blocks, each beside
    # a fresh server without speculation, its gain from the blocks' own spread; 0: each server started once
    blocks: int = fields.count(0, 0, MAX_BLOCKS)
    order_seed: int = fields.count(0, 0, 2 ** 31 - 1)  # blocks: the seed of each round's order
    # generated:
    points: list[str] = field(default_factory=list)  # its search steps, one per server
    names: dict[str, str] = field(default_factory=dict)  # search step -> the setting in words
    baseline: str | None = None  # the search step of no speculation
    relative_to: str | None = None  # slo.relative_to: the bench step whose medians the SLO multiplies
    band_key: str | None = None  # banded: the bench key each band sets (bench.input_len, ...)
    band_of: dict[str, str] = field(default_factory=dict)  # banded: search step -> its band's value
    pairs: dict[str, str] = field(default_factory=dict)  # blocks: a setting's search -> its block's baseline search

    def design_record(self) -> dict[str, Any]:
        design = "blocks" if self.blocks else "sequential"
        return {"design": design, "asked": design}

    def settings_record(self) -> dict[str, Any]:
        """plan.json's ``capacity``: each search step's setting in words, and the baseline's search
        (what ``report`` and report.html need to analyse the searches again from their records)."""
        return {"names": dict(self.names), "baseline": self.baseline,
                **({"band_key": self.band_key, "bands": dict(self.band_of)} if self.band_of else {}),
                **({"pairs": dict(self.pairs)} if self.pairs else {}),
                **({"load": self.load} if self.load is not None else {}),
                **({"price": self.price} if self.price is not None else {})}


def check(keys: Keys, at: str, problems: list[str], state: dict[str, Any]) -> None:
    if isinstance(keys.matrix, TooLarge):
        keys.matrix = None
        state["too_large"] = True
    if keys.matrix:
        client = [k for k in keys.matrix if is_client_axis(k) or k.split(".")[0] in CLIENT_KEYS]
        if client:
            problems.append(f"{at}: matrix '{client[0]}': a capacity step's matrix varies the server (draft, "
                            f"lookahead, ...); give the benchmark client and the SLO in its overrides")
            keys.matrix = None
        else:
            before = state.get("points", 0)
            too_many = points_problem(keys.matrix, at, before)
            if too_many:
                problems.append(too_many)
                keys.matrix, state["too_large"] = None, True
            else:
                state["points"] = before + matrix_points(keys.matrix) * max(1, len(keys.bands or []), 2 * keys.blocks)
    problems.extend(fields.warmup_flag_problems(keys.settings.extra_args, at))
    problems.extend(fields.own_flag_problems(keys.settings.extra_args, at, fields.PROBE_OWN_FLAGS))
    problems.extend(f"{at}: {p}" for p in keys.settings.problems())
    if keys.blocks == 1:
        problems.append(f"{at}: 'blocks' is 1, which measures no spread between blocks; give 2 or more (e.g. 4), "
                        f"or 0 for one start a server")
    if keys.blocks and keys.bands:
        problems.append(f"{at}: 'blocks' and 'bands' together are not offered; drop one (a step a band, in blocks)")


def slo_check(cfg) -> list[str]:
    """Why the SLO cannot bound a capacity search (every problem, one line each)."""
    slo = cfg.slo
    found = slo_problems(slo)
    if found:
        return found
    if not slo.thresholds() and slo.relative_to is None:
        return [f"request capacity is measured against a latency SLO, and slo={slo.name} sets no threshold; choose "
                f"one (slo=interactive, slo=batch), give slo.ttft_ms, slo.tpot_ms or slo.e2el_ms (milliseconds), or "
                f"slo.relative_to=STEP with multipliers (slo.ttft=3.0)"]
    if not slo.attainment < 1:
        return [f"slo.attainment={slo.attainment:g}: a capacity search needs an attainment below 1 (no number of runs "
                f"shows that every request of a rate is good), e.g. 0.95 or 0.99"]
    return []


def setting_name(cfg) -> str:
    """A server setting in words: no speculation, EAGLE k=3."""
    if not cfg.draft.method:
        return "no speculation"
    return f"{methods.label(cfg.draft.method)} k={cfg.lookahead}"


def _bands_refused(keys: Keys, groups: list, at: str, problems: list[str]) -> bool:
    """Whether the step's bands are refused on its servers' configs (each problem said once; no
    server is planned then)."""
    found = bands.config_problems(keys.bands, [g.cfg for g in groups if g.cfg is not None], {}, at) \
        if keys.bands else []
    problems.extend(found)
    return bool(found)


def expand(runbook, step, cli: list[str], taken: set[str], make, problems: list[str], environ=None) -> list:
    """Per server: serve, search, stop; then this step (its points: the searches). The SLO is
    checked once, on the overrides every server shares: a problem there is one line, nothing planned."""
    at = f"{runbook.path}: step '{step.id}'"
    keys = step.keys
    cfg = shared_config(runbook, step, cli, problems)
    if cfg is None:
        return [step]
    found = slo_check(cfg)
    if found:
        problems.extend(f"{at}: {x}" for x in found)
        return [step]
    ref = cfg.slo.relative_to
    groups = server_groups(runbook, step, keys.matrix or {}, cli, problems)
    if _bands_refused(keys, groups, at, problems):
        return [step]
    band_key, band_values = bands.axis(keys.bands) if keys.bands else (None, [None])
    axes = list(keys.matrix or {})
    if keys.blocks:
        return _expand_blocks(step, groups, axes, make, taken, at, problems, ref)
    out, points, names, baseline, previous, band_of = [], [], {}, None, None, {}
    for group in groups:
        label = "-".join(file_label(a, v) for a, v in group.constant(axes)) or "server"
        sid = bounded_id(f"{step.id}-{label}")
        ids = [sid, bounded_id(f"{sid}-search"), bounded_id(f"{sid}-stop")]
        searches = [ids[1]] if band_key is None else [bounded_id(f"{ids[1]}-{file_label(band_key, v)}")
                                                      for v in band_values]
        if not claim_ids([*ids, *searches], taken, at, "capacity", problems):
            continue
        name = setting_name(group.cfg)
        if name in names.values():
            name = f"{name} ({label})"
        needs = [ref] if ref in taken else []  # a server whose SLO cannot be resolved is not started
        out.append(make("serve", sid, needs=[*needs, *([previous] if previous else step.needs)],
                        description=f"capacity '{step.id}': server for {name}",
                        overrides=[*keys.overrides, *group.overrides]))
        for search, value in zip(searches, band_values):
            band = f", input {band_key}={value}" if band_key else ""
            out.append(make("search", search, needs=needs, server=sid, relative_to=ref, settings=keys.settings,
                            description=f"capacity '{step.id}': request capacity of {name}{band}",
                            overrides=[f"{band_key}={value}"] if band_key else []))
            if band_key:
                band_of[search] = value
        out.append(make("stop", ids[2], server=sid))
        previous = ids[2]
        points.extend(searches)
        names.update(dict.fromkeys(searches, name))
        if not group.cfg.draft.method and baseline is None:
            baseline = searches[0]
    new_keys = dataclasses.replace(keys, points=points, names=names, baseline=baseline, relative_to=ref,
                                   band_key=band_key, band_of=band_of)
    return [*out, dataclasses.replace(step, needs=list(dict.fromkeys([*step.needs, *points])), keys=new_keys)]


def _expand_blocks(step, groups: list, axes: list[str], make, taken: set[str], at: str, problems: list[str],
                   ref: str | None) -> list:
    """A capacity step in back-to-back blocks (``capacity.blocks``), then this step."""
    from llama4spec.runbook.block_order import side_by_side_problem
    from llama4spec.capacity import blocks

    keys = step.keys
    groups = [g for g in groups if g.cfg is not None]
    why = side_by_side_problem(groups[0].cfg) if groups else None
    if why is not None:
        problems.append(f"{at}: blocks: {why}; drop 'blocks' to start each server once")
        return [step]
    labels = ["-".join(file_label(a, v) for a, v in g.constant(axes)) or "server" for g in groups]
    names = [setting_name(g.cfg) for g in groups]
    names = [n if names.count(n) == 1 else f"{n} ({label})" for n, label in zip(names, labels)]
    found = blocks.expand(step, keys, groups, labels, names, make, taken, at, problems,
                          [ref] if ref in taken else [], ref)
    if found is None:
        return [step]
    new_keys = dataclasses.replace(keys, points=found.points, names=found.names, baseline=found.baseline,
                                   relative_to=ref, pairs=found.pairs)
    return [*found.steps, dataclasses.replace(step, needs=list(dict.fromkeys([*step.needs, *found.points])),
                                              keys=new_keys)]


def references(keys: Keys) -> list[Reference]:
    return [Reference("slo.relative_to", keys.relative_to, "bench")] if keys.relative_to else []


def artifacts(p) -> dict[str, Any]:
    files = {"report": p.dir / "report.md", "analysis": p.dir / "capacity.json"}
    files.update({f"latency-{sid}": p.dir / f"latency-{sid}.png" for sid in p.step.keys.points})
    return files


def plan(ctx, p) -> None:
    p.artifacts = artifacts(p)  # a missing or refused matrix, or a bad SLO: reported when the step was read or expanded


def execute(run, p) -> dict[str, Any]:
    from llama4spec.capacity.step_report import run_report
    from llama4spec.capacity.write_report import FIT_FIGURE

    text, record = run_report(run.plan, p, run.console, run.not_run())
    run.keep_comparison(p.id, text.replace("](latency-", f"]({p.id}/latency-").replace(f"]({FIT_FIGURE})",
                                                                                    f"]({p.id}/{FIT_FIGURE})"))
    return record


def merge_part(sid: str, sources: list[Any]) -> Any:
    """Its part of ``llama4spec report`` (``capacity.read_back``, read only when a report is rebuilt)."""
    from llama4spec.capacity import read_back

    return read_back.merge_part(sid, sources)


def page_part(read: PageRead, step: Mapping[str, Any], page: Any) -> None:
    """Its section of report.html (``capacity.read_back``)."""
    from llama4spec.capacity import read_back

    read_back.page_part(read, step, page)


def describe(p, say) -> None:
    keys = p.step.keys
    if keys.matrix:
        say("    matrix: " + " x ".join(f"{k} [{', '.join(v)}]" for k, v in keys.matrix.items()))
    servers = len(set(keys.names.values()))
    say(f"    request capacity of {servers} servers under the SLO; gain over "
        f"{'no speculation' if keys.baseline else 'no baseline (no server without a draft)'}, with intervals")
    per_band = ("each server searched once per band (one start serves every band), each setting's capacity "
                "compared with no speculation's in the same band, and where speculation stops adding capacity "
                "between adjacent bands reported")
    if keys.pairs:
        say(f"    back-to-back blocks: each setting with a draft searched in {keys.blocks} blocks, each beside a fresh "
            f"server without speculation (rounds in a random order from order_seed {keys.order_seed}); each gain from "
            f"its blocks' own spread ({keys.blocks - 1} df)")
    for line in bands.describe(keys.bands, per_band) if keys.band_of else []:
        say(f"    {line}")
    if keys.load is not None or keys.price is not None:
        parts = ([f"servers and devices (tensor x pipeline x data parallel; a CPU server one) each setting needs for "
                  f"{keys.load:g} req/s under the SLO, and those the draft saves"] if keys.load is not None else []) + \
                ([f"price per million output tokens at each capacity at {keys.price:g} a device-hour"]
                 if keys.price is not None else [])
        say(f"    {'; '.join(parts)}")


KIND = BaseKind("capacity", Keys, Traits(expands=True, merges=True, describe_first=True), plan, execute, describe,
                check=check, references=references, expand=expand,
                plan_record=lambda step: {"design": step.keys.design_record(), "capacity": step.keys.settings_record()},
                merge_part=merge_part, page_part=page_part)
