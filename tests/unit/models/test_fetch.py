"""``llama4spec fetch``, the runbook ``fetch`` step, pinned revisions and the resolved commits in
records, without a hub: a Hugging Face cache laid out as huggingface_hub writes it (refs, blobs,
snapshots of symlinks) in a temporary HF_HOME, read by the real library with HF_HUB_OFFLINE=1.
The mapping of huggingface_hub's errors to one line each is tested on the exceptions themselves."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

from tests.helpers import REPO

ORG = "tiny-org"
MAIN = "0123456789abcdef0123456789abcdef01234567"  # refs/main
V1 = "89abcdef0123456789abcdef0123456789abcdef"  # refs/v1, an older commit
DRAFT = "fedcba9876543210fedcba9876543210fedcba98"
TOK = "00112233445566778899aabbccddeeff00112233"


def safetensors_bytes() -> bytes:
    """A valid, tiny safetensors file: one float32 tensor of two values."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    return struct.pack("<Q", len(header)) + header + struct.pack("<2f", 1.0, 2.0)


def add_snapshot(hub: Path, repo: str, commit: str, files: dict[str, bytes], refs: tuple[str, ...] = ("main",)) -> Path:
    """One commit of ``repo`` in huggingface_hub's cache layout: blobs by content hash, the snapshot's
    files as relative symlinks to them, refs naming the commit."""
    root = hub / ("models--" + repo.replace("/", "--"))
    snapshot = root / "snapshots" / commit
    for name, data in files.items():
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    for ref in refs:
        (root / "refs").mkdir(parents=True, exist_ok=True)
        (root / "refs" / ref).write_text(commit)
    return snapshot


MODEL_FILES = {
    "config.json": b'{"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text"}',
    "generation_config.json": b"{}",
    "model.safetensors": safetensors_bytes(),
    "tokenizer.json": b'{"version": "1.0"}',
    "tokenizer_config.json": b"{}",
    "README.md": b"# not fetched",
    "original/consolidated.00.pth": b"not fetched either",
}


@pytest.fixture()
def hf_home(tmp_path: Path) -> Path:
    home = tmp_path / "hf"
    hub = home / "hub"
    add_snapshot(hub, f"{ORG}/llama", MAIN, MODEL_FILES)
    add_snapshot(hub, f"{ORG}/llama", V1, {**MODEL_FILES, "config.json": b'{"old": true}'}, refs=("v1",))
    add_snapshot(hub, f"{ORG}/eagle", DRAFT, {"config.json": b"{}", "model.safetensors": safetensors_bytes()})
    add_snapshot(hub, f"{ORG}/tok", TOK, {"tokenizer.json": b"{}", "tokenizer_config.json": b"{}",
                                          "config.json": b"{}", "model.safetensors": safetensors_bytes()})
    add_snapshot(hub, f"{ORG}/config-only", MAIN, {"config.json": b"{}"})  # what the doctor leaves behind
    return home


