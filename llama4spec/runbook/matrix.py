"""A sweep step's matrix: checking it and expanding it into serve, bench and stop steps.

Axes under ``bench`` (the benchmark client's settings) are client-side; every other axis may
change the server. Server-side combinations are grouped by the server they imply (its argv and
environment), so settings that leave the server unchanged, such as the lookahead without a
draft, share one server. Each server is started once, measured at every client-side setting,
then stopped before the next one starts (they share a port and the machine).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import math
import re
from typing import Any, Callable, Mapping

from llama4spec.config.compose import MAX_OVERRIDE_CHARS, compose_config, group_options
from llama4spec.config.hydra_adapter import choices_of, parse_override, range_of
from llama4spec.config.schema import Config
from llama4spec.engine.args import engine_env, serve_argv
from llama4spec.errors import UserError
from llama4spec.runbook.fields import AUTO, plain, shown, text_problem
from llama4spec.runbook.spec import Runbook, Step

Make = Callable[..., Step]  # steps.make: a step of a kind with its keys

CLIENT_GROUP = "bench"
SHORT = {"lookahead": "k", "bench.max_concurrency": "c", "bench.num_prompts": "n"}
MAX_GENERATED_ID = 120  # a generated step id names a directory: well below a file name's 255 bytes
MAX_POINTS = 1_000  # benchmark points of all sweep steps together (each is a bench step, planned with Hydra)
MAX_VALUE = 200  # a matrix value (it becomes part of generated step ids)
SEQUENTIAL, INTERLEAVED = DESIGNS = ("sequential", "interleaved")  # a sweep's design (its first is the default)


# -- checking ---------------------------------------------------------------------------------------
def sweep_count(override: Any) -> float | None:
    """How many values a sweep override stands for, counted on Hydra's parsed sweep object with
    nothing expanded (``range`` by arithmetic, ``shuffle`` of it too, where Hydra would build the
    whole list): ``math.inf`` for a range without end or with a non-finite bound; None for what is
    not counted here (a glob, an interval: their expansion reports them)."""
    import decimal

    value = override.value()
    listed = choices_of(value)
    if listed is not None:
        return len(listed)
    bounds = range_of(value)
    if bounds is None or bounds[0] is None or bounds[1] is None:
        return None
    start, stop, step = bounds[0], bounds[1], 1 if bounds[2] is None else bounds[2]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (start, stop, step)):
        return len(range(start, stop, step)) if step else None  # step 0: Hydra's own error
    try:
        first, last, by = (decimal.Decimal(v) for v in (start, stop, step))
        if not all(v.is_finite() for v in (first, last, by)):
            return math.inf
        if by == 0:
            return None
        return max(0, math.ceil((last - first) / by))
    except (decimal.InvalidOperation, ValueError, TypeError):
        return None


def sweep_values(override: Any) -> tuple[list[str], float | None]:
    """(values, count): a sweep override's values as Hydra expands them, and how many it stands for
    (``sweep_count``). Counted first: beyond MAX_POINTS nothing is expanded (values empty); what
    cannot be counted is taken up to MAX_POINTS + 1 values, so it stops at once too."""
    count = sweep_count(override)
    if count is not None and count > MAX_POINTS:
        return [], count
    return list(itertools.islice(override.sweep_string_iterator(), MAX_POINTS + 1)), count


TOO_MANY_END = f"; a runbook sweeps at most {MAX_POINTS:,} points"


def too_many(values: list[str], count: float | None) -> str | None:
    """How many values a sweep has, in words, when that is more than MAX_POINTS (else None)."""
    if count is not None and count > MAX_POINTS:
        return "a range without end (a bound is inf or nan)" if math.isinf(count) else f"{count:,} values"
    return f"more than {MAX_POINTS:,} values" if len(values) > MAX_POINTS else None


GROUPS_WITHOUT_FIELD = ("experiment",)


def command_line_matrix(overrides: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """A command line's overrides as (matrix, shared overrides) (``llama4spec sweep``): each override with a Hydra sweep becomes an axis (its values as
    Hydra expands them), the others apply to every point. Every problem at once, one line each."""
    matrix: dict[str, list[str]] = {}
    shared: list[str] = []
    problems: list[str] = []
    for text in overrides:
        try:
            parsed = parse_override(text)
        except Exception as err:  # Hydra's OverrideParseException and friends: one line
            detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            problems.append(f"cannot parse override '{text}': {detail}")
            continue
        if not parsed.is_sweep_override():
            shared.append(text)
            continue
        key = parsed.key_or_group
        if parsed.is_add() or parsed.is_delete() or parsed.is_force_add() or parsed.package:
            problems.append(f"'{text}': a sweep axis is a plain key or group (e.g. lookahead=1,3); "
                            f"drop the prefix or the @package")
            continue
        try:
            values, count = sweep_values(parsed)
        except Exception as err:  # Hydra's exceptions (a glob, an interval, a bad range): one line
            detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            problems.append(f"'{plain(text, 120)}': cannot expand this sweep ({plain(detail, 120)}); "
                            f"use a list (1,3,5), range(1,8) or choice(a,b)")
            continue
        if too_many(values, count):
            problems.append(f"'{plain(text, 120)}': {too_many(values, count)}; a sweep has at most {MAX_POINTS:,} points")
            continue
        if key in matrix:
            problems.append(f"'{text}': {key} is swept twice; give its values once")
            continue
        matrix[key] = values
    if not matrix and not problems:
        problems.append("no sweep among the overrides; give at least one axis as a Hydra sweep, "
                        "e.g. lookahead=1,3 bench.max_concurrency=1,4 draft=none,tiny_eagle")
    if problems:
        raise UserError(*problems)
    return matrix, shared


def config_keys() -> tuple[set[str], set[str]]:
    """(groups, settable keys): groups take an option name, keys a value."""
    groups, keys = set(GROUPS_WITHOUT_FIELD), set()
    for f in dataclasses.fields(Config):
        sub = f.default_factory() if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]
        if dataclasses.is_dataclass(sub):
            groups.add(f.name)
            keys.update(f"{f.name}.{g.name}" for g in dataclasses.fields(sub))
        else:
            keys.add(f.name)
    return groups, keys


def value_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "null" if v is None else str(v)


def hydra_sweep(key: str, text: str) -> tuple[list[str], str | None]:
    """A matrix value written as a string in Hydra's sweep syntax (``range(1,8)``, ``1,3,5``,
    ``choice(none,tiny_eagle)``; a plain value is one value), expanded by Hydra's own override parser;
    (values, None) or ([], why not) in one line."""
    example = "write a list, or a Hydra sweep such as range(1,8), \"1,3,5\" or choice(none,tiny_eagle)"
    why = text_problem(text, MAX_OVERRIDE_CHARS)
    if why:
        return [], f"{shown(text)} {why}"
    try:
        override = parse_override(f"{key}={text}")
        if not override.is_sweep_override():
            if isinstance(override.value(), (list, dict)):
                return [], f"{shown(text)} is not a sweep; {example}"
            return [override.get_value_element_as_str()], None
        values, count = sweep_values(override)
    except Exception as err:  # Hydra's OverrideParseException, HydraException (interval, glob): one line
        detail = plain(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__, 120)
        return [], f"cannot expand {shown(text)} with Hydra's sweep syntax ({detail}); {example}"
    if too_many(values, count):
        return [], f"{shown(text)} gives {too_many(values, count)}{TOO_MANY_END}"
    if not values:
        return [], f"{shown(text)} gives no value; {example}"
    return values, None


class TooLarge(dict):
    """A matrix refused for its size (an axis beyond MAX_POINTS values): empty, and its runbook is
    refused before anything of it is composed."""


def check_matrix(raw: Any, at: str) -> tuple[dict[str, list[str]], list[str]]:
    """The matrix as {axis: [override values]} and every problem found in it (a ``TooLarge`` matrix
    when an axis has too many values). A value may be a list or a string in Hydra's sweep syntax
    (``hydra_sweep``)."""
    example = "e.g. matrix: {lookahead: [1, 3], bench.max_concurrency: \"1,4\", draft: \"choice(none,tiny_eagle)\"}"
    if not isinstance(raw, dict) or not raw:
        return {}, [f"{at}: a sweep step needs 'matrix', a mapping of config key to a list of values; {example}"]
    groups, keys = config_keys()
    problems: list[str] = []
    matrix: dict[str, list[str]] = {}
    oversized = False
    for key, values in raw.items():
        key = str(key)
        if key not in groups and key not in keys:
            close = difflib.get_close_matches(key[:100], sorted(groups | keys), n=1)
            hint = f"did you mean '{close[0]}'?" if close else "use a config key such as lookahead or bench.max_concurrency"
            problems.append(f"{at}: matrix key {shown(key)} is not a config key; {hint}")
            continue
        if isinstance(values, str):
            values, why = hydra_sweep(key, values)
            if why:
                problems.append(f"{at}: matrix '{key}': {why}")
                oversized = oversized or why.endswith(TOO_MANY_END)
                continue
        if isinstance(values, list) and len(values) > MAX_POINTS:
            problems.append(f"{at}: matrix '{key}' lists {len(values):,} values; a runbook sweeps at most "
                            f"{MAX_POINTS:,} points")
            oversized = True
            continue
        if not isinstance(values, list) or not values or \
                not all(isinstance(v, (str, int, float, bool)) for v in values):
            problems.append(f"{at}: matrix '{key}' must be a non-empty list of values or a Hydra sweep, "
                            f"e.g. {key}: [1, 3] or {key}: range(1,4)")
            continue
        shown_values = [value_text(v) for v in values]
        bad = next(((v, why) for v in shown_values if (why := text_problem(v, MAX_VALUE))), None)
        if bad:
            problems.append(f"{at}: matrix '{key}': the value {shown(bad[0])} {bad[1]}")
            continue
        if len(set(shown_values)) != len(shown_values):
            problems.append(f"{at}: matrix '{key}' lists a value twice; list each value once")
            continue
        if key in groups:
            options = group_options(key)
            unknown = [v for v in shown_values if v not in options and v != "null"]
            if unknown:
                problems.append(f"{at}: matrix '{key}': unknown option {shown(unknown[0])}; "
                                f"valid options: {', '.join(options)}")
                continue
        matrix[key] = shown_values
    return (TooLarge() if oversized else matrix), problems


def matrix_points(matrix: dict[str, list[str]]) -> int:
    """How many benchmark points a matrix stands for (one per combination)."""
    return math.prod(len(v) for v in matrix.values())


def points_problem(matrix: dict[str, list[str]], at: str, before: int = 0) -> str | None:
    """The one-line refusal of a matrix with too many points (``before``: points of earlier sweeps)."""
    count = matrix_points(matrix)
    if count > MAX_POINTS:
        sizes = " x ".join(str(len(v)) for v in matrix.values())
        return (f"{at}: the matrix has {count:,} combinations ({sizes}); a runbook sweeps at most {MAX_POINTS:,} "
                f"points; drop values or split it into several runbooks")
    if before + count > MAX_POINTS:
        return (f"{at}: the sweeps have {before + count:,} points together; a runbook sweeps at most "
                f"{MAX_POINTS:,}; drop values or split them into several runbooks")
    return None



# -- expanding --------------------------------------------------------------------------------------


def is_client_axis(key: str) -> bool:
    return key == CLIENT_GROUP or key.startswith(CLIENT_GROUP + ".")


def file_label(key: str, value: str) -> str:
    """A short, file-safe name for one axis value: k3, c16, tiny_eagle, parallel-tp4."""
    if key in SHORT:
        text = f"{SHORT[key]}{value}"
    elif key in ("draft", "target"):
        text = value
    else:
        text = f"{key.rsplit('.', 1)[-1]}-{value}"
    return re.sub(r"[^\w-]", "_", text, flags=re.ASCII)


def bounded_id(text: str) -> str:
    """A generated step id of at most MAX_GENERATED_ID characters (ASCII): a long one keeps its start
    and ends with a hash of the whole, so distinct ids stay distinct."""
    if len(text) <= MAX_GENERATED_ID:
        return text
    return f"{text[:MAX_GENERATED_ID - 13]}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@dataclasses.dataclass
class ServerGroup:
    """One server of a sweep and the server-side combinations it stands for."""

    overrides: list[str]  # the server-side overrides of its first combination
    combos: list[dict[str, str]]
    cfg: Any = None  # the config its first combination composes to

    def constant(self, axes: list[str]) -> list[tuple[str, str]]:
        return [(a, self.combos[0][a]) for a in axes if all(c[a] == self.combos[0][a] for c in self.combos)]


def server_groups(runbook: Runbook, step: Step, matrix: dict[str, list[str]], cli: list[str],
                  problems: list[str]) -> list[ServerGroup]:
    """Server-side combinations grouped by the server they imply, in matrix order: one composition per
    combination (linear in their number). When a combination fails to compose, the overrides it shares
    with every other one are composed alone: if they fail, that is reported once and nothing more is composed."""
    axes = [a for a in matrix if not is_client_axis(a)]
    groups: dict[tuple, ServerGroup] = {}
    found: list[str] = []
    shared = [*runbook.overrides, *step.keys.overrides]
    checked_shared = False
    for combo in itertools.product(*(matrix[a] for a in axes)):
        overrides = [f"{a}={v}" for a, v in zip(axes, combo)]
        try:
            cfg = compose_config([*shared, *overrides, *cli]).cfg
        except UserError as err:
            found += err.problems
            if not checked_shared:
                checked_shared = True
                try:
                    compose_config([*shared, *cli])
                except UserError as common:
                    found = list(common.problems)  # every combination fails the same way
                    break
            continue
        key = (tuple(serve_argv(cfg)), tuple(sorted(engine_env(cfg).items())))
        group = groups.setdefault(key, ServerGroup(overrides=overrides, combos=[], cfg=cfg))
        group.combos.append(dict(zip(axes, combo)))
    problems.extend(f"{runbook.path}: step '{step.id}': matrix: {p}" for p in dict.fromkeys(found))
    return list(groups.values())


def pin_async_scheduling(groups: list[ServerGroup]) -> str | None:
    """Where one of a sweep's servers runs a method vLLM 0.32 schedules without async scheduling
    (``config.methods``), every server gets ``serve.async_scheduling=false``, so that a speedup
    compares methods and not schedulers: the sentence that says so, None where nothing was pinned
    (every method keeps it on, or a server sets it itself)."""
    from llama4spec.config import methods

    cfgs = [g.cfg for g in groups if g.cfg is not None]
    names = [c.draft.method for c in cfgs]
    if len(cfgs) < 2 or methods.pinned_async_scheduling(names) is not False \
            or any(c.serve.async_scheduling is not None for c in cfgs):
        return None
    for g in groups:
        g.overrides.append("serve.async_scheduling=false")
    off = sorted({methods.label(n) for n in names if not methods.async_scheduling(n)})
    return (f"async scheduling pinned off on every server: vLLM 0.32 turns it off for {', '.join(off)}, so "
            f"each speedup compares methods under one scheduler (serve.async_scheduling=true|false sets it yourself)")


def expand_step(runbook: Runbook, step: Step, cli: list[str], taken: set[str], make: Make,
                problems: list[str], environ: Mapping[str, str] | None = None) -> list[Step]:
    """The serve/bench/stop steps a sweep step stands for, followed by the sweep step itself
    (which then needs every bench and lists them as its points). ``taken`` holds the step ids in use
    (the file's and those generated so far); the generated ids are added to it. Linear in the points.
    ``environ``: where an interleaved sweep reads the devices it may split (this process's).

    ``design: interleaved``: no speculation's server first, then each candidate's beside it on the
    other half of the devices, its points alternating runs with no speculation's; no speculation's
    own points last (they only collect what the pairs measured), then its stop. Where two copies do
    not fit, the sequential design, with the reason kept as the step's ``fallback``."""
    at = f"{runbook.path}: step '{step.id}'"
    keys = step.keys
    matrix = keys.matrix or {}
    server_axes = [a for a in matrix if not is_client_axis(a)]
    client_axes = [a for a in matrix if is_client_axis(a)]
    client_combos = list(itertools.product(*(matrix[a] for a in client_axes)))
    client_labels = ["-".join(file_label(a, v) for a, v in zip(client_axes, combo)) for combo in client_combos]
    out: list[Step] = []
    points: list[str] = []
    previous_stop: str | None = None
    names: set[str] = set()
    clash: str | None = None

    def new_id(text: str) -> str:
        nonlocal clash
        sid = bounded_id(text)
        if sid in taken and clash is None:
            clash = sid
        taken.add(sid)
        return sid

    def server_id(n: int, group: ServerGroup) -> tuple[str, str]:
        """A server's step id and what it serves, from the axes constant over its combinations."""
        constant = group.constant(server_axes)
        name = "-".join(file_label(a, v) for a, v in constant) or "server"
        if name in names:
            base, k = name, n
            while name in names:
                name, k = f"{base}-{k}", k + 1
        names.add(name)
        return new_id(f"{step.id}-{name}"), " ".join(f"{a}={v}" for a, v in constant) or "the sweep's server"

    groups = server_groups(runbook, step, matrix, cli, problems)
    pinned = pin_async_scheduling(groups)
    if pinned:
        step = dataclasses.replace(step, keys=dataclasses.replace(keys, async_pinned=pinned))
        keys = step.keys
    if keys.design == INTERLEAVED and keys.repeats == AUTO:
        problems.append(f"{at}: design: interleaved measures a fixed number of back-to-back pairs, and repeats is "
                        f"auto (in the runbook or by --repeats auto); give repeats: N or --repeats N (e.g. 5), "
                        f"or measure until decided with design: sequential")
    elif keys.design == INTERLEAVED and groups:
        found = _interleaving(groups, environ)
        if isinstance(found, str):
            problems.append(f"{at}: design: interleaved: {found}")
        elif found.why is not None:  # two copies do not fit: sequential, and the dry run and report say so
            step = dataclasses.replace(step, keys=dataclasses.replace(keys, fallback=found.why))
            keys = step.keys
        else:
            out, points = _interleaved(make, keys, step, groups, found.baseline, server_id, new_id, client_axes,
                                       client_combos, client_labels)
            groups, previous_stop = [], out[-1].id  # a later phase (verify_schedule) starts after them
    first_pass: list[tuple[str, list[str], list[str]]] = []  # (server id, its overrides, its points)
    for n, group in enumerate(groups, 1):
        sid, what = server_id(n, group)
        serve = make("serve", sid, needs=[previous_stop] if previous_stop else list(step.needs),
                     description=f"sweep '{step.id}': server for {what}",
                     overrides=[*keys.overrides, *group.overrides],
                     prune_from=list(points) if keys.skip_dominated else [], confidence=keys.confidence)
        out.append(serve)
        earlier = list(points)
        for combo, label in zip(client_combos, client_labels):
            bid = new_id(f"{sid}-{label}" if client_axes else f"{sid}-bench")
            out.append(_point(make, keys, bid, sid, client_axes, combo))
            points.append(bid)
        out += _settle(make, keys, new_id, sid, points[len(earlier):], earlier)
        previous_stop = new_id(f"{sid}-stop")
        out.append(make("stop", previous_stop, server=sid))
        first_pass.append((sid, [*keys.overrides, *group.overrides], points[len(earlier):]))
    if keys.repeats == AUTO and keys.revisit:  # a second start of each server the first pass left undecided
        measured = list(points)
        for sid, overrides, mine in first_pass:
            rid = new_id(f"{sid}-revisit")
            out.append(make("serve", rid, needs=[previous_stop] if previous_stop else list(step.needs),
                            description=f"sweep '{step.id}': server {sid} started again (revisit), "
                                        f"only if its points are still undecided after the first pass",
                            overrides=overrides, revisit_of=list(mine), first_pass=measured,
                            min_repeats=keys.min_repeats, max_repeats=keys.max_repeats, confidence=keys.confidence))
            out.append(make("settle", new_id(f"{rid}-settle"), server=rid, points=list(mine),
                            earlier=[q for q in measured if q not in mine], min_repeats=keys.min_repeats,
                            max_repeats=keys.max_repeats, confidence=keys.confidence, start=2, warmup=keys.warmup))
            previous_stop = new_id(f"{rid}-stop")
            out.append(make("stop", previous_stop, server=rid))
    if keys.verify_schedule:  # a second phase: the schedule derived from the points above, measured the same way
        found = _schedule_server(runbook, step, matrix, cli)
        if isinstance(found, str):
            problems.append(f"{at}: verify_schedule: {found}")
        else:
            sid = new_id(f"{step.id}-schedule")
            out.append(make("serve", sid, needs=[previous_stop] if previous_stop else list(step.needs),
                               description=f"sweep '{step.id}': the lookahead schedule derived from its points",
                               overrides=[*keys.overrides, *found], derive_from=list(points)))
            earlier = list(points)
            for combo, label in zip(client_combos, client_labels):
                bid = new_id(f"{sid}-{label}" if client_axes else f"{sid}-bench")
                out.append(_point(make, keys, bid, sid, client_axes, combo))
                points.append(bid)
            out += _settle(make, keys, new_id, sid, points[len(earlier):], earlier)
            out.append(make("stop", new_id(f"{sid}-stop"), server=sid))
    if clash is not None:
        problems.append(f"{at}: the generated step id '{clash}' is already used by another step (or made "
                        f"twice, by values that differ only in punctuation); rename the sweep step or that step")
    return [*out, dataclasses.replace(step, needs=list(dict.fromkeys([*step.needs, *points])),
                                      keys=dataclasses.replace(keys, points=points))]


@dataclasses.dataclass(frozen=True)
class Interleaving:
    """Which server is the baseline and how the devices split (``why``: they do not)."""

    baseline: int  # index among the sweep's servers
    why: str | None


def _interleaving(groups: list[ServerGroup], environ: Mapping[str, str] | None) -> Interleaving | str:
    """The baseline of an interleaved sweep and whether two of its servers fit side by side; a
    string when the sweep cannot be interleaved at all."""
    import os

    from llama4spec.engine.devices import split

    base = [i for i, g in enumerate(groups) if g.cfg is not None and not g.cfg.draft.method]
    if len(base) != 1 or len(groups) < 2:
        return ("it pairs each candidate with the one server without speculation; the matrix gives "
                f"{len(base)} such server{'s' if len(base) != 1 else ''} and {len(groups) - len(base)} "
                f"candidate{'s' if len(groups) - len(base) != 1 else ''}: sweep draft over none and a draft, "
                f"e.g. draft: [none, tiny_eagle]")
    widest = max(groups, key=lambda g: g.cfg.parallel.tensor_parallel_size * g.cfg.parallel.pipeline_parallel_size)
    cfg = widest.cfg
    if max(1, cfg.parallel.nnodes) > 1:
        return Interleaving(base[0], "its servers span nodes; two multi-node servers are not kept side by side")
    per_node = cfg.parallel.tensor_parallel_size * cfg.parallel.pipeline_parallel_size
    found = split(cfg.hardware.device, per_node, cfg.hardware.devices_per_node,
                  os.environ if environ is None else environ)
    return Interleaving(base[0], found.why)


def _interleaved(make: Make, keys: Any, step: Step, groups: list[ServerGroup], found: int, server_id, new_id,
                 client_axes: list[str], client_combos: list[tuple[str, ...]],
                 client_labels: list[str]) -> tuple[list[Step], list[str]]:
    """An interleaved sweep's steps and its points (no speculation's first); ``found``: the index of
    no speculation's server among ``groups``."""
    base = groups[found]
    base_slot, cand_slot = (1, 0) if keys.swap_devices else (0, 1)
    bsid, _ = server_id(found + 1, base)
    out = [make("serve", bsid, needs=list(step.needs), overrides=[*keys.overrides, *base.overrides], slot=base_slot,
                description=f"sweep '{step.id}': no speculation, up beside each candidate in turn (interleaved)")]
    base_points = [new_id(f"{bsid}-{label}" if client_axes else f"{bsid}-bench") for label in client_labels]
    previous, candidates = bsid, []
    for n, group in enumerate(groups, 1):
        if group is base:
            continue
        sid, what = server_id(n, group)
        out.append(make("serve", sid, needs=[previous], slot=cand_slot, beside=bsid,
                        overrides=[*keys.overrides, *group.overrides],
                        prune_from=list(candidates) if keys.skip_dominated else [], confidence=keys.confidence,
                        description=f"sweep '{step.id}': server for {what}, beside {bsid} (interleaved)"))
        for combo, label, paired in zip(client_combos, client_labels, base_points):
            bid = new_id(f"{sid}-{label}" if client_axes else f"{sid}-bench")
            point = _point(make, keys, bid, sid, client_axes, combo)
            out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, pair_with=paired,
                                                                           gap_s=keys.gap_s)))
            candidates.append(bid)
        previous = new_id(f"{sid}-stop")
        out.append(make("stop", previous, server=sid))
    for bid, combo in zip(base_points, client_combos):  # its runs come from the pairs above
        point = _point(make, keys, bid, bsid, client_axes, combo)
        out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, paired=True)))
    out.append(make("stop", new_id(f"{bsid}-stop"), server=bsid))
    return out, [*base_points, *candidates]


