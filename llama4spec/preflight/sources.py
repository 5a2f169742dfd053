"""Find and read a model's ``config.json``: local directory, local HF cache, the hub, or a bundled copy.

Only ``config.json`` is ever fetched from the hub. Offline (``HF_HUB_OFFLINE=1``, or the hub
unreachable) the local cache is used; the copies bundled under ``known_configs/`` cover the
public Llama 4 models when the cache has nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama4spec.config.validate import looks_local
from llama4spec.errors import UserError
from llama4spec.files import Expect, Unreadable, read_json
from llama4spec.preflight.values import text_of
from llama4spec.tiny.paths import is_tiny_path

KNOWN_DIR = Path(__file__).resolve().parent / "known_configs"
# Other names of the same public configs (base and instruct share the architecture).
ALIASES = {
    "meta-llama/Llama-4-Scout-17B-16E": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "meta-llama/Llama-4-Maverick-17B-128E": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    "meta-llama/Llama-3.1-8B": "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Meta-Llama-3.1-8B": "meta-llama/Llama-3.1-8B-Instruct",
}


@dataclass
class ModelConfig:
    """A model's ``config.json`` and where it came from."""

    ref: str  # what the user wrote: hub id or directory
    config: dict[str, Any]  # the whole config.json
    source: str  # local | cache | hub | bundled
    path: Path | None  # the config.json read (None for nothing on disk)
    key: str = "model"  # the config key that named it: target.model, draft.model

    @property
    def text(self) -> dict[str, Any]:
        """The language model's config (``text_config`` of a multimodal Llama 4, else the whole)."""
        return text_of(self.config)

    @property
    def role(self) -> str:
        """``target`` or ``draft``: the first part of the key the model was given as."""
        return self.key.split(".")[0]

    def describe(self) -> str:
        """Which config.json this is, for a message: the bundled copy, the cache's or hub's file, or a local one."""
        if self.source == "bundled":
            return f"the bundled copy of {self.ref}'s config.json, not a downloaded file"
        if self.source == "cache":
            return f"{self.ref}'s config.json from the local Hugging Face cache ({self.path})"
        if self.source == "hub":
            return f"{self.ref}'s config.json fetched from the hub ({self.path})"
        return str(self.path or self.ref)

    @property
    def directory(self) -> Path | None:
        """The model directory when the model is local (tokenizer and weights next to config.json)."""
        return self.path.parent if self.source == "local" and self.path else None


def bundled(model_id: str) -> Path | None:
    model_id = ALIASES.get(model_id, model_id)
    path = KNOWN_DIR / (model_id.replace("/", "--") + ".json")
    return path if path.is_file() else None


MODEL_CONFIG = Expect("model config", "point the model at a directory holding its config.json", 16 << 20)


def read_config(path: Path, ref: str) -> dict[str, Any]:
    """Read one config.json, bounded (``files.read_json``); a missing, unreadable or non-JSON file is
    a UserError (one line)."""
    try:
        data = read_json(path, MODEL_CONFIG)
    except Unreadable as err:
        raise UserError(f"{ref}: {err}") from None
    if not isinstance(data, dict):
        raise UserError(f"{ref}: {path} holds a JSON {type(data).__name__}, not an object; restore the model's config.json")
    return data


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _from_cache(model_id: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model_id, "config.json")
    return Path(found) if isinstance(found, str) else None


def hub_reachable(timeout: float = 2.0) -> bool:
    """One quick connection to the hub's host: huggingface_hub itself retries for ~20 s when it is down."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    url = urlsplit(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout).close()
    except OSError:
        return False
    return True


def _from_hub(model_id: str) -> Path | None:
    """Fetch config.json alone; None when the hub cannot be reached or does not have it."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if not hub_reachable():
        return None
    try:
        return Path(hf_hub_download(model_id, "config.json", etag_timeout=5))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError):
        return None


def load(ref: str, key: str = "model", network: bool = True) -> ModelConfig:
    """The config.json of ``ref`` (hub id or directory); raises UserError when there is none.
    Without ``network`` only local directories, the local cache and bundled copies are read."""
    if is_tiny_path(ref) and not Path(ref, "config.json").is_file():
        from llama4spec.tiny.build import ensure_built

        ensure_built()
    if looks_local(ref):
        directory = Path(ref).expanduser()
        if not directory.is_dir():
            raise UserError(f"{key}: local model directory '{ref}' does not exist; give an existing directory or a hub id")
        path = directory / "config.json"
        return ModelConfig(ref, read_config(path, key), "local", path, key)
    cached = _from_cache(ref)
    if cached is not None:
        return ModelConfig(ref, read_config(cached, key), "cache", cached, key)
    if network and not hub_offline():
        fetched = _from_hub(ref)
        if fetched is not None:
            return ModelConfig(ref, read_config(fetched, key), "hub", fetched, key)
    copy = bundled(ref)
    if copy is not None:
        return ModelConfig(ref, read_config(copy, key), "bundled", copy, key)
    how = ("offline (HF_HUB_OFFLINE is set)" if hub_offline() else
           "the hub was not asked" if not network else "the hub could not be reached")
    raise UserError(
        f"{key}: no config.json for '{ref}': it is not in the local Hugging Face cache and {how}; "
        f"fetch it once with `hf download {ref} config.json`, or point {key} at a local directory"
    )
