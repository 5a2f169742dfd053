"""A matrix (a sweep's, a capacity step's): checking it, grouping its combinations by server, and
expanding every expanding step of a runbook by its kind (a sweep's own expansion: ``sweep.expand``).

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
from typing import Any, Callable

from llama4spec.config.compose import MAX_OVERRIDE_CHARS, compose_config, group_options
from llama4spec.config.hydra_adapter import choices_of, parse_override, range_of
from llama4spec.config.schema import Config
from llama4spec.engine.args import engine_env, serve_argv
from llama4spec.errors import UserError
from llama4spec.runbook.fields import plain, shown, text_problem
from llama4spec.runbook.spec import Runbook, Step

Make = Callable[..., Step]  # steps.make: a step of a kind with its keys

CLIENT_GROUP = "bench"
SHORT = {"lookahead": "k", "bench.max_concurrency": "c", "bench.num_prompts": "n"}
MAX_GENERATED_ID = 120  # a generated step id names a directory: well below a file name's 255 bytes
MAX_POINTS = 1_000  # benchmark points of all sweep steps together (each is a bench step, planned with Hydra)
MAX_VALUE = 200  # a matrix value (it becomes part of generated step ids)


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


def claim_ids(ids: list[str], taken: set[str], at: str, kind: str, problems: list[str]) -> bool:
    """Whether a step's generated ids are all free: then taken (added to ``taken``); else the first
    one already used is a problem (naming the ``kind`` of step to rename) and nothing is taken."""
    clash = next((i for i in ids if i in taken), None)
    if clash:
        problems.append(f"{at}: the generated step id '{clash}' is already used by another step; rename the "
                        f"{kind} step or that step")
        return False
    taken.update(ids)
    return True


@dataclasses.dataclass
class ServerGroup:
    """One server of a sweep and the server-side combinations it stands for."""

    overrides: list[str]  # the server-side overrides of its first combination
    combos: list[dict[str, str]]
    cfg: Any = None  # the config its first combination composes to

    def constant(self, axes: list[str]) -> list[tuple[str, str]]:
        return [(a, self.combos[0][a]) for a in axes if all(c[a] == self.combos[0][a] for c in self.combos)]


def shared_config(runbook: Runbook, step: Step, cli: list[str], problems: list[str]) -> Any | None:
    """The config every server of an expanding ``step`` shares (the runbook's overrides, the step's
    and the command line's); None when they do not compose, their problems added, naming the step."""
    try:
        return compose_config([*runbook.overrides, *step.keys.overrides, *cli]).cfg
    except UserError as err:
        problems.extend(f"{runbook.path}: step '{step.id}': {x}" for x in err.problems)
        return None


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
        made = s.kind_of.expand(runbook, s, cli, taken, make, problems)
        steps += [m if m.id == s.id else dataclasses.replace(m, part_of=s.id) for m in made]
    return dataclasses.replace(runbook, steps=steps)