def _point(make: Make, keys: Any, bid: str, server: str, client_axes: list[str], combo: tuple[str, ...]) -> Step:
    """A bench step of a sweep: one client-side combination against one of its servers."""
    auto = keys.repeats == AUTO  # measured until decided: min_repeats here, the rest by the server's settle step
    return make("bench", bid, server=server, label=bid, extra_args=list(keys.extra_args),
                overrides=[f"{a}={v}" for a, v in zip(client_axes, combo)],
                repeats=keys.min_repeats if auto else keys.repeats, warmup=keys.warmup)


def _settle(make: Make, keys: Any, new_id: Callable[[str], str], server: str, mine: list[str],
            earlier: list[str]) -> list[Step]:
    """With repeats: auto, the step that gives a server's points further runs, one at a time, until
    their comparisons with the points measured before them are decided (none otherwise)."""
    if keys.repeats != AUTO or not mine:
        return []
    return [make("settle", new_id(f"{server}-settle"), server=server, points=list(mine), earlier=list(earlier),
                 min_repeats=keys.min_repeats, max_repeats=keys.max_repeats, confidence=keys.confidence)]


def _schedule_server(runbook: Runbook, step: Step, matrix: dict[str, list[str]], cli: list[str]) -> list[str] | str:
    """The overrides of the schedule-verifying server (its draft, and lookahead = the largest swept),
    or why there can be none."""
    try:
        cfg = compose_config([*runbook.overrides, *step.keys.overrides, *cli]).cfg
    except UserError:
        return "the sweep's own overrides do not compose (reported above)"
    drafts = [d for d in matrix.get("draft", [cfg.draft.name if cfg.draft.method else "none"])
              if d not in ("none", "null")]
    if len(drafts) != 1:
        return (f"needs exactly one draft in the sweep besides none (found {', '.join(drafts) or 'none'}); "
                f"a schedule is derived per draft")
    try:
        lookahead = max(int(v) for v in matrix.get("lookahead", [str(cfg.lookahead)]))
    except ValueError:
        return "the lookahead values are not whole numbers"
    return [f"draft={drafts[0]}", f"lookahead={lookahead}"]


def expand(runbook: Runbook, cli: list[str], problems: list[str], make: Make) -> Runbook:
    """The runbook with every expanding step (a sweep, a capacity search) expanded in place by its
    kind's ``expand`` (unchanged without them). The points are counted before anything is composed:
    beyond MAX_POINTS the step is refused, not expanded."""
    if not any(s.traits.expands for s in runbook.steps):
        return runbook
    taken = {s.id for s in runbook.steps}
    steps: list[Step] = []
    total = 0
    for s in runbook.steps:
        if not s.traits.expands or not s.keys.matrix:
            steps.append(s)
            continue
        too_many = points_problem(s.keys.matrix, f"{runbook.path}: step '{s.id}'", total)
        if too_many:
            problems.append(too_many)
            steps.append(s)
            continue
        total += matrix_points(s.keys.matrix)
        steps += s.kind_of.expand(runbook, s, cli, taken, make, problems)
    return dataclasses.replace(runbook, steps=steps)
