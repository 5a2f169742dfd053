"""A step kind's runbook keys, read and bounded: each key is a dataclass field whose metadata holds
its reader, so a kind declares its keys once (``steps/<kind>.py``: ``Keys``) and ``read_keys``
reads them all, every problem one line in ``problems``."""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any, Callable

from llama4spec.config.compose import MAX_OVERRIDE_CHARS
from llama4spec.files import plain, shown  # noqa: F401 (the runbook's readers name them here)

MAX_ID = 64  # runbook names and step ids: they become directories
MAX_LABEL = 100  # a bench label (a table row, vLLM's --label)
MAX_TEXT = 4_096  # any other string: an extra argument, a URL, a file reference
MAX_REPEATS = 100  # counted runs per benchmark point
MAX_WARMUP = 10_000  # warm-up requests before a point's counted runs
AUTO = "auto"  # repeats: auto (a sweep measures each point until decided)

Reader = Callable[[dict, str, str, list[str]], Any]  # (raw step, key, where, problems) -> value


def text_problem(value: str, limit: int) -> str | None:
    """Why a user string cannot be used as is (None when it can)."""
    if len(value) > limit:
        return f"is {len(value):,} characters long; at most {limit:,}"
    if not value.isprintable():
        return "contains a control character (a newline, tab, NUL, ...); write it on one line"
    return None


def close(key: str, allowed: set[str]) -> str:
    """A hint for an unknown key: the closest allowed one, or all of them."""
    match = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f"did you mean '{match[0]}'?" if match else f"allowed: {', '.join(sorted(allowed))}"


def str_list(value: Any, where: str, problems: list[str], limit: int = MAX_TEXT) -> list[str]:
    """A list of short texts (numbers and booleans written as text)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float, bool)) for v in value):
        problems.append(f"{where}: expected a list of strings, e.g. [lookahead=5]")
        return []
    items = []
    for i, v in enumerate(value, 1):
        text = str(v)
        why = text_problem(text, limit)
        if why:
            problems.append(f"{where}: item {i} {shown(text)} {why}")
        else:
            items.append(text)
    return items


def str_field(raw: dict, key: str, at: str, problems: list[str], limit: int = MAX_TEXT) -> str | None:
    """An optional string setting of a step (a step id, URL or file): a printable, bounded string."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        problems.append(f"{at}: '{key}' must be a non-empty string (got {shown(value)})")
        return None
    why = text_problem(value, limit)
    if why:
        problems.append(f"{at}: '{key}' {shown(value)} {why}")
        return None
    return value


def label_problem(at: str, value: Any, name: str = "label") -> str | None:
    """Why ``value`` cannot be a bench label (None when it can): a runbook's ``label`` (``at``: the
    step) or the command line's ``--label`` (``at``: empty)."""
    where = f"{at}: " if at else ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
        return f"{where}'{name}' must be a short text such as eagle-k3 (got {shown(value)})"
    label = str(value)
    why = text_problem(label, MAX_LABEL) or ("starts with '-' (it is passed as vLLM's --label)"
                                             if label.startswith("-") else None)
    return f"{where}{name} {shown(label)} {why}" if why else None


def _label(raw: dict, key: str, at: str, problems: list[str]) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    problem = label_problem(at, value)
    if problem:
        problems.append(problem)
        return None
    return str(value)


def _count(raw: dict, key: str, default: int, low: int, high: int, at: str, problems: list[str]) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{at}: '{key}' must be a whole number from {low} to {high} (got {shown(value)})")
        return default
    return value


def _flag(raw: dict, key: str, at: str, problems: list[str], default: bool = False) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        problems.append(f"{at}: '{key}' must be true or false (got {value!r})")
        return default
    return value


# -- the keys a kind declares ----------------------------------------------------------------------
def _key(read: Reader, bounds: dict[str, Any] | None = None, **default: Any) -> Any:
    """A runbook key: its reader, and what it accepts (``low``, ``high``, ``choices``) for help texts."""
    return dataclasses.field(metadata={"read": read, **(bounds or {})}, **default)


