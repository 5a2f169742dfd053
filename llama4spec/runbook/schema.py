"""What a runbook file may say, and loading it with every problem reported at once.

A runbook is YAML: ``name``, ``description``, ``env``, ``overrides`` shared by all steps, and
``steps``. Each step has an ``id``, a ``kind`` and optional ``needs``; the other keys depend on
the kind (see ``STEP_KEYS``).
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from llama4spec.config.compose import MAX_OVERRIDE_CHARS, group_options
from llama4spec.config.schema import Config
from llama4spec.errors import UserError
from llama4spec.runbook.steps import KINDS

COMMON_KEYS = {"id", "kind", "needs", "description"}
STEP_KEYS: dict[str, set[str]] = {
    "serve": {"overrides"},
    "bench": {"server", "url", "overrides", "label", "extra_args", "repeats", "warmup"},
    "stop": {"server"},
    "offline": {"overrides"},
    "compare": {"baseline", "candidate"},
    "sweep": {"matrix", "overrides", "extra_args", "verify_schedule", "repeats", "warmup"},
    "fetch": {"overrides"},
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "serve": (),
    "bench": (),
    "stop": ("server",),
    "offline": (),
    "compare": ("baseline", "candidate"),
    "sweep": (),
    "fetch": (),
}
TOP_KEYS = {"name", "description", "env", "overrides", "steps"}
STEP_ID = re.compile(r"[A-Za-z][\w-]*")  # whole string (fullmatch): it names a directory
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Bounds on what a runbook may make this tool read, build or plan; each refusal is one line.
MAX_BYTES = 1 << 20  # the file: read at most this much (1 MiB)
MAX_NODES = 100_000  # YAML values, counting every alias expanded (a "billion laughs" stops here)
MAX_DEPTH = 64  # nesting of mappings and lists
MAX_STEPS = 1_000  # steps written in the file
MAX_POINTS = 1_000  # benchmark points of all sweep steps together (each is a bench step, planned with Hydra)
MAX_ID = 64  # runbook names and step ids: they become directories
MAX_LABEL = 100  # a bench label (a table row, vLLM's --label)
MAX_TEXT = 4_096  # any other string: an extra argument, a URL, a file reference
MAX_VALUE = 200  # a matrix value (it becomes part of generated step ids)
MAX_REPEATS = 100  # counted runs per benchmark point
MAX_WARMUP = 10_000  # warm-up requests before a point's counted runs
REPEATS = {"bench": 1, "sweep": 3}  # counted runs per point when a step does not say


@dataclass
class Step:
    id: str
    kind: str
    needs: list[str] = field(default_factory=list)
    description: str = ""
    overrides: list[str] = field(default_factory=list)
    server: str | None = None  # bench, stop: the id of a serve step
    url: str | None = None  # bench: a server that runs already (instead of a serve step)
    label: str | None = None  # bench: the name in tables (default: the step id)
    extra_args: list[str] = field(default_factory=list)  # bench: more `vllm bench serve` flags
    baseline: str | None = None  # compare: a bench step id or a saved JSON file
    candidate: str | None = None
    matrix: dict[str, list[str]] | None = None  # sweep: config key -> values (llama4spec.sweep)
    points: list[str] = field(default_factory=list)  # sweep: the bench steps it expands to
    verify_schedule: bool = False  # sweep: also measure the lookahead schedule derived from its points
    derive_from: list[str] = field(default_factory=list)  # serve (generated): derive its schedule from these points
    repeats: int = 1  # bench, sweep (each point): counted `vllm bench serve` runs against the same server
    warmup: int = 0  # bench, sweep (each point): warm-up requests in an unrecorded run before the counted ones


@dataclass
class Runbook:
    name: str
    path: Path
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def step(self, step_id: str) -> Step:
        """The (first) step with this id; an index kept while ``steps`` is the same list of that length,
        so planning a runbook of n steps stays linear."""
        index = self.__dict__.get("_index")
        if index is None or index[0] is not self.steps or index[1] != len(self.steps):
            by_id: dict[str, Step] = {}
            for s in self.steps:
                by_id.setdefault(s.id, s)
            index = self.__dict__["_index"] = (self.steps, len(self.steps), by_id)
        found = index[2].get(step_id)
        if found is None or found.id != step_id:  # changed in place since: look again
            return next(s for s in self.steps if s.id == step_id)
        return found


GROUPS_WITHOUT_FIELD = ("experiment",)


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


def plain(text: str, limit: int = 300) -> str:
    """Text as it may appear in a one-line message: control characters escaped, at most ``limit`` characters."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit + 1])
    return out[:limit] + "…" if len(out) > limit else out


