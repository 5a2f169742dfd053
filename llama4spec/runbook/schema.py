"""What a runbook file may say, and loading it with every problem reported at once.

A runbook is YAML: ``name``, ``description``, ``env``, ``overrides`` shared by all steps, and
``steps``. Each step has an ``id``, a ``kind`` and optional ``needs``; the other keys depend on
the kind (see ``STEP_KEYS``).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from llama4spec.config.compose import group_options
from llama4spec.config.schema import Config
from llama4spec.errors import UserError
from llama4spec.runbook.steps import KINDS

COMMON_KEYS = {"id", "kind", "needs", "description"}
STEP_KEYS: dict[str, set[str]] = {
    "serve": {"overrides"},
    "bench": {"server", "url", "overrides", "label", "extra_args"},
    "stop": {"server"},
    "offline": {"overrides"},
    "compare": {"baseline", "candidate"},
    "sweep": {"matrix", "overrides", "extra_args"},
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "serve": (),
    "bench": (),
    "stop": ("server",),
    "offline": (),
    "compare": ("baseline", "candidate"),
    "sweep": (),
}
TOP_KEYS = {"name", "description", "env", "overrides", "steps"}
STEP_ID = re.compile(r"^[A-Za-z][\w-]*$")


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


@dataclass
class Runbook:
    name: str
    path: Path
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)


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


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "null" if v is None else str(v)


def check_matrix(raw: Any, at: str) -> tuple[dict[str, list[str]], list[str]]:
    """The matrix as {axis: [override values]} and every problem found in it."""
    example = "e.g. matrix: {lookahead: [1, 3], bench.max_concurrency: [1, 4], draft: [none, tiny_eagle]}"
    if not isinstance(raw, dict) or not raw:
        return {}, [f"{at}: a sweep step needs 'matrix', a mapping of config key to a list of values; {example}"]
    groups, keys = config_keys()
    problems: list[str] = []
    matrix: dict[str, list[str]] = {}
    for key, values in raw.items():
        key = str(key)
        if key not in groups and key not in keys:
            close = difflib.get_close_matches(key, sorted(groups | keys), n=1)
            hint = f"did you mean '{close[0]}'?" if close else "use a config key such as lookahead or bench.max_concurrency"
            problems.append(f"{at}: matrix key '{key}' is not a config key; {hint}")
            continue
        if not isinstance(values, list) or not values or \
                not all(isinstance(v, (str, int, float, bool)) for v in values):
            problems.append(f"{at}: matrix '{key}' must be a non-empty list of values, e.g. {key}: [1, 3]")
            continue
        shown = [_value(v) for v in values]
        if len(set(shown)) != len(shown):
            problems.append(f"{at}: matrix '{key}' lists a value twice; list each value once")
            continue
        if key in groups:
            options = group_options(key)
            unknown = [v for v in shown if v not in options and v != "null"]
            if unknown:
                problems.append(f"{at}: matrix '{key}': unknown option '{unknown[0]}'; "
                                f"valid options: {', '.join(options)}")
                continue
        matrix[key] = shown
    return matrix, problems


def _str_list(value: Any, where: str, problems: list[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float, bool)) for v in value):
        problems.append(f"{where}: expected a list of strings, e.g. [lookahead=5]")
        return []
    return [str(v) for v in value]


def _close(key: str, allowed: set[str]) -> str:
    import difflib

    match = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f"did you mean '{match[0]}'?" if match else f"allowed: {', '.join(sorted(allowed))}"


def parse(data: Any, path: Path) -> tuple[Runbook | None, list[str]]:
    """Check the shape of a loaded runbook; returns the runbook (if usable) and every problem found."""
    where = str(path)
    problems: list[str] = []
    if not isinstance(data, dict):
        return None, [f"{where}: a runbook is a YAML mapping with name, steps, ...; got {type(data).__name__}"]
    for key in data:
        if key not in TOP_KEYS:
            problems.append(f"{where}: unknown key '{key}'; {_close(str(key), TOP_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: 'name' is missing; add name: <short name> (it names runs/<name>/)")
        name = path.stem
    elif not STEP_ID.match(name):
        problems.append(f"{where}: name '{name}' must be letters, digits, '_' or '-' (it becomes a directory)")
    env = data.get("env") or {}
    if not isinstance(env, dict):
        problems.append(f"{where}: 'env' must be a mapping NAME: value")
        env = {}
    overrides = _str_list(data.get("overrides"), f"{where}: overrides", problems)
    runbook = Runbook(name=name, path=path, description=str(data.get("description") or "").strip(),
                      env={str(k): str(v) for k, v in env.items()}, overrides=overrides)
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        problems.append(f"{where}: 'steps' must be a non-empty list of steps (each with id and kind)")
        steps = []
    seen: set[str] = set()
    for i, raw in enumerate(steps, 1):
        at = f"{where}: step {i}"
        if not isinstance(raw, dict):
            problems.append(f"{at}: expected a mapping with id and kind")
            continue
        step_id, kind = raw.get("id"), raw.get("kind")
        if not isinstance(step_id, str) or not STEP_ID.match(step_id):
            problems.append(f"{at}: 'id' must be a name of letters, digits, '_' or '-' (got {step_id!r})")
            step_id = f"#{i}"
        elif step_id in seen:
            problems.append(f"{at}: duplicate step id '{step_id}'; step ids must be unique")
        seen.add(step_id)
        at = f"{where}: step '{step_id}'"
        if kind not in KINDS:
            problems.append(f"{at}: kind {kind!r} is not one of {', '.join(KINDS)}")
            continue
        allowed = COMMON_KEYS | STEP_KEYS[kind]
        for key in raw:
            if key not in allowed:
                problems.append(f"{at}: unknown key '{key}' for a {kind} step; {_close(str(key), allowed)}")
        matrix = None
        if kind == "sweep":
            matrix, found = check_matrix(raw.get("matrix"), at)
            problems.extend(found)
        for key in REQUIRED[kind]:
            if not isinstance(raw.get(key), str) or not raw.get(key):
                problems.append(f"{at}: a {kind} step needs '{key}'")
        runbook.steps.append(Step(
            id=step_id,
            kind=kind,
            needs=_str_list(raw.get("needs"), f"{at}: needs", problems),
            description=str(raw.get("description") or ""),
            overrides=_str_list(raw.get("overrides"), f"{at}: overrides", problems),
            server=raw.get("server") if isinstance(raw.get("server"), str) else None,
            url=raw.get("url") if isinstance(raw.get("url"), str) else None,
            label=str(raw["label"]) if raw.get("label") is not None else None,
            extra_args=_str_list(raw.get("extra_args"), f"{at}: extra_args", problems),
            baseline=raw.get("baseline") if isinstance(raw.get("baseline"), str) else None,
            candidate=raw.get("candidate") if isinstance(raw.get("candidate"), str) else None,
            matrix=matrix,
        ))
    return runbook, problems


def load(path: Path) -> tuple[Runbook | None, list[str]]:
    """Read and check a runbook file; returns every problem at once (a missing file is one)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None, [f"{path}: no such runbook file; see runbooks/ for the shipped ones"]
    except OSError as err:
        return None, [f"{path}: cannot read it ({err.strerror})"]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        return None, [f"{path}: not valid YAML{at} ({getattr(err, 'problem', None) or err}); fix the syntax"]
    return parse(data, path)


def load_or_raise(path: Path) -> Runbook:
    runbook, problems = load(path)
    if problems or runbook is None:
        raise UserError(*problems)
    return runbook