def offline_env(home: Path) -> dict[str, str]:
    return {"HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), "HF_HUB_OFFLINE": "1"}


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


# -- llama4spec fetch against the cache -------------------------------------------------------
def test_fetch_resolves_the_cached_snapshot_offline(cli, hf_home: Path):
    result = cli("fetch", f"target.model={ORG}/llama", "draft=none", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"fetch target.model {ORG}/llama at revision main" in out
    assert f"commit {MAIN}" in out and str(hf_home / "hub") in out
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                 "tokenizer_config.json"):
        assert f"  {name}  " in out, out
    assert "README.md" not in out and "consolidated" not in out  # weights, configs and tokenizer only
    assert "Traceback" not in result.stderr


def test_fetch_pins_a_revision(cli, hf_home: Path):
    env = offline_env(hf_home)
    tag = cli("fetch", f"target.model={ORG}/llama", "draft=none", "target.revision=v1", env=env, timeout=120)
    assert tag.returncode == 0, tag.stderr
    assert f"at revision v1" in tag.stdout and f"commit {V1}" in tag.stdout
    commit = cli("fetch", f"target.model={ORG}/llama", "draft=none", f"target.revision={MAIN}", env=env,
                     timeout=120)
    assert commit.returncode == 0 and f"commit {MAIN}" in commit.stdout, commit.stderr


def test_fetch_target_draft_and_tokenizer(cli, hf_home: Path):
    result = cli("fetch", f"target.model={ORG}/llama", "draft=tiny_eagle", f"draft.model={ORG}/eagle",
                     f"target.tokenizer={ORG}/tok", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"commit {MAIN}" in out and f"commit {DRAFT}" in out and f"commit {TOK}" in out
    tokenizer = out[out.index(f"fetch target.tokenizer {ORG}/tok"):]
    assert "tokenizer.json" in tokenizer and "model.safetensors" not in tokenizer  # only the tokenizer's files


def test_fetch_of_a_repository_missing_offline_is_one_line(cli, hf_home: Path):
    result = cli("fetch", f"target.model={ORG}/missing", "draft=none", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 2
    assert error_lines(result.stderr) == [
        f"error: target.model: {ORG}/missing is not in the local cache and offline (HF_HUB_OFFLINE is set); run "
        f"`llama4spec fetch` where the hub is reachable or unset HF_HUB_OFFLINE"], result.stderr


def test_fetch_of_an_uncached_revision_offline_is_one_line(cli, hf_home: Path):
    result = cli("fetch", f"target.model={ORG}/llama", "draft=none", "target.revision=v9",
                     env=offline_env(hf_home), timeout=120)
    assert result.returncode == 2
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and f"{ORG}/llama at revision v9 is not in the local cache and offline" in lines[0]


def test_fetch_reports_every_missing_model_at_once(cli, hf_home: Path):
    result = cli("fetch", f"target.model={ORG}/missing", "draft=tiny_eagle", f"draft.model={ORG}/gone",
                     env=offline_env(hf_home), timeout=120)
    assert result.returncode == 2
    lines = error_lines(result.stderr)
    assert len(lines) == 2 and "target.model" in lines[0] and "draft.model" in lines[1], lines


def test_fetch_refuses_a_cached_config_without_weights_offline(cli, hf_home: Path):
    """The doctor caches config.json alone: that is not a fetched model."""
    result = cli("fetch", f"target.model={ORG}/config-only", "draft=none", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 2
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and "holds no weights" in lines[0] and "HF_HUB_OFFLINE" in lines[0], lines


def test_fetch_dry_run_lists_repository_revision_files_and_cache(cli, hf_home: Path):
    result = cli("fetch", f"target.model={ORG}/not-cached", "draft=tiny_eagle", f"draft.model={ORG}/eagle",
                     "draft.revision=v2", "--dry-run", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"fetch target.model {ORG}/not-cached at revision main" in out
    assert f"fetch draft.model {ORG}/eagle at revision v2" in out
    assert "*.safetensors" in out and "config.json" in out and "tokenizer*" in out
    assert f"cache: {hf_home / 'hub'}" in out and "shared HF_HOME" not in out
    assert "commit" not in out  # nothing resolved, nothing downloaded


def test_fetch_dry_run_of_a_multinode_config_says_the_cache_is_this_machines(cli, hf_home: Path):
    result = cli("fetch", "cluster=tiny_two_host", "parallel=tiny_two_host_tp2", f"target.model={ORG}/llama",
                     "draft=none", "--dry-run", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "on this machine (the cluster's hosts share it only through a shared HF_HOME)" in result.stdout


def test_fetch_skips_the_tiny_models_and_local_directories(cli, hf_home: Path, tmp_path: Path):
    result = cli("fetch", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "a tiny model, built here (no download)" in result.stdout and "nothing to fetch" in result.stdout
    local = tmp_path / "model"
    local.mkdir()
    (local / "config.json").write_text("{}")
    result = cli("fetch", f"target.model={local}", "draft=none", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"skip target.model {local}: a local directory" in result.stdout


# -- a runbook whose first step is fetch ------------------------------------------------------
def _runbook(tmp_path: Path) -> Path:
    data = REPO / "tests" / "data" / "serving"
    path = tmp_path / "fetch_first.yaml"
    path.write_text(f"""name: fetch_first
description: fetch the models, then compare two saved results (no engine)
overrides: [target.model={ORG}/llama, draft=tiny_eagle, draft.model={ORG}/eagle]
steps:
  - id: models
    kind: fetch
  - id: table
    kind: compare
    needs: [models]
    baseline: {data / 'scout_baseline.vllm.json'}
    candidate: {data / 'scout_eagle.record.json'}
""")
    return path


def test_runbook_fetch_step_dry_run(cli, hf_home: Path, tmp_path: Path):
    result = cli("run", str(_runbook(tmp_path)), "--dry-run", env=offline_env(hf_home), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "[1/2] models: fetch" in out
    assert f"command: llama4spec fetch target.model={ORG}/llama draft=tiny_eagle draft.model={ORG}/eagle" in out
    assert f"    fetch target.model {ORG}/llama at revision main" in out
    assert f"    fetch draft.model {ORG}/eagle at revision main" in out
    assert f"    cache: {hf_home / 'hub'}" in out


def test_runbook_fetch_step_runs_and_records_the_commits(cli, hf_home: Path, tmp_path: Path):
    runs = tmp_path / "runs"
    result = cli("run", str(_runbook(tmp_path)), "--runs-dir", str(runs), env=offline_env(hf_home), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = (runs / "fetch_first").iterdir()
    status = json.loads((run_dir / "status.json").read_text())
    assert [s["status"] for s in status["steps"]] == ["done", "done"]
    fetched = status["steps"][0]["result"]["models"]
    assert fetched["target"]["commit"] == MAIN and fetched["draft"]["commit"] == DRAFT
    assert fetched["target"]["files"] == 5
    host = json.loads((run_dir / "host.json").read_text())
    assert host["models"]["models"]["target"] == {"model": f"{ORG}/llama", "revision": None, "commit": MAIN}
    assert host["models"]["models"]["draft"]["commit"] == DRAFT


def test_runbook_fetch_step_failure_fails_the_run(cli, hf_home: Path, tmp_path: Path):
    path = tmp_path / "missing.yaml"
    path.write_text(f"name: missing\nsteps:\n  - id: models\n    kind: fetch\n"
                    f"    overrides: [target.model={ORG}/missing, draft=none]\n")
    runs = tmp_path / "runs"
    result = cli("run", str(path), "--runs-dir", str(runs), env=offline_env(hf_home), timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "not in the local cache and offline" in result.stdout and "Traceback" not in result.stderr
    (run_dir,) = (runs / "missing").iterdir()
    status = json.loads((run_dir / "status.json").read_text())
    assert status["steps"][0]["status"] == "failed" and "offline" in status["steps"][0]["error"]


def test_runbook_fetch_step_takes_only_overrides(tmp_path: Path):
    from llama4spec.runbook.schema import load

    path = tmp_path / "rb.yaml"
    path.write_text("name: x\nsteps:\n  - id: models\n    kind: fetch\n    server: s\n")
    _, problems = load(path)
    assert any("unknown key 'server' for a fetch step" in p for p in problems), problems


# -- provenance: the resolved commits ----------------------------------------------------------
def _cfg(*overrides: str):
    from llama4spec.config.compose import compose_config

    return compose_config(list(overrides)).cfg


def test_model_revisions_reads_the_cache_without_network(hf_home: Path, tmp_path: Path):
    from llama4spec.results.provenance import model_revisions

    env = offline_env(hf_home)
    cfg = _cfg(f"target.model={ORG}/llama", "draft=tiny_eagle", f"draft.model={ORG}/eagle", "target.revision=v1",
               f"target.tokenizer={ORG}/not-cached")
    assert model_revisions(cfg, env) == {
        "target": {"model": f"{ORG}/llama", "revision": "v1", "commit": V1},
        "draft": {"model": f"{ORG}/eagle", "revision": None, "commit": DRAFT},
        "tokenizer": {"model": f"{ORG}/not-cached", "revision": "v1", "commit": None},
    }
    tiny = model_revisions(_cfg(), env)
    assert tiny["target"]["local"] is True and tiny["target"]["commit"] is None
    assert model_revisions(_cfg(f"target.model={ORG}/llama", "draft=none"), {"HF_HUB_CACHE": str(tmp_path)}) == {
        "target": {"model": f"{ORG}/llama", "revision": None, "commit": None}}  # another cache: not cached
    assert model_revisions(object()) == {}  # never raises


def test_offline_record_carries_the_commits(hf_home: Path, monkeypatch):
    from llama4spec.config.compose import compose_config
    from llama4spec.offline.prompts import Prompts
    from llama4spec.offline.outcome import EngineRun
    from llama4spec.offline.record import run_record
    from llama4spec.results.acceptance import RunStats

    monkeypatch.setenv("HF_HUB_CACHE", str(hf_home / "hub"))
    composed = compose_config([f"target.model={ORG}/llama", "draft=none"])
    run = EngineRun("no draft", RunStats(4, None, None, 1.0), [[1, 2]], ["w4 w5"], 0.5)
    record = run_record(composed, Prompts(["w4"], {"kind": "builtin"}), [run], None)
    assert record.models == {"target": {"model": f"{ORG}/llama", "revision": None, "commit": MAIN}}


def test_hub_cache_follows_huggingface_hub_rules():
    from llama4spec.results.provenance import hub_cache, hub_offline

    assert hub_cache({"HF_HUB_CACHE": "/a/hub", "HF_HOME": "/b"}) == Path("/a/hub")
    assert hub_cache({"HF_HOME": "/b"}) == Path("/b/hub")
    assert hub_cache({"XDG_CACHE_HOME": "/x"}) == Path("/x/huggingface/hub")
    assert hub_cache({}) == Path.home() / ".cache" / "huggingface" / "hub"
    assert hub_offline({"HF_HUB_OFFLINE": "1"}) and hub_offline({"HF_HUB_OFFLINE": "true"})
    assert not hub_offline({"HF_HUB_OFFLINE": "0"}) and not hub_offline({})


# -- revisions in the engine arguments ----------------------------------------------------------
def test_revisions_reach_vllm():
    from llama4spec.engine.args import llm_kwargs, serve_argv, speculative_config

    cfg = _cfg("target=llama4_scout", "draft=eagle_llama4_scout", "target.revision=abc123", "draft.revision=v1.0")
    argv = serve_argv(cfg)
    assert argv[argv.index("--revision") + 1] == "abc123"
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec["revision"] == "v1.0" and spec == speculative_config(cfg)
    assert llm_kwargs(cfg)["revision"] == "abc123"
    plain = _cfg("target=llama4_scout", "draft=eagle_llama4_scout")
    assert "--revision" not in serve_argv(plain) and "revision" not in speculative_config(plain)
    assert "revision" not in llm_kwargs(plain)


def test_serve_dry_run_shows_the_revisions(cli):
    result = cli("serve", "target=llama4_scout", "draft=eagle_llama4_scout", "target.revision=abc123",
                     "draft.revision=0123abc", "--dry-run", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--revision abc123" in result.stdout
    assert '"model":"morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct","revision":"0123abc"' in result.stdout
    tiny = cli("serve", "target.revision=abc123", "--dry-run", timeout=120)
    assert tiny.returncode == 0 and "--revision abc123" in tiny.stdout, tiny.stderr


@pytest.mark.parametrize("value, says", [
    ("-main", "starts with '-'"), ("'a b'", "contains a space"), ("''", "is empty"), ("x" * 300, "at most 255"),
])
def test_bad_revisions_are_refused(value: str, says: str):
    from llama4spec.config.validate import validate

    for key in ("target.revision", "draft.revision"):
        problems = validate(_cfg(f"{key}={value}"))
        assert any(p.startswith(key) and says in p for p in problems), problems


# -- huggingface_hub's errors, one line each ---------------------------------------------------
def _response(status: int):
    httpx = pytest.importorskip("httpx2")
    return httpx.Response(status, request=httpx.Request("GET", f"https://huggingface.co/api/models/{ORG}/llama"))


def _download(role: str = "target", revision: str | None = None):
    from llama4spec.models.download import MODEL_PATTERNS, Download

    key = {"target": "target.model", "draft": "draft.model", "tokenizer": "target.tokenizer"}[role]
    return Download(role, key, f"{ORG}/llama", revision, MODEL_PATTERNS)


def _line(exc: BaseException, offline: bool = False, role: str = "target", revision: str | None = None) -> str:
    from llama4spec.models.download import hub_error

    line = hub_error(exc, _download(role, revision), Path("/cache/hub"), offline)
    assert line is not None and "\n" not in line and line.strip() == line, line
    return line


def test_gated_repository():
    from huggingface_hub.errors import GatedRepoError

    exc = GatedRepoError("403 Client Error.\n\nCannot access gated repo for url ...", response=_response(403))
    assert _line(exc) == (f"target.model: repository {ORG}/llama is gated: accept its license on the hub "
                          f"(https://huggingface.co/{ORG}/llama) and set HF_TOKEN (or `hf auth login`)")


def test_repository_not_found():
    from huggingface_hub.errors import RepositoryNotFoundError

    line = _line(RepositoryNotFoundError("404 Client Error.\nRepository Not Found", response=_response(404)))
    assert line.startswith(f"target.model: repository {ORG}/llama was not found on the hub") and "HF_TOKEN" in line


def test_revision_not_found_names_the_key_that_pins_it():
    from huggingface_hub.errors import RevisionNotFoundError

    exc = RevisionNotFoundError("404 Client Error.\nRevision Not Found", response=_response(404))
    assert _line(exc, revision="v9") == (f"target.model: {ORG}/llama has no revision 'v9'; set target.revision to "
                                         f"an existing commit, branch or tag")
    assert "set draft.revision" in _line(exc, role="draft", revision="v9")
    assert "set target.revision" in _line(exc, role="tokenizer", revision="v9")  # read at the target's revision


def test_disabled_repository():
    from huggingface_hub.errors import DisabledRepoError

    assert "disabled" in _line(DisabledRepoError("403\nAccess to this resource is disabled.", response=_response(403)))


def test_not_in_the_cache_offline_and_online():
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    exc = LocalEntryNotFoundError("Cannot find an appropriate cached snapshot folder ...\nmore")
    assert _line(exc, offline=True) == (
        f"target.model: {ORG}/llama is not in the local cache and offline (HF_HUB_OFFLINE is set); run "
        f"`llama4spec fetch` where the hub is reachable or unset HF_HUB_OFFLINE")
    assert "at revision v1 is not in the local cache and offline" in _line(exc, offline=True, revision="v1")
    try:
        raise exc from ConnectionError("down")
    except LocalEntryNotFoundError as chained:
        line = _line(chained, offline=False)
    assert "not in the local cache and the hub could not be reached (ConnectionError)" in line
    assert "it resumes" in line
    assert "offline (HF_HUB_OFFLINE is set)" in _line(OfflineModeIsEnabled("offline"), offline=True)


def test_incomplete_snapshot():
    from huggingface_hub import errors

    incomplete = getattr(errors, "IncompleteSnapshotError", None)
    if incomplete is None:
        pytest.skip("this huggingface_hub has no IncompleteSnapshotError")
    line = _line(incomplete("The cached snapshot ... is incomplete: 2 file(s) are missing", "/snap"), offline=True)
    assert "holds only part of it and offline" in line and "unset HF_HUB_OFFLINE" in line


def test_http_errors():
    from huggingface_hub.errors import HfHubHTTPError

    assert "answered 500 (500 Server Error" in _line(HfHubHTTPError("500 Server Error\nbody", response=_response(500)))
    assert "refused the credentials (401)" in _line(HfHubHTTPError("401", response=_response(401)))
    assert "rate-limiting" in _line(HfHubHTTPError("429", response=_response(429)))


def test_disk_and_permission_errors():
    full = _line(OSError(errno.ENOSPC, "No space left on device"))
    assert full.startswith(f"target.model: {ORG}/llama: no space left on the disk of the cache /cache/hub")
    assert "HF_HOME" in full and "it resumes" in full
    assert "cannot write the cache /cache/hub (Permission denied)" in _line(PermissionError(errno.EACCES,
                                                                                             "Permission denied"))
    assert "the download failed (OSError: boom)" in _line(OSError("boom\nsecond line"))


def test_invalid_ids_and_network_errors():
    from huggingface_hub.errors import HFValidationError

    assert "not a valid hub id or revision" in _line(HFValidationError("Repo id must be ..."))
    httpx = pytest.importorskip("httpx2")
    assert "the hub could not be reached (ConnectError" in _line(httpx.ConnectError("connection refused"))


def test_other_exceptions_are_not_hidden():
    from llama4spec.models.download import hub_error

    assert hub_error(KeyError("bug"), _download()) is None
    assert hub_error(ValueError("bug"), _download()) is None


def test_fetch_plan_is_pure_and_skips_local_models(tmp_path: Path):
    from llama4spec.models.download import MODEL_PATTERNS, TOKENIZER_PATTERNS, fetch_plan

    plan = fetch_plan(_cfg("target=llama4_scout", "draft=eagle_llama4_scout", "target.revision=abc",
                           f"target.tokenizer={tmp_path}"))
    assert [(d.role, d.repo, d.revision, d.skip is None) for d in plan] == [
        ("target", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "abc", True),
        ("draft", "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct", None, True),
        ("tokenizer", str(tmp_path), "abc", False)]
    assert plan[0].patterns == MODEL_PATTERNS and "*.safetensors" in MODEL_PATTERNS
    assert "*.safetensors" not in TOKENIZER_PATTERNS
    assert [d.role for d in fetch_plan(_cfg("target=llama4_scout", "draft=ngram"))] == ["target"]