def overrides() -> Any:
    """Hydra overrides (key=value, group=option)."""
    return texts(MAX_OVERRIDE_CHARS)


def texts(limit: int = MAX_TEXT) -> Any:
    """A list of texts: extra arguments."""
    return _key(lambda raw, key, at, problems: str_list(raw.get(key), f"{at}: {key}", problems, limit),
                default_factory=list)


def text(limit: int = MAX_TEXT) -> Any:
    """An optional text: a step id, a URL, a file."""
    return _key(lambda raw, key, at, problems: str_field(raw, key, at, problems, limit), default=None)


def label() -> Any:
    """A bench label: a table row and vLLM's --label."""
    return _key(_label, default=None)


def count(default: int, low: int, high: int) -> Any:
    """A whole number from ``low`` to ``high``."""
    return _key(lambda raw, key, at, problems: _count(raw, key, default, low, high, at, problems),
                {"low": low, "high": high}, default=default)


def _repeats(raw: dict, key: str, default: int | str, at: str, problems: list[str]) -> int | str:
    value = raw.get(key, default)
    if value == AUTO:
        return AUTO
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEATS:
        problems.append(f"{at}: '{key}' must be a whole number from 1 to {MAX_REPEATS}, or auto (measure each point "
                        f"until its comparisons are decided) (got {shown(value)})")
        return default
    return value


def repeats(default: int | str) -> Any:
    """Counted runs per point: a number, or ``auto`` (measured until decided, between min_repeats and max_repeats)."""
    return _key(lambda raw, key, at, problems: _repeats(raw, key, default, at, problems), default=default)


def _level(raw: dict, key: str, default: float, at: str, problems: list[str]) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.5 < value < 1:
        problems.append(f"{at}: '{key}' must be a number between 0.5 and 1, such as 0.95 (got {shown(value)})")
        return default
    return float(value)


def level(default: float) -> Any:
    """A confidence level in (0.5, 1)."""
    return _key(lambda raw, key, at, problems: _level(raw, key, default, at, problems), default=default)


def flag(default: bool = False) -> Any:
    """true or false."""
    return _key(lambda raw, key, at, problems: _flag(raw, key, at, problems, default), default=default)


def _choice(raw: dict, key: str, options: tuple[str, ...], at: str, problems: list[str]) -> str:
    value = raw.get(key, options[0])
    if not isinstance(value, str) or value not in options:
        problems.append(f"{at}: '{key}' must be one of {', '.join(options)} (got {shown(value)})")
        return options[0]
    return value


def choice(*options: str) -> Any:
    """One of ``options`` (the first is the default)."""
    return _key(lambda raw, key, at, problems: _choice(raw, key, options, at, problems), {"choices": options},
                default=options[0])


def _seconds(raw: dict, key: str, default: float, high: float, at: str, problems: list[str]) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
        problems.append(f"{at}: '{key}' must be a number of seconds from 0 to {high:g} (got {shown(value)})")
        return default
    return float(value)


def seconds(default: float, high: float) -> Any:
    """A duration in seconds, from 0 to ``high``."""
    return _key(lambda raw, key, at, problems: _seconds(raw, key, default, high, at, problems), default=default)


def _number(raw: dict, key: str, default: float | None, low: float, high: float, above: bool, optional: bool,
            at: str, problems: list[str]) -> float | None:
    value = raw.get(key, default)
    if value is None and optional:
        return None
    import math

    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
          and (value > low if above else value >= low) and value <= high)
    if not ok:
        side = f"above {low:g}" if above else f"from {low:g}"
        problems.append(f"{at}: '{key}' must be a number {side} up to {high:g}{' (or null)' if optional else ''} "
                        f"(got {shown(value)})")
        return default
    return float(value)


