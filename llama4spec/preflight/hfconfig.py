"""Build each model's ``config.json`` through the installed transformers' config class, as vLLM does.

vLLM 0.32 creates every model's config with ``CONFIG_MAPPING[model_type].from_dict(config.json)``
(``AutoConfig``), and transformers 5 validates those dataclasses strictly: a wrongly typed value
(``"attn_temperature_tuning": 4`` where a bool is expected) kills the engine at start-up.

``import transformers`` costs seconds and its configuration module pulls in torch, so the check
runs in a child process (this file run as a script, importing nothing of llama4spec) that hides
torch and vllm from the import system: only transformers' config classes load there, and the
doctor's own process imports neither transformers nor torch. Verdicts are cached per
(transformers version, exact config) under ``~/.cache/llama4spec/config-checks`` so a repeated
doctor costs nothing. This module imports only the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CACHE_VERSION = 1
TIMEOUT = 120.0  # seconds for the child: transformers imports in ~2-3 s, on a cold disk far longer
MARK = "LLAMA4SPEC-HFCONFIG "  # prefixes the child's one result line on stdout
HIDDEN = ("torch", "vllm", "tensorflow", "jax", "flax")


@dataclass(frozen=True)
class Verdict:
    status: str  # ok | rejected | unchecked
    cls: str = ""  # the transformers config class, e.g. Llama4TextConfig
    error: str = ""  # exception class name when rejected
    message: str = ""  # exception text when rejected; the reason when unchecked

    @property
    def field(self) -> str | None:
        m = re.search(r"field '([^']+)'", self.message)
        return m.group(1) if m else None

    @property
    def mismatch(self) -> tuple[str, str, str] | None:
        """``(expected, got, value)`` of a strict field's type error."""
        m = re.search(r"expected (.+?), got (\S+) \(value: (.*)\)\s*$", self.message, re.S)
        return (m.group(1), m.group(2), m.group(3)) if m else None

    def summary(self) -> str:
        """One line: the class and what it rejected."""
        mismatch, field = self.mismatch, self.field
        if field and mismatch:
            expected, got, value = mismatch
            return f"{self.cls} field '{field}' expects {expected}, got {got} {value}"
        lines = [line.strip() for line in self.message.splitlines() if line.strip()]
        return f"{self.cls} raised {self.error}: {' '.join(lines)[:300]}"


def transformers_version() -> str | None:
    """The installed transformers' version, nothing imported; None when it is not importable.
    Read from the ``.dist-info`` directory's name next to the package (importlib.metadata costs ~70 ms)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("transformers")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    site = Path(spec.origin).resolve().parent.parent
    found = sorted(site.glob("transformers-*.dist-info"))
    if len(found) == 1:
        return found[0].name[len("transformers-"):-len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return "unknown"


def cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return root / "llama4spec" / "config-checks"


def _key(version: str, config: dict[str, Any]) -> str:
    blob = json.dumps({"v": CACHE_VERSION, "transformers": version, "python": sys.version_info[:2], "config": config},
                      sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def _cached(key: str) -> Verdict | None:
    try:
        data = json.loads((cache_dir() / f"{key}.json").read_text())
        verdict = Verdict(**data)
    except (OSError, ValueError, TypeError):
        return None
    return verdict if verdict.status in ("ok", "rejected", "unchecked") else None


def _store(key: str, verdict: Verdict) -> None:
    from llama4spec.files import write_json

    try:
        write_json(cache_dir() / f"{key}.json", verdict.__dict__)
    except OSError:
        pass  # a read-only home only costs the next run the child process


class Skipped(Exception):
    """The check could not run (no transformers, the child failed): the doctor notes it and goes on."""


def check(configs: list[dict[str, Any]], version: str | None = None) -> list[Verdict]:
    """A verdict per config (cached, else from one child process); Skipped when none can be had."""
    version = version or transformers_version()
    if version is None:
        raise Skipped("transformers is not installed")
    cacheable = version != "unknown"  # without a version, a verdict could outlive an upgrade
    keys = [_key(version, c) for c in configs]
    verdicts: list[Verdict | None] = [_cached(k) if cacheable else None for k in keys]
    missing = [i for i, v in enumerate(verdicts) if v is None]
    if missing:
        fresh = run_child([configs[i] for i in missing])["verdicts"]
        for i, data in zip(missing, fresh):
            verdicts[i] = Verdict(**data)
            if cacheable:
                _store(keys[i], verdicts[i])
    return [v for v in verdicts if v is not None]


def run_child(configs: list[dict[str, Any]], timeout: float = TIMEOUT) -> dict[str, Any]:
    """Run this file as a script on ``configs``; its answer: ``{"verdicts": [...], "torch": bool, ...}``."""
    env = dict(os.environ, TRANSFORMERS_VERBOSITY="error", TRANSFORMERS_NO_ADVISORY_WARNINGS="1")
    try:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve())], input=json.dumps(configs),
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Skipped(f"transformers' config check took over {timeout:.0f} s") from None
    except OSError as err:
        raise Skipped(f"cannot start {sys.executable} ({err.strerror or err})") from None
    lines = [line[len(MARK):] for line in done.stdout.splitlines() if line.startswith(MARK)]
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = [line for line in done.stderr.splitlines() if line.strip()][-1:] or [f"exit code {done.returncode}"]
        raise Skipped(f"transformers' config check failed ({tail[0].strip()[:200]})") from None
    if "missing" in answer:
        raise Skipped(f"transformers cannot be imported ({answer['missing']})")
    if len(answer.get("verdicts", [])) != len(configs):
        raise Skipped("transformers' config check answered for the wrong number of configs")
    return answer


# ---- the child process: `python hfconfig.py` reads a JSON list of configs on stdin ----

def _hide(names: tuple[str, ...]) -> None:
    """Make ``names`` unimportable here, so transformers takes its torch-free path (configs only)."""
    import importlib.machinery

    finder = importlib.machinery.PathFinder

    class Hidden(finder):
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if fullname.split(".")[0] in names:
                return None
            return finder.find_spec(fullname, path, target)

    sys.meta_path[:] = [Hidden if f is finder else f for f in sys.meta_path]


def _verdict(mapping: Any, config: Any) -> dict[str, str]:
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str) or not model_type:
        return {"status": "unchecked", "message": "config.json has no model_type"}
    try:
        cls = mapping[model_type]
    except KeyError:
        return {"status": "unchecked", "message": f"transformers has no config class for model_type '{model_type}'"}
    except Exception as err:  # noqa: BLE001 - a broken config module is reported, not raised
        return {"status": "unchecked", "message": f"loading the config class for '{model_type}' failed: "
                                                  f"{type(err).__name__}: {err}"}
    try:
        cls.from_dict(dict(config))
    except Exception as err:  # noqa: BLE001 - whatever transformers raises is what vLLM would die of
        return {"status": "rejected", "cls": cls.__name__, "error": type(err).__name__, "message": str(err)}
    return {"status": "ok", "cls": cls.__name__}


def _child() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]  # no sibling shadows a module
    _hide(HIDDEN)
    configs = json.loads(sys.stdin.read())
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    except Exception as err:  # noqa: BLE001
        print(MARK + json.dumps({"missing": f"{type(err).__name__}: {err}"[:300]}), flush=True)
        return
    verdicts = [_verdict(CONFIG_MAPPING, c) for c in configs]
    answer = {"verdicts": verdicts, "torch": "torch" in sys.modules, "vllm": "vllm" in sys.modules}
    print(MARK + json.dumps(answer), flush=True)


if __name__ == "__main__":
    _child()