def shown(value: Any, limit: int = 60) -> str:
    """A user's value in a one-line message: a string quoted, anything else as Python writes it."""
    return f"'{plain(value, limit)}'" if isinstance(value, str) else plain(repr(value), limit)


def _text_problem(value: str, limit: int) -> str | None:
    """Why a user string cannot be used as is (None when it can)."""
    if len(value) > limit:
        return f"is {len(value):,} characters long; at most {limit:,}"
    if not value.isprintable():
        return "contains a control character (a newline, tab, NUL, ...); write it on one line"
    return None


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "null" if v is None else str(v)


def hydra_sweep(key: str, text: str) -> tuple[list[str], str | None]:
    """A matrix value written as a string in Hydra's sweep syntax (``range(1,8)``, ``1,3,5``,
    ``choice(none,tiny_eagle)``; a plain value is one value), expanded by Hydra's own override parser;
    (values, None) or ([], why not) in one line."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    example = "write a list, or a Hydra sweep such as range(1,8), \"1,3,5\" or choice(none,tiny_eagle)"
    why = _text_problem(text, MAX_OVERRIDE_CHARS)
    if why:
        return [], f"{shown(text)} {why}"
    try:
        override = OverridesParser.create().parse_overrides([f"{key}={text}"])[0]
        if not override.is_sweep_override():
            if isinstance(override.value(), (list, dict)):
                return [], f"{shown(text)} is not a sweep; {example}"
            return [override.get_value_element_as_str()], None
        values = list(itertools.islice(override.sweep_string_iterator(), MAX_POINTS + 1))
    except Exception as err:  # Hydra's OverrideParseException, HydraException (interval, glob): one line
        detail = plain(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__, 120)
        return [], f"cannot expand {shown(text)} with Hydra's sweep syntax ({detail}); {example}"
    if not values:
        return [], f"{shown(text)} gives no value; {example}"
    if len(values) > MAX_POINTS:
        return [], f"{shown(text)} gives more than {MAX_POINTS:,} values; a runbook sweeps at most {MAX_POINTS:,} points"
    return values, None


def check_matrix(raw: Any, at: str) -> tuple[dict[str, list[str]], list[str]]:
    """The matrix as {axis: [override values]} and every problem found in it. A value may be a list or
    a string in Hydra's sweep syntax (``hydra_sweep``)."""
    example = "e.g. matrix: {lookahead: [1, 3], bench.max_concurrency: \"1,4\", draft: \"choice(none,tiny_eagle)\"}"
    if not isinstance(raw, dict) or not raw:
        return {}, [f"{at}: a sweep step needs 'matrix', a mapping of config key to a list of values; {example}"]
    groups, keys = config_keys()
    problems: list[str] = []
    matrix: dict[str, list[str]] = {}
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
                continue
        if not isinstance(values, list) or not values or \
                not all(isinstance(v, (str, int, float, bool)) for v in values):
            problems.append(f"{at}: matrix '{key}' must be a non-empty list of values or a Hydra sweep, "
                            f"e.g. {key}: [1, 3] or {key}: range(1,4)")
            continue
        shown_values = [_value(v) for v in values]
        bad = next(((v, why) for v in shown_values if (why := _text_problem(v, MAX_VALUE))), None)
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
    return matrix, problems


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


def _str_list(value: Any, where: str, problems: list[str], limit: int = MAX_TEXT) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float, bool)) for v in value):
        problems.append(f"{where}: expected a list of strings, e.g. [lookahead=5]")
        return []
    items = []
    for i, v in enumerate(value, 1):
        text = str(v)
        why = _text_problem(text, limit)
        if why:
            problems.append(f"{where}: item {i} {shown(text)} {why}")
        else:
            items.append(text)
    return items


def _close(key: str, allowed: set[str]) -> str:
    match = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f"did you mean '{match[0]}'?" if match else f"allowed: {', '.join(sorted(allowed))}"


