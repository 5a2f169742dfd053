"""Fetching a config's models before any server starts: the target, an EAGLE draft and a separate
tokenizer, through huggingface_hub's ``snapshot_download`` (its own progress bar; an interrupted
download resumes where it stopped), limited to configs, weights and tokenizer files. Local
directories and the tiny models need nothing. Every hub failure becomes one line (``hub_error``).

``fetch_plan`` is pure; ``download`` fetches one entry into the hub cache the environment selects
(``results.provenance.hub_cache``), offline from that cache alone when HF_HUB_OFFLINE is set.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from llama4spec.config.schema import Config
from llama4spec.config.validate import looks_local
from llama4spec.engine.args import model_refs
from llama4spec.errors import UserError
from llama4spec.results.provenance import COMMIT, hub_cache, hub_offline
from llama4spec.tiny.paths import is_tiny_path

# What vLLM reads from a model repository: configs, safetensors weights, the tokenizer, and (Llama 4
# is multimodal: vLLM builds its processor at start-up) the processor configs. Nothing else.
CONFIGS = ("config.json", "generation_config.json", "preprocessor_config.json", "processor_config.json")
WEIGHTS = ("*.safetensors", "*.safetensors.index.json")
TOKENIZER = ("tokenizer*", "special_tokens_map.json", "*.tiktoken", "chat_template*")
MODEL_PATTERNS = (*CONFIGS, *WEIGHTS, *TOKENIZER)
TOKENIZER_PATTERNS = ("config.json", *TOKENIZER)  # transformers may read the tokenizer's class from config.json
# vLLM loads pytorch weights only from a repository without safetensors; so does fetch.
FALLBACK_WEIGHTS = ("*.bin", "*.bin.index.json", "*.pt")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
CACHE_RULE = "$HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub"


@dataclass(frozen=True)
class Download:
    """One repository to fetch (or, with ``skip``, one that needs nothing)."""

    role: str  # target | draft | tokenizer
    key: str  # the config key naming it: target.model, draft.model, target.tokenizer
    repo: str  # hub id (a local directory when skipped)
    revision: str | None  # commit, branch or tag; None: the default branch
    patterns: tuple[str, ...] = ()
    skip: str | None = None  # why nothing is downloaded

    @property
    def at(self) -> str:
        return self.revision or "main"

    @property
    def revision_key(self) -> str:
        """The config key that pins it (a separate tokenizer is read at the target's revision, as vLLM does)."""
        return "draft.revision" if self.role == "draft" else "target.revision"


@dataclass
class Fetched:
    download: Download
    path: Path  # the snapshot directory in the cache
    commit: str | None  # the resolved commit hash
    files: list[tuple[str, int]]  # (path in the repository, bytes), the files the patterns select

    @property
    def size(self) -> int:
        return sum(size for _, size in self.files)


def fetch_plan(cfg: Config) -> list[Download]:
    """What ``cfg`` needs from the hub (pure): one entry per model vLLM loads, skipped for local
    directories and the tiny models."""
    plan = []
    for r in model_refs(cfg):
        if is_tiny_path(r.ref):
            plan.append(Download(r.role, r.key, r.ref, r.revision, skip="a tiny model, built here (no download)"))
        elif looks_local(r.ref):
            unused = "; its revision is not used" if r.revision else ""
            plan.append(Download(r.role, r.key, r.ref, r.revision, skip=f"a local directory (no download{unused})"))
        else:
            patterns = TOKENIZER_PATTERNS if r.role == "tokenizer" else MODEL_PATTERNS
            plan.append(Download(r.role, r.key, r.ref, r.revision, patterns))
    return plan


def plan_lines(cfg: Config, plan: list[Download], environ: Mapping[str, str] | None = None) -> list[str]:
    """The dry run's lines: per entry the repository, revision and file patterns (or why it is
    skipped), then the cache it goes to."""
    lines = []
    for d in plan:
        if d.skip:
            lines.append(f"skip {d.key} {d.repo}: {d.skip}")
            continue
        lines.append(f"fetch {d.key} {d.repo} at revision {d.at}")
        fallback = f" (else {', '.join(FALLBACK_WEIGHTS)} without safetensors)" if d.role != "tokenizer" else ""
        lines.append(f"  files: {' '.join(d.patterns)}{fallback}")
    if not any(not d.skip for d in plan):
        lines.append("nothing to fetch")
    where = f"cache: {hub_cache(environ)} ({CACHE_RULE})"
    if cfg.parallel.nnodes > 1:
        where += " on this machine (the cluster's hosts share it only through a shared HF_HOME)"
    lines.append(where)
    if hub_offline(environ):
        lines.append("offline (HF_HUB_OFFLINE is set): only the local cache is read")
    return lines


def _first_line(exc: BaseException, limit: int = 200) -> str:
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    text = "".join(c if c.isprintable() else " " for c in text)
    return text[:limit] + "…" if len(text) > limit else text


def hub_error(exc: BaseException, d: Download, cache: Path | None = None, offline: bool | None = None) -> str | None:
    """One line for a failure of fetching ``d`` (huggingface_hub's errors, network and disk errors);
    None for anything else (a bug: let it show)."""
    from huggingface_hub import constants
    from huggingface_hub import errors as hf

    cache = hub_cache() if cache is None else cache
    offline = hub_offline() if offline is None else offline
    what = f"{d.key}: {d.repo}" + (f" at revision {d.revision}" if d.revision else "")
    again = "then run `llama4spec fetch` again (it resumes where it stopped)"
    if isinstance(exc, hf.GatedRepoError):
        return (f"{d.key}: repository {d.repo} is gated: accept its license on the hub "
                f"({constants.ENDPOINT}/{d.repo}) and set HF_TOKEN (or `hf auth login`)")
    if isinstance(exc, hf.RepositoryNotFoundError):
        return (f"{d.key}: repository {d.repo} was not found on the hub (or it is private and no token with access "
                f"is set); check the id, or set HF_TOKEN (or `hf auth login`)")
    if isinstance(exc, hf.RevisionNotFoundError):
        return (f"{d.key}: {d.repo} has no revision '{d.at}'; set {d.revision_key} to an existing commit, branch or "
                f"tag")
    if isinstance(exc, hf.DisabledRepoError):
        return f"{d.key}: repository {d.repo} has been disabled on the hub; choose another model"
    incomplete = getattr(hf, "IncompleteSnapshotError", None)
    if incomplete is not None and isinstance(exc, incomplete):
        how = "offline (HF_HUB_OFFLINE is set)" if offline else "the hub could not be reached"
        return (f"{what}: the local cache holds only part of it and {how}; run `llama4spec fetch` where the hub is "
                f"reachable" + ("" if not offline else " or unset HF_HUB_OFFLINE"))
    if isinstance(exc, (hf.LocalEntryNotFoundError, hf.OfflineModeIsEnabled)):
        if offline:
            return (f"{what} is not in the local cache and offline (HF_HUB_OFFLINE is set); run `llama4spec fetch` "
                    f"where the hub is reachable or unset HF_HUB_OFFLINE")
        cause = exc.__cause__ or exc.__context__
        why = f" ({type(cause).__name__})" if cause is not None else ""
        return (f"{what} is not in the local cache and the hub could not be reached{why}; check the network, a "
                f"proxy or HF_ENDPOINT, {again}")
    if isinstance(exc, hf.HFValidationError):
        return f"{d.key}: '{d.repo}' at '{d.at}' is not a valid hub id or revision ({_first_line(exc)})"
    if isinstance(exc, hf.HfHubHTTPError):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if status == 401:
            return (f"{what}: the hub refused the credentials (401); set a valid HF_TOKEN (or `hf auth login`), "
                    f"or unset an invalid one")
        if status == 429:
            return f"{what}: the hub is rate-limiting these requests (429); wait a few minutes, {again}"
        return f"{what}: the hub answered {status or 'an error'} ({_first_line(exc)}); {again}"
    if isinstance(exc, OSError):
        if exc.errno == errno.ENOSPC:
            return (f"{what}: no space left on the disk of the cache {cache}; free space or point HF_HOME (or "
                    f"HF_HUB_CACHE) at a larger disk, {again}")
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return (f"{what}: cannot write the cache {cache} ({exc.strerror}); make it writable or point HF_HOME "
                    f"(or HF_HUB_CACHE) at a writable directory")
        return f"{what}: the download failed ({type(exc).__name__}: {_first_line(exc)}); {again}"
    if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "requests", "urllib3"):
        return (f"{what}: the hub could not be reached ({type(exc).__name__}: {_first_line(exc)}); check the "
                f"network, a proxy or HF_ENDPOINT, {again}")
    return None