def number(default: float | None, low: float, high: float, *, above: bool = False, optional: bool = False) -> Any:
    """A finite number from ``low`` (``above``: above it) up to ``high``; ``optional``: or null."""
    return _key(lambda raw, key, at, problems: _number(raw, key, default, low, high, above, optional, at, problems),
                {"low": low, "high": high}, default=default)


def custom(read: Reader, **default: Any) -> Any:
    """A key with a reader of its own (a sweep's matrix)."""
    return _key(read, **default)


def described(key: Any, text: str, *, flag: bool = True, metavar: str | None = None) -> Any:
    """``key`` (a field from this module) with its help ``text``; ``flag``: a command line that runs
    the kind offers it as ``--key-name`` (its type, choices, default and bounds from the field)."""
    return dataclasses.field(default=key.default, default_factory=key.default_factory,
                             metadata={**key.metadata, "help": text, "flag": flag, "metavar": metavar})


def group(settings_type: type) -> Any:
    """A feature's settings: a frozen dataclass whose fields are keys of the step itself (written
    beside its other keys), read together and carried whole into the steps it generates."""
    return _key(lambda raw, key, at, problems: read_keys(settings_type, raw, at, problems), {"group": settings_type},
                default_factory=settings_type)


def runbook_keys(keys_type: type) -> set[str]:
    """The keys a runbook may write for a kind (generated-only fields have no reader; a group's
    fields are the step's own keys)."""
    out: set[str] = set()
    for f in dataclasses.fields(keys_type):
        if "group" in f.metadata:
            out |= runbook_keys(f.metadata["group"])
        elif "read" in f.metadata:
            out.add(f.name)
    return out


def read_keys(keys_type: type, raw: dict, at: str, problems: list[str]) -> Any:
    """The kind's keys from a step as written, each read in declared order; fields the runbook cannot
    write keep their defaults."""
    return keys_type(**{f.name: f.metadata["read"](raw, f.name, at, problems)
                        for f in dataclasses.fields(keys_type) if "read" in f.metadata})


def warmup_flag_problems(extra_args: list[str], at: str) -> list[str]:
    """--num-warmups in a step's extra_args: its requests would be counted; the step's warmup: is not."""
    if any(a == "--num-warmups" or a.startswith("--num-warmups=") for a in extra_args):
        return [f"{at}: extra_args: --num-warmups sends warm-up requests inside the counted run, so they land in "
                f"the acceptance counters; drop it and set 'warmup: N' on the step (an unrecorded run of N requests "
                f"before the counted ones)"]
    return []


# Flags a step that builds a benchmark command sets itself: repeating one in extra_args would
# contradict it (vLLM would take the later one). A probe of a capacity search also sets its rate,
# its prompts, no concurrency cap and the SLO's --goodput.
BENCH_OWN_FLAGS = ("--base-url", "--host", "--port", "--model", "--backend", "--endpoint", "--label", "--save-result",
                   "--result-dir", "--result-filename")
PROBE_OWN_FLAGS = (*BENCH_OWN_FLAGS, "--request-rate", "--max-concurrency", "--goodput", "--num-prompts")


def own_flag_problems(extra_args: list[str], at: str, own: tuple[str, ...] = BENCH_OWN_FLAGS) -> list[str]:
    """extra_args that repeat a flag of ``own`` (as written, with ``=value``, or abbreviated as
    argparse accepts it): one problem naming them all."""
    found = []
    for arg in extra_args:
        flag = arg.split("=", 1)[0]
        if flag in own or (flag.startswith("--") and len(flag) > 4 and any(o.startswith(flag) for o in own)):
            found.append(next(o for o in own if o.startswith(flag)))
    if not found:
        return []
    return [f"{at}: extra_args repeats {', '.join(dict.fromkeys(found))}, which llama4spec sets itself for this "
            f"step's benchmarks (the server's url, the model, where results go"
            f"{', the rate, prompts, concurrency and SLO of each probe' if own is PROBE_OWN_FLAGS else ''}); "
            f"drop it from extra_args"]