def _str_field(raw: dict, key: str, at: str, problems: list[str], limit: int = MAX_TEXT) -> str | None:
    """An optional string setting of a step (a step id, URL or file): a printable, bounded string."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        problems.append(f"{at}: '{key}' must be a non-empty string (got {shown(value)})")
        return None
    why = _text_problem(value, limit)
    if why:
        problems.append(f"{at}: '{key}' {shown(value)} {why}")
        return None
    return value


def _label(raw: dict, at: str, problems: list[str]) -> str | None:
    value = raw.get("label")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
        problems.append(f"{at}: 'label' must be a short text such as eagle-k3 (got {shown(value)})")
        return None
    label = str(value)
    why = _text_problem(label, MAX_LABEL) or ("starts with '-' (it is passed as vLLM's --label)"
                                              if label.startswith("-") else None)
    if why:
        problems.append(f"{at}: label {shown(label)} {why}")
        return None
    return label


def _env(raw: Any, where: str, problems: list[str]) -> dict[str, str]:
    """The runbook's environment: NAME: text. Numbers are written as text; null, true/false, lists and
    mappings are refused (YAML reads yes/no/on/off as booleans too, so those values need quotes)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{where}: 'env' must be a mapping NAME: value, e.g. env: {{VLLM_CPU_KVCACHE_SPACE: \"1\"}}")
        return {}
    env: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            problems.append(f"{where}: env name {shown(name)} is not a variable name; use letters, digits and '_', "
                            f"not starting with a digit")
            continue
        if value is None:
            problems.append(f'{where}: env {name} is null; an environment value is text: write {name}: "" for an '
                            f'empty one, or drop {name}')
            continue
        if isinstance(value, bool):
            problems.append(f'{where}: env {name} is a boolean (YAML reads true/false/yes/no/on/off so); an '
                            f'environment value is text: quote the value you mean, e.g. {name}: "1"')
            continue
        if not isinstance(value, (str, int, float)):
            kind = {list: "a list", dict: "a mapping"}.get(type(value), f"a {type(value).__name__}")
            problems.append(f'{where}: env {name} is {kind}; an environment value is text, e.g. {name}: "1"')
            continue
        text = str(value)
        if "\x00" in text:
            problems.append(f"{where}: env {name} contains a NUL character; an environment value cannot")
            continue
        env[name] = text
    return env


def parse(data: Any, path: Path) -> tuple[Runbook | None, list[str]]:
    """Check the shape of a loaded runbook; returns the runbook (if usable) and every problem found."""
    where = plain(str(path))
    problems: list[str] = []
    if not isinstance(data, dict):
        return None, [f"{where}: a runbook is a YAML mapping with name, steps, ...; got {type(data).__name__}"]
    for key in data:
        if key not in TOP_KEYS:
            problems.append(f"{where}: unknown key {shown(key)}; {_close(str(key)[:100], TOP_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: 'name' is missing; add name: <short name> (it names runs/<name>/)")
        name = path.stem
    elif not STEP_ID.fullmatch(name) or len(name) > MAX_ID:
        problems.append(f"{where}: name {shown(name)} must be letters, digits, '_' or '-', starting with a letter, "
                        f"at most {MAX_ID} characters (it becomes a directory)")
        name = path.stem
    env = _env(data.get("env"), where, problems)
    overrides = _str_list(data.get("overrides"), f"{where}: overrides", problems, MAX_OVERRIDE_CHARS)
    runbook = Runbook(name=name, path=path, description=str(data.get("description") or "").strip(),
                      env=env, overrides=overrides)
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        problems.append(f"{where}: 'steps' must be a non-empty list of steps (each with id and kind)")
        steps = []
    elif len(steps) > MAX_STEPS:
        problems.append(f"{where}: {len(steps):,} steps; a runbook has at most {MAX_STEPS:,} "
                        f"(a sweep step stands for many)")
        steps = []
    seen: set[str] = set()
    points = 0
    for i, raw in enumerate(steps, 1):
        at = f"{where}: step {i}"
        if not isinstance(raw, dict):
            problems.append(f"{at}: expected a mapping with id and kind")
            continue
        step_id, kind = raw.get("id"), raw.get("kind")
        if not isinstance(step_id, str) or not STEP_ID.fullmatch(step_id) or len(step_id) > MAX_ID:
            problems.append(f"{at}: 'id' must be a name of letters, digits, '_' or '-', starting with a letter, "
                            f"at most {MAX_ID} characters (got {shown(step_id)})")
            step_id = f"#{i}"
        elif step_id in seen:
            problems.append(f"{at}: duplicate step id '{step_id}'; step ids must be unique")
        seen.add(step_id)
        at = f"{where}: step '{step_id}'"
        if not isinstance(kind, str) or kind not in KINDS:
            problems.append(f"{at}: kind {shown(kind)} is not one of {', '.join(KINDS)}")
            continue
        allowed = COMMON_KEYS | STEP_KEYS[kind]
        for key in raw:
            if key not in allowed:
                problems.append(f"{at}: unknown key {shown(key)} for a {kind} step; {_close(str(key)[:100], allowed)}")
        matrix = None
        if kind == "sweep":
            matrix, found = check_matrix(raw.get("matrix"), at)
            problems.extend(found)
            too_many = points_problem(matrix, at, points) if matrix else None
            if too_many:
                problems.append(too_many)
                matrix = None  # never expanded
            elif matrix:
                points += matrix_points(matrix)
        for key in REQUIRED[kind]:
            if not isinstance(raw.get(key), str) or not raw.get(key):
                problems.append(f"{at}: a {kind} step needs '{key}'")
        runbook.steps.append(Step(
            id=step_id,
            kind=kind,
            needs=_str_list(raw.get("needs"), f"{at}: needs", problems, MAX_ID),
            description=str(raw.get("description") or ""),
            overrides=_str_list(raw.get("overrides"), f"{at}: overrides", problems, MAX_OVERRIDE_CHARS),
            server=_str_field(raw, "server", at, problems, MAX_ID),
            url=_str_field(raw, "url", at, problems),
            label=_label(raw, at, problems),
            extra_args=_str_list(raw.get("extra_args"), f"{at}: extra_args", problems),
            baseline=_str_field(raw, "baseline", at, problems),
            candidate=_str_field(raw, "candidate", at, problems),
            matrix=matrix,
            verify_schedule=_flag(raw, "verify_schedule", at, problems),
            repeats=_count(raw, "repeats", REPEATS.get(kind, 1), 1, MAX_REPEATS, at, problems),
            warmup=_count(raw, "warmup", 0, 0, MAX_WARMUP, at, problems),
        ))
        if kind in ("bench", "sweep"):
            problems.extend(warmup_flag_problems(runbook.steps[-1].extra_args, at))
    return runbook, problems


def _count(raw: dict, key: str, default: int, low: int, high: int, at: str, problems: list[str]) -> int:
    """A whole number ``key`` between ``low`` and ``high`` (``default`` when absent)."""
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{at}: '{key}' must be a whole number from {low} to {high} (got {shown(value)})")
        return default
    return value


def with_measurement(runbook: Runbook, repeats: int | None = None, warmup: int | None = None) -> Runbook:
    """The runbook with every bench and sweep step's ``repeats`` / ``warmup`` replaced (the command
    line's --repeats / --warmup); UserError when a value is out of bounds."""
    check_measurement(repeats, warmup)
    if repeats is None and warmup is None:
        return runbook
    steps = [dataclasses.replace(s, repeats=s.repeats if repeats is None else repeats,
                                 warmup=s.warmup if warmup is None else warmup)
             if s.kind in ("bench", "sweep") else s for s in runbook.steps]
    return dataclasses.replace(runbook, steps=steps)


def check_measurement(repeats: int | None, warmup: int | None) -> None:
    """--repeats / --warmup from a command line within their bounds; UserError naming each that is not."""
    problems = [f"{name} {value}: must be a whole number from {low} to {high}"
                for name, value, low, high in (("--repeats", repeats, 1, MAX_REPEATS), ("--warmup", warmup, 0, MAX_WARMUP))
                if value is not None and not low <= value <= high]
    if problems:
        raise UserError(*problems)


def warmup_flag_problems(extra_args: list[str], at: str) -> list[str]:
    """--num-warmups in a step's extra_args: its requests would be counted; the step's warmup: is not."""
    if any(a == "--num-warmups" or a.startswith("--num-warmups=") for a in extra_args):
        return [f"{at}: extra_args: --num-warmups sends warm-up requests inside the counted run, so they land in "
                f"the acceptance counters; drop it and set 'warmup: N' on the step (an unrecorded run of N requests "
                f"before the counted ones)"]
    return []


def _flag(raw: dict, key: str, at: str, problems: list[str]) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        problems.append(f"{at}: '{key}' must be true or false (got {value!r})")
        return False
    return value


class _Refused(yaml.MarkedYAMLError):
    """A runbook this tool will not build: too large, too deep, a repeated key (reported with its line)."""


class _Loader(yaml.SafeLoader):
    """yaml.SafeLoader, bounded: at most MAX_DEPTH levels, MAX_NODES values with every alias expanded
    (counted while composing, so an alias bomb stops before it is built), no recursive aliases, no
    repeated keys; a value Python cannot build (a 30 February, an integer of 5,000 digits) is a YAML
    error at its line instead of a ValueError."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise _Refused(None, None, f"the alias *{event.anchor} is inside the value it names (a structure "
                               f"that contains itself); write the value out", event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(None, None, f"nested more than {MAX_DEPTH} levels deep; a runbook needs a few",
                           self.peek_event().start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes[id(child)] for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        if size > MAX_NODES:
            raise _Refused(None, None, f"this value expands to more than {MAX_NODES:,} values (through anchors and "
                           f"aliases: &name, *name); a runbook is at most {MAX_NODES:,}", node.start_mark)
        if isinstance(node, yaml.MappingNode):
            self._check_keys(node)
        self._sizes[id(node)] = size
        return node

    def _check_keys(self, node: yaml.MappingNode) -> None:
        """Refuse a key written twice (YAML would keep the last one silently). Checked on the node as
        written: merge keys (<<) may repeat a key on purpose and are left alone."""
        first: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            try:
                earlier = first.setdefault(key, key_node.start_mark)
            except TypeError:
                continue
            if earlier is not key_node.start_mark:
                raise _Refused(None, None, f"the key {shown(key)} is repeated (first at line {earlier.line + 1}); "
                               f"a mapping lists each key once", key_node.start_mark)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError, TypeError) as err:
            value = node.value if isinstance(node.value, str) else node.tag
            raise ConstructorError(None, None, f"cannot read the value {shown(value)} ({plain(str(err), 200)})",
                                   node.start_mark) from None


def _read(path: Path) -> tuple[str | None, str | None]:
    """(text, problem): a regular file of at most MAX_BYTES, UTF-8. Never reads more than MAX_BYTES + 1
    bytes, never opens a device or FIFO for reading."""
    where = plain(str(path))
    try:
        info = path.stat()
    except FileNotFoundError:
        return None, f"{where}: no such runbook file; see runbooks/ for the shipped ones"
    except (OSError, ValueError) as err:
        return None, f"{where}: cannot read it ({getattr(err, 'strerror', None) or err})"
    too_big = (f"{where}: the file is larger than {MAX_BYTES // 1024:,} KiB; a runbook is a short YAML file "
               f"(a sweep step stands for many points)")
    if stat.S_ISDIR(info.st_mode):
        return None, f"{where}: is a directory; give a runbook YAML file (see runbooks/)"
    if not stat.S_ISREG(info.st_mode):
        return None, f"{where}: is not a regular file (a device, pipe or socket); give a runbook YAML file"
    if info.st_size > MAX_BYTES:
        return None, too_big
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        return None, f"{where}: cannot read it ({err.strerror})"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # replaced since the check
            return None, f"{where}: is not a regular file; give a runbook YAML file"
        try:
            data = f.read(MAX_BYTES + 1)
        except OSError as err:
            return None, f"{where}: cannot read it ({err.strerror})"
    if len(data) > MAX_BYTES:
        return None, too_big
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        return None, (f"{where}: not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}); a runbook is a "
                      f"YAML text file, saved as UTF-8")


def _yaml_problem(where: str, text: str, err: Exception) -> str:
    """One line for any YAML error, with the line when known."""
    if isinstance(err, _Refused):
        mark = err.problem_mark
        return f"{where}: line {mark.line + 1}: {err.problem}" if mark else f"{where}: {err.problem}"
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, max(err.position, 0)) + 1
        return (f"{where}: not a text file: character #x{err.character:04x} at line {line} is not allowed in YAML; "
                f"a runbook is a YAML text file")
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        what = err.problem or err.context or "not valid YAML"
        at = f" at line {mark.line + 1}" if mark else ""
        return f"{where}: not valid YAML{at} ({plain(what, 200)}); fix the syntax"
    first = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return f"{where}: not valid YAML ({plain(first, 200)}); fix the syntax"


def load(path: Path) -> tuple[Runbook | None, list[str]]:
    """Read and check a runbook file; returns every problem at once (a missing file is one)."""
    path = Path(path)
    text, problem = _read(path)
    if problem or text is None:
        return None, [problem or f"{path}: cannot read it"]
    where = plain(str(path))
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        return None, [_yaml_problem(where, text, err)]
    except RecursionError:
        return None, [f"{where}: nested too deeply; a runbook needs a few levels"]
    return parse(data, path)