def _files(path: Path, patterns: tuple[str, ...]) -> list[tuple[str, int]]:
    """The snapshot's files that ``patterns`` select, with their sizes (links into the blob store followed)."""
    from huggingface_hub.utils import filter_repo_objects

    found = {}
    for file in path.rglob("*"):
        try:
            if file.is_file():
                found[file.relative_to(path).as_posix()] = file.stat().st_size
        except OSError:
            continue
    return sorted((name, found[name]) for name in filter_repo_objects(list(found), allow_patterns=list(patterns)))


def download(d: Download, environ: Mapping[str, str] | None = None) -> Fetched:
    """Fetch ``d`` into the hub cache ``environ`` selects (huggingface_hub's progress bar; a partial
    download resumes); offline (HF_HUB_OFFLINE) the cache alone answers. Raises UserError (one line)."""
    from huggingface_hub import snapshot_download

    cache, offline = hub_cache(environ), hub_offline(environ)

    def snapshot(patterns: tuple[str, ...], revision: str | None) -> Path:
        try:
            return Path(snapshot_download(d.repo, revision=revision, cache_dir=cache, allow_patterns=list(patterns),
                                          local_files_only=offline))
        except Exception as exc:  # noqa: BLE001  (mapped to one line, or raised as it is)
            line = hub_error(exc, d, cache, offline)
            if line is None:
                raise
            raise UserError(line) from None

    path = snapshot(d.patterns, d.revision)
    commit = path.name if COMMIT.fullmatch(path.name) else None
    files = _files(path, d.patterns)
    if d.role != "tokenizer" and not any(name.endswith(".safetensors") for name, _ in files):
        files += _files(snapshot(FALLBACK_WEIGHTS, commit or d.revision), FALLBACK_WEIGHTS)
        if not any(name.endswith(WEIGHT_SUFFIXES) for name, _ in files):
            where = f"{d.key}: {d.repo} at revision {d.at}"
            if offline:
                raise UserError(f"{where}: the local cache holds no weights of it (*.safetensors, *.bin, *.pt) and "
                                f"offline (HF_HUB_OFFLINE is set); run `llama4spec fetch` where the hub is reachable "
                                f"or unset HF_HUB_OFFLINE")
            raise UserError(f"{where} has no weights (*.safetensors, *.bin or *.pt); check the repository and "
                            f"{d.revision_key}")
    if d.role == "tokenizer" and not any(name.startswith("tokenizer") or name.endswith(".tiktoken")
                                         for name, _ in files):
        raise UserError(f"{d.key}: {d.repo} at revision {d.at} has no tokenizer files (tokenizer*, *.tiktoken)"
                        + ("; offline (HF_HUB_OFFLINE is set), only the local cache was read" if offline else ""))
    return Fetched(d, path, commit, files)


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
