"""What a runbook file may say, and loading it with every problem reported at once.

A runbook is YAML: ``name``, ``description``, ``env``, ``overrides`` shared by all steps, an
optional ``budget`` (``cost.budget``), and ``steps``. Each step has an ``id``, a ``kind`` and optional
``needs`` and ``budget``; the other keys are its kind's (``steps/<kind>.py``: ``Keys``), read by ``runbook.fields``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from llama4spec.config.compose import MAX_OVERRIDE_CHARS
from llama4spec.cost.budget import budget_key
from llama4spec.errors import UserError
from llama4spec.runbook import steps as step_kinds
from llama4spec.runbook.fields import (AUTO, MAX_ID, MAX_REPEATS, MAX_WARMUP, close, plain, read_keys, runbook_keys, shown,
                                       str_list)
from llama4spec.runbook.rundir import STEP_ID  # a step id names a directory
from llama4spec.runbook.spec import Runbook, Step
from llama4spec.runbook.steps import KINDS
from llama4spec.runbook.yamlsafe import read_yaml

COMMON_KEYS = {"id", "kind", "needs", "description", "budget"}
TOP_KEYS = {"name", "description", "env", "overrides", "steps", "budget"}
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_STEPS = 1_000  # steps written in the file


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


def _step(raw: Any, i: int, where: str, seen: set[str], state: dict[str, Any], problems: list[str]) -> Step | None:
    """One step as written: its id, kind and common keys here, the rest by its kind."""
    at = f"{where}: step {i}"
    if not isinstance(raw, dict):
        problems.append(f"{at}: expected a mapping with id and kind")
        return None
    step_id, kind_name = raw.get("id"), raw.get("kind")
    if not isinstance(step_id, str) or not STEP_ID.fullmatch(step_id) or len(step_id) > MAX_ID:
        problems.append(f"{at}: 'id' must be a name of letters, digits, '_' or '-', starting with a letter, "
                        f"at most {MAX_ID} characters (got {shown(step_id)})")
        step_id = f"#{i}"
    elif step_id in seen:
        problems.append(f"{at}: duplicate step id '{step_id}'; step ids must be unique")
    seen.add(step_id)
    at = f"{where}: step '{step_id}'"
    if not isinstance(kind_name, str) or kind_name not in KINDS:
        problems.append(f"{at}: kind {shown(kind_name)} is not one of {', '.join(KINDS)}")
        return None
    kind = step_kinds.kind(kind_name)
    allowed = COMMON_KEYS | runbook_keys(kind.Keys)
    for key in raw:
        if key not in allowed:
            problems.append(f"{at}: unknown key {shown(key)} for a {kind_name} step; {close(str(key)[:100], allowed)}")
    for key in kind.required:
        if not isinstance(raw.get(key), str) or not raw.get(key):
            problems.append(f"{at}: a {kind_name} step needs '{key}'")
    needs = str_list(raw.get("needs"), f"{at}: needs", problems, MAX_ID)
    keys = read_keys(kind.Keys, raw, at, problems)
    kind.check(keys, at, problems, state)
    problems.extend(kind.conflicts(keys, at, frozenset(map(str, raw))))
    return Step(id=step_id, kind_of=kind, keys=keys, needs=needs, description=str(raw.get("description") or ""),
                budget=budget_key(raw.get("budget"), at, problems))


def parse(data: Any, path: Path) -> tuple[Runbook | None, list[str]]:
    """Check the shape of a loaded runbook; returns the runbook (if usable) and every problem found."""
    where = plain(str(path))
    problems: list[str] = []
    if not isinstance(data, dict):
        return None, [f"{where}: a runbook is a YAML mapping with name, steps, ...; got {type(data).__name__}"]
    for key in data:
        if key not in TOP_KEYS:
            problems.append(f"{where}: unknown key {shown(key)}; {close(str(key)[:100], TOP_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: 'name' is missing; add name: <short name> (it names runs/<name>/)")
        name = path.stem
    elif not STEP_ID.fullmatch(name) or len(name) > MAX_ID:
        problems.append(f"{where}: name {shown(name)} must be letters, digits, '_' or '-', starting with a letter, "
                        f"at most {MAX_ID} characters (it becomes a directory)")
        name = path.stem
    env = _env(data.get("env"), where, problems)
    overrides = str_list(data.get("overrides"), f"{where}: overrides", problems, MAX_OVERRIDE_CHARS)
    runbook = Runbook(name=name, path=path, description=str(data.get("description") or "").strip(),
                      env=env, overrides=overrides, budget=budget_key(data.get("budget"), where, problems))
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        problems.append(f"{where}: 'steps' must be a non-empty list of steps (each with id and kind)")
        steps = []
    elif len(steps) > MAX_STEPS:
        problems.append(f"{where}: {len(steps):,} steps; a runbook has at most {MAX_STEPS:,} "
                        f"(a sweep step stands for many)")
        steps = []
    seen: set[str] = set()
    state: dict[str, Any] = {}  # what the kinds count across steps (a sweep's points)
    for i, raw in enumerate(steps, 1):
        step = _step(raw, i, where, seen, state, problems)
        if step is not None:
            runbook.steps.append(step)
    if state.get("too_large"):  # a count over its bound: refused before anything is composed
        return None, problems
    return runbook, problems


def with_measurement(runbook: Runbook, repeats: int | str | None = None, warmup: int | None = None) -> Runbook:
    """The runbook with every bench and sweep step's ``repeats`` / ``warmup`` replaced (the command
    line's --repeats / --warmup; ``auto`` reaches the steps that measure until decided, sweeps, and
    leaves a bench step its own); UserError when a value is out of bounds."""
    check_measurement(repeats, warmup)
    if repeats is None and warmup is None:
        return runbook

    def measured(s: Step) -> Step:
        keep = repeats is None or (repeats == AUTO and not s.traits.decides)
        return dataclasses.replace(s, keys=dataclasses.replace(s.keys, repeats=s.keys.repeats if keep else repeats,
                                                              warmup=s.keys.warmup if warmup is None else warmup))

    steps = [measured(s) if s.traits.measures else s for s in runbook.steps]
    given = " ".join(f"{flag} {value}" for flag, value in (("--repeats", repeats), ("--warmup", warmup))
                     if value is not None)
    problems = [p for old, new in zip(runbook.steps, steps) if new is not old
                for p in new.kind_of.conflicts(new.keys, f"{given} on step '{new.id}'", frozenset())
                if p not in old.kind_of.conflicts(old.keys, f"{given} on step '{new.id}'", frozenset())]
    if problems:
        raise UserError(*problems)
    return dataclasses.replace(runbook, steps=steps)


def check_measurement(repeats: int | str | None, warmup: int | None) -> None:
    """--repeats / --warmup from a command line within their bounds; UserError naming each that is not."""
    problems = [f"{name} {value}: must be a whole number from {low} to {high}{' (or auto)' if name == '--repeats' else ''}"
                for name, value, low, high in (("--repeats", repeats, 1, MAX_REPEATS), ("--warmup", warmup, 0, MAX_WARMUP))
                if value is not None and value != AUTO and not low <= value <= high]
    if warmup == AUTO:
        problems.append("--warmup auto: --warmup takes a whole number of requests")
    if problems:
        raise UserError(*problems)


def load(path: Path) -> tuple[Runbook | None, list[str]]:
    """Read and check a runbook file; returns every problem at once (a missing file is one)."""
    path = Path(path)
    data, problem = read_yaml(path)
    if problem:
        return None, [problem]
    return parse(data, path)
