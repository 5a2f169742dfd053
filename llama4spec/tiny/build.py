"""Build the tiny Llama 4 pair: a text target, EAGLE drafts and a word-level tokenizer.

Weights are set by hand so that greedy acceptance is known exactly:

* target (8 layers, every second one MoE): every attention ``o_proj`` and MLP/expert ``down_proj`` is zero, so the residual
  stream stays the token embedding; the embedding is the identity and
  ``lm_head[succ(i), i] = 1``. Greedy output is the successor chain ``succ``.
* draft: one dense layer with the same zero outputs, ``fc = [I | 0]`` (passes the token
  embedding through, ignores the target's hidden state) and ``lm_head`` = the draft's map.
  The perfect draft uses ``succ``; the imperfect one is wrong on ``WRONG_TOKENS``.
* draft model (``draft_model``, ``draft_model_imperfect``): a plain one-layer Llama (``LlamaForCausalLM``)
  with the target's vocabulary and the same hand-set stream (identity embedding, zero ``o_proj`` and
  ``down_proj``); its ``lm_head`` is the perfect or the imperfect draft's map, so a greedy draft model
  proposes exactly what the EAGLE draft of the same map proposes (each token depends on the last alone).
* EAGLE-3 head (``draft_eagle3``, ``draft_eagle3_imperfect``; ``tiny.eagle3``): vLLM's Llama EAGLE-3 layer
  reading three of the target's auxiliary hidden states (each the token embedding here) through
  ``fc``; its MLP moves the one-hot stream one word along the chain per drafting step, so it proposes
  what the EAGLE draft of the same map proposes up to the first rejection.
* contrast draft (``tiny.contrast``): wrong after every word of one vocabulary block, right elsewhere.
* spread target and draft (``tiny.spread``): the same stream, but the head puts a second word
  ``alt(i)`` beside ``succ(i)``, so the next-word distribution at temperature T is known exactly and
  acceptance at T > 0 depends on T.

Only numpy, safetensors and tokenizers are needed: no torch, no network, same bytes every time.

Safety: llama4spec only ever deletes or changes files it wrote. Every build leaves a marker
(``MARKER``) recording the version and the SHA-256 of each file it wrote; only files the marker
proves (same path, same bytes) are ever replaced or removed. A directory holding anything else
is refused with one line (``UserError``) and left exactly as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path

import numpy as np

from llama4spec.errors import UserError
from llama4spec.tiny import contrast, eagle3, spread
from llama4spec.tiny.paths import KINDS, TINY_VERSION, describe_root, tiny_root
from llama4spec.tiny.words import BOS, EOS, FIRST_WORD, HIDDEN, PAD, SPECIALS, UNK, VOCAB, WORDS, successor, word

HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64
MLP = 128  # dense intermediate size
EXPERT = 64  # MoE expert intermediate size
EXPERTS = 2
LAYERS = 8  # target decoder layers; every second one is MoE, every fourth uses no RoPE (as in Llama 4)


# The imperfect draft is wrong after these tokens (about 30% of the words, fixed by formula).
WRONG_TOKENS = frozenset(i for i in WORDS if (i * 7919) % 10 < 3)


def draft_successor(i: int, imperfect: bool) -> int:
    """The draft's next token: the successor, or (imperfect, on WRONG_TOKENS) the one after it."""
    if imperfect and i in WRONG_TOKENS:
        return successor(successor(i))
    return successor(i)


def _lm_head(next_of) -> np.ndarray:
    head = np.zeros((VOCAB, HIDDEN), dtype=np.float32)
    for i in range(VOCAB):
        head[next_of(i), i] = 1.0
    return head


def _attention(prefix: str) -> dict[str, np.ndarray]:
    z = np.zeros
    return {
        f"{prefix}.self_attn.q_proj.weight": z((HEADS * HEAD_DIM, HIDDEN), np.float32),
        f"{prefix}.self_attn.k_proj.weight": z((KV_HEADS * HEAD_DIM, HIDDEN), np.float32),
        f"{prefix}.self_attn.v_proj.weight": z((KV_HEADS * HEAD_DIM, HIDDEN), np.float32),
        f"{prefix}.self_attn.o_proj.weight": z((HIDDEN, HEADS * HEAD_DIM), np.float32),
        f"{prefix}.input_layernorm.weight": np.ones(HIDDEN, np.float32),
        f"{prefix}.post_attention_layernorm.weight": np.ones(HIDDEN, np.float32),
    }


def _dense_mlp(prefix: str) -> dict[str, np.ndarray]:
    z = np.zeros
    return {
        f"{prefix}.feed_forward.gate_proj.weight": z((MLP, HIDDEN), np.float32),
        f"{prefix}.feed_forward.up_proj.weight": z((MLP, HIDDEN), np.float32),
        f"{prefix}.feed_forward.down_proj.weight": z((HIDDEN, MLP), np.float32),
    }


def _moe(prefix: str) -> dict[str, np.ndarray]:
    z = np.zeros
    ff = f"{prefix}.feed_forward"
    return {
        f"{ff}.experts.gate_up_proj": z((EXPERTS, HIDDEN, 2 * EXPERT), np.float32),
        f"{ff}.experts.down_proj": z((EXPERTS, EXPERT, HIDDEN), np.float32),
        f"{ff}.router.weight": z((EXPERTS, HIDDEN), np.float32),
        f"{ff}.shared_expert.gate_proj.weight": z((EXPERT, HIDDEN), np.float32),
        f"{ff}.shared_expert.up_proj.weight": z((EXPERT, HIDDEN), np.float32),
        f"{ff}.shared_expert.down_proj.weight": z((HIDDEN, EXPERT), np.float32),
    }


def _text_config(**changes) -> dict:
    cfg = {
        "architectures": ["Llama4ForCausalLM"],
        "model_type": "llama4_text",
        "attention_bias": False,
        "attention_chunk_size": 8192,
        "attention_dropout": 0.0,
        "attn_scale": 0.1,
        "attn_temperature_tuning": True,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "floor_scale": 8192,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "interleave_moe_layer_step": 2,
        "intermediate_size": EXPERT,
        "intermediate_size_mlp": MLP,
        "max_position_embeddings": 2048,
        "moe_layers": [i for i in range(LAYERS) if i % 2 == 1],
        "no_rope_layers": [0 if i % 4 == 3 else 1 for i in range(LAYERS)],
        "num_attention_heads": HEADS,
        "num_experts_per_tok": 1,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "num_local_experts": EXPERTS,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_qk_norm": True,
        "vocab_size": VOCAB,
    }
    cfg.update(changes)
    return cfg


def target_files() -> tuple[dict, dict[str, np.ndarray]]:
    tensors = {"model.embed_tokens.weight": np.eye(VOCAB, HIDDEN, dtype=np.float32)}
    for i in range(LAYERS):
        prefix = f"model.layers.{i}"
        tensors |= _attention(prefix) | (_moe(prefix) if i % 2 == 1 else _dense_mlp(prefix))
    tensors["model.norm.weight"] = np.ones(HIDDEN, np.float32)
    tensors["lm_head.weight"] = _lm_head(successor)
    return _text_config(), tensors


def spread_target_files() -> tuple[dict, dict[str, np.ndarray]]:
    """The target with the spread head (``tiny.spread``): same stream, two likely next words."""
    config, tensors = target_files()
    return config, tensors | {"lm_head.weight": spread.head(spread.TARGET_GAP)}


def draft_files(imperfect: bool, head: np.ndarray | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    config = _text_config(
        num_hidden_layers=1,
        interleave_moe_layer_step=0,
        moe_layers=[],
        no_rope_layers=[1],
        yoco_global_kv_layer=None,
        yoco_local_kv_layer=None,
        draft_vocab_size=VOCAB,
    )
    fc = np.zeros((HIDDEN, 2 * HIDDEN), np.float32)
    fc[:, :HIDDEN] = np.eye(HIDDEN, dtype=np.float32)  # [I | 0]: embedding in, hidden state ignored
    # Draft weights carry no "model." prefix; without embed_tokens the target's is shared.
    tensors = _attention("layers.0") | _dense_mlp("layers.0")
    tensors |= {
        "fc.weight": fc,
        "norm.weight": np.ones(HIDDEN, np.float32),
        "lm_head.weight": _lm_head(lambda i: draft_successor(i, imperfect)) if head is None else head,
    }
    return config, tensors


def _llama_config(architecture: str, **changes) -> dict:
    """A one-layer Llama config on the tiny target's vocabulary, tokens and attention shape (the
    draft model's and the EAGLE-3 head's); ``changes`` replace or add keys."""
    config = {
        "architectures": [architecture],
        "model_type": "llama",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "intermediate_size": MLP,
        "max_position_embeddings": 2048,
        "mlp_bias": False,
        "num_attention_heads": HEADS,
        "num_hidden_layers": 1,
        "num_key_value_heads": KV_HEADS,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "vocab_size": VOCAB,
    }
    config.update(changes)
    return config


def draft_model_files(imperfect: bool) -> tuple[dict, dict[str, np.ndarray]]:
    """A small stand-alone draft model (vLLM's ``draft_model`` method): a one-layer Llama with the
    target's vocabulary and tokenizer, predicting ``draft_successor`` from the last token."""
    config = _llama_config("LlamaForCausalLM")
    z = np.zeros
    tensors = {
        "model.embed_tokens.weight": np.eye(VOCAB, HIDDEN, dtype=np.float32),
        "model.layers.0.mlp.gate_proj.weight": z((MLP, HIDDEN), np.float32),
        "model.layers.0.mlp.up_proj.weight": z((MLP, HIDDEN), np.float32),
        "model.layers.0.mlp.down_proj.weight": z((HIDDEN, MLP), np.float32),
        "model.norm.weight": np.ones(HIDDEN, np.float32),
        "lm_head.weight": _lm_head(lambda i: draft_successor(i, imperfect)),
    }
    tensors |= _attention("model.layers.0")
    return config, tensors


def eagle3_files(imperfect: bool) -> tuple[dict, dict[str, np.ndarray]]:
    """A tiny EAGLE-3 head (vLLM's ``Eagle3LlamaForCausalLM``, as NVIDIA's Maverick head loads): see ``tiny.eagle3``."""
    config = _llama_config(
        "LlamaForCausalLMEagle3", intermediate_size=eagle3.INTERMEDIATE, rms_norm_eps=eagle3.EPS,
        draft_vocab_size=VOCAB, target_hidden_size=HIDDEN,
        eagle_config={"eagle_aux_hidden_state_layer_ids": list(eagle3.AUX_LAYERS), "use_aux_hidden_state": True})
    z = np.zeros
    # Weight names as vLLM's EAGLE-3 loader reads them (it adds "model."); without embed_tokens the
    # target's is shared. The first layer's q/k/v read [embedding | hidden] (2 x hidden wide).
    tensors = {
        "layers.0.self_attn.q_proj.weight": z((HEADS * HEAD_DIM, 2 * HIDDEN), np.float32),
        "layers.0.self_attn.k_proj.weight": z((KV_HEADS * HEAD_DIM, 2 * HIDDEN), np.float32),
        "layers.0.self_attn.v_proj.weight": z((KV_HEADS * HEAD_DIM, 2 * HIDDEN), np.float32),
        "layers.0.self_attn.o_proj.weight": z((HIDDEN, HEADS * HEAD_DIM), np.float32),
        "layers.0.input_layernorm.weight": np.ones(HIDDEN, np.float32),
        "layers.0.hidden_norm.weight": np.ones(HIDDEN, np.float32),
        "layers.0.post_attention_layernorm.weight": np.ones(HIDDEN, np.float32),
        "norm.weight": np.ones(HIDDEN, np.float32),
        "fc.weight": eagle3.fc(),
        "lm_head.weight": _lm_head(lambda i: draft_successor(i, imperfect)),
    }
    tensors |= {f"layers.0.mlp.{name}.weight": w for name, w in eagle3.mlp().items()}
    return config, tensors


def tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = {tok: i for i, tok in enumerate(SPECIALS)} | {word(i): i for i in WORDS}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIALS[UNK]))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tok.add_special_tokens(SPECIALS)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", BOS)]
    )
    return tok.to_str(pretty=True)


def tokenizer_config() -> dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIALS[BOS],
        "eos_token": SPECIALS[EOS],
        "pad_token": SPECIALS[PAD],
        "unk_token": SPECIALS[UNK],
        "model_max_length": 2048,
        "clean_up_tokenization_spaces": False,
    }


MARKER = ".llama4spec-tiny"  # JSON: who wrote the directory, the version and {path: sha256} of each file
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json")
REQUIRED = tuple(f"{kind}/{name}" for kind in KINDS for name in MODEL_FILES) + ("VERSION",)


def _json_bytes(obj) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pair_files() -> dict[str, bytes]:
    """Every file a build writes (except ``MARKER``): path relative to the root -> bytes."""
    from safetensors.numpy import save

    tokenizer = {
        "tokenizer.json": (tokenizer_json() + "\n").encode(),
        "tokenizer_config.json": (json.dumps(tokenizer_config(), indent=2) + "\n").encode(),
        "generation_config.json": (
            json.dumps({"bos_token_id": BOS, "eos_token_id": EOS, "pad_token_id": PAD}, indent=2) + "\n"
        ).encode(),
    }
    files: dict[str, bytes] = {}
    models = {"target": target_files(), "draft": draft_files(False), "draft_imperfect": draft_files(True),
              "target_spread": spread_target_files(),
              "draft_spread": draft_files(False, head=spread.head(spread.DRAFT_GAP)),
              "draft_contrast": draft_files(False, head=_lm_head(contrast.draft_next)),
              "draft_model": draft_model_files(False), "draft_model_imperfect": draft_model_files(True),
              "draft_eagle3": eagle3_files(False), "draft_eagle3_imperfect": eagle3_files(True)}
    for kind, (config, tensors) in models.items():
        files[f"{kind}/config.json"] = _json_bytes(config)
        files[f"{kind}/model.safetensors"] = save(tensors, metadata={"format": "pt"})
        files |= {f"{kind}/{name}": data for name, data in tokenizer.items()}
    files["VERSION"] = (TINY_VERSION + "\n").encode()
    return files


def _marker_bytes(hashes: dict[str, str]) -> bytes:
    return _json_bytes({"written_by": "llama4spec", "contents": "tiny Llama 4 pair", "version": TINY_VERSION, "files": hashes})


def _safe_rel(rel) -> bool:
    parts = rel.split("/") if isinstance(rel, str) else []
    return bool(parts) and not rel.startswith("/") and all(p not in ("", ".", "..") for p in parts) and rel != MARKER


def _read_marker(root: Path) -> dict | None:
    """The marker llama4spec wrote into ``root``, or None (absent, a symlink, or not one of ours)."""
    path = root / MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("written_by") != "llama4spec" or not isinstance(data.get("version"), str):
        return None
    files = data.get("files")
    if not isinstance(files, dict) or not all(_safe_rel(k) and isinstance(v, str) for k, v in files.items()):
        return None
    return data


def _parents(rels) -> set[str]:
    """Every directory (relative path) that holds one of ``rels``."""
    out = set()
    for rel in rels:
        parts = rel.split("/")[:-1]
        out |= {"/".join(parts[: i + 1]) for i in range(len(parts))}
    return out


def _walk(root: Path, into: set[str]):
    """``(relative path, kind)`` under ``root`` without following symlinks; kind is dir, file or other.

    Only descends into directories named in ``into`` (never into a user's own trees)."""
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(root / rel if rel else root) as entries:
            for entry in entries:
                sub = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    yield sub, "dir"
                    if sub in into:
                        stack.append(sub)
                elif entry.is_file(follow_symlinks=False):
                    yield sub, "file"
                else:
                    yield sub, "other"


def _proven(root: Path, marker: dict | None, rel: str) -> bool:
    """True when ``root/rel`` is a regular file whose bytes are what the marker says llama4spec wrote."""
    if marker is None or rel not in marker["files"]:
        return False
    path = root / rel
    try:
        return not path.is_symlink() and path.is_file() and _sha256(path.read_bytes()) == marker["files"][rel]
    except OSError:
        return False


def _first_foreign(root: Path, marker: dict | None) -> str | None:
    """The first entry of ``root`` llama4spec did not write (per its marker), or None if all are its own."""
    if marker is None:
        with os.scandir(root) as entries:
            return next((e.name for e in entries), None)
    dirs = _parents(marker["files"])
    for rel, kind in _walk(root, into=dirs):
        if rel == MARKER or (kind == "dir" and rel in dirs):
            continue
        if kind != "file" or not _proven(root, marker, rel):
            return rel
    return None


def is_complete(root: Path) -> bool:
    """True when ``root`` holds a complete tiny pair of this version (marked, or an unmarked v2-era build)."""
    try:
        if not root.is_dir():
            return False
        marker = _read_marker(root)
        if marker is not None:
            if marker["version"] != TINY_VERSION:
                return False
        elif (root / "VERSION").read_bytes() != (TINY_VERSION + "\n").encode():
            return False
        return all((root / rel).is_file() for rel in REQUIRED)
    except OSError:
        return False


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` through a fresh temporary file beside it (honours the umask; never half-written)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_files(root: Path, files: dict[str, bytes], keep: dict[str, str]) -> None:
    """Write ``files`` into ``root`` (skipping identical ones), then the marker (listing them and ``keep``)."""
    hashes = dict(keep)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        hashes[rel] = _sha256(data)
        if not path.is_symlink() and path.is_file() and path.read_bytes() == data:
            continue
        _write_atomic(path, data)
    _write_atomic(root / MARKER, _marker_bytes(hashes))


def build_into(root: Path, force: bool = False) -> Path:
    """Write the tiny pair into ``root`` (target/, draft/, draft_imperfect/, VERSION, MARKER).

    ``root`` may be new, empty, or hold an earlier build. If it holds anything else, it is refused
    unless ``force``; even then only llama4spec's own files are written: a file at one of its paths
    that it did not write (per the marker, or byte-identical) is refused, and nothing is ever deleted.
    Raises ``UserError`` with one line.
    """
    root = Path(root)
    if root.is_symlink() and not root.exists():
        raise UserError(f"{root} is a broken symbolic link; pick an empty or new directory")
    if root.exists() and not root.is_dir():
        raise UserError(f"{root} is a file, not a directory; pick an empty or new directory")
    files = pair_files()
    try:
        root.mkdir(parents=True, exist_ok=True)
        marker = _read_marker(root)
        ours = _parents(files) | (_parents(marker["files"]) if marker else set())
        foreign, clashes = [], []
        for rel, kind in _walk(root, into=ours):
            if rel == MARKER:
                if marker is None:
                    clashes.append(rel)
            elif rel in files:
                if kind != "file" or not (_proven(root, marker, rel) or (root / rel).read_bytes() == files[rel]):
                    clashes.append(rel)
            elif rel in ours:
                if kind != "dir":
                    clashes.append(rel)
            elif not _proven(root, marker, rel):
                foreign.append(rel)
        if clashes:
            raise UserError(
                f"{root / clashes[0]} exists and was not written by llama4spec; pick an empty or new directory "
                "(llama4spec never deletes or changes files it did not write)"
            )
        if foreign and not force:
            raise UserError(
                f"{root} has other files (e.g. {foreign[0]}); pick an empty directory or pass --force "
                "(llama4spec never deletes files it did not write)"
            )
        # Files an earlier build wrote that this one does not: still ours, left in place and listed.
        keep = {rel: marker["files"][rel] for rel in (marker or {}).get("files", {}) if rel not in files and _proven(root, marker, rel)}
        _write_files(root, files, keep)
    except OSError as err:
        raise UserError(f"cannot write the tiny pair into {root}: {_why(err, root)}") from None
    return root


def _why(err: OSError, fallback: Path) -> str:
    return f"{err.filename or fallback}: {err.strerror or err}"


def ensure_for(cfg) -> None:
    """Build the tiny pair (once) when ``cfg``'s target or draft is one of its models."""
    from llama4spec.tiny.paths import is_tiny_path

    if is_tiny_path(cfg.target.model) or is_tiny_path(cfg.draft.model):
        ensure_built()


def ensure_built(root: Path | None = None) -> Path:
    """Build the tiny pair once (cached); an interrupted build never leaves a half-written cache.

    ``root`` (default ``tiny_root()``) may be missing, an empty directory, or a cache llama4spec
    wrote (an older or damaged one is replaced only when its marker proves every file in it).
    Anything else raises ``UserError`` with one line and is left untouched: this function never
    deletes a directory or file it did not create.
    """
    root = Path(root) if root is not None else tiny_root()
    if is_complete(root):
        return root
    where, pick = describe_root(root)
    fix = f"{pick}, or move that one away yourself"
    if root.is_symlink():
        if not root.exists():
            raise UserError(f"{where}: that path is a broken symbolic link; {fix}")
        root = root.resolve()
    if root.exists() and not root.is_dir():
        raise UserError(f"{where}: that path is a file, not a directory; {fix}")
    marker = None
    if root.is_dir():
        try:
            marker = _read_marker(root)
            foreign = _first_foreign(root, marker)
        except OSError as err:
            raise UserError(f"{where}: cannot read that directory ({_why(err, root)}); {fix}") from None
        if foreign is not None:
            if marker is None and _looks_like_old_cache(root):
                what = "it looks like an older tiny-model cache but has no llama4spec marker proving who wrote it"
            elif marker is None:
                what = f"that directory exists and is not a tiny-model cache (it holds {foreign})"
            else:
                what = f"that tiny-model cache also holds files llama4spec did not write (e.g. {foreign})"
            raise UserError(f"{where}: {what}; {fix} (llama4spec never deletes files it did not write)")
    # Empty or missing: build; marked and holding only llama4spec's own files: replace.
    return _install(root, where, pick, replace_old=marker is not None)


def _looks_like_old_cache(root: Path) -> bool:
    """An unmarked directory shaped like an earlier build (VERSION says vN, a model directory beside it)."""
    try:
        version = (root / "VERSION").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return False
    return version[:1] == "v" and version[1:].isdigit() and any((root / kind).is_dir() for kind in KINDS)


def _install(root: Path, where: str, pick: str, replace_old: bool) -> Path:
    """Build beside ``root`` in a fresh temporary directory, then rename it into place."""
    fix = f"{pick} you can write to"
    parent = root.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp: Path | None = Path(tempfile.mkdtemp(prefix=".tiny-", dir=parent))
    except OSError as err:
        raise UserError(f"{where}: cannot create a directory there ({_why(err, parent)}); {fix}") from None
    old: Path | None = None
    try:
        try:
            _write_files(tmp, pair_files(), keep={})
        except OSError as err:
            raise UserError(f"{where}: cannot write the tiny pair beside it ({_why(err, tmp)}); {fix}") from None
        if replace_old:
            old = _move_aside(root, where, fix)
        try:
            os.replace(tmp, root)  # also takes the place of an empty directory
            tmp = None
        except OSError as err:
            if not is_complete(root):  # else another process finished first: fine
                raise UserError(f"{where}: cannot put the tiny pair there ({_why(err, root)}); {fix}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # created by this call
        if old is not None:
            _remove_own(old)
    return root


def _move_aside(root: Path, where: str, fix: str) -> Path | None:
    """Rename llama4spec's old cache at ``root`` into a private directory; None if it is already gone.

    Its contents are checked again once private (nothing can change them there): if anything in it
    is not proven llama4spec's own, it is put back (or, if that fails, left where the message says)."""
    try:
        aside = Path(tempfile.mkdtemp(prefix=".tiny-old-", dir=root.parent))
    except OSError as err:
        raise UserError(f"{where}: cannot replace the old tiny-model cache ({_why(err, root.parent)}); {fix}") from None
    old = aside / "old"
    try:
        os.rename(root, old)
    except FileNotFoundError:
        aside.rmdir()
        return None
    except OSError as err:
        aside.rmdir()
        raise UserError(f"{where}: cannot replace the old tiny-model cache ({_why(err, root)}); {fix}") from None
    try:
        clean = _first_foreign(old, _read_marker(old)) is None
    except OSError:
        clean = False
    if clean:
        return old
    try:
        os.rename(old, root)
    except OSError:
        raise UserError(
            f"{where}: files appeared in it while llama4spec was replacing its old cache; they are untouched in {old}"
        ) from None
    try:
        aside.rmdir()
    except OSError:
        pass
    raise UserError(f"{where}: files appeared in it while llama4spec was replacing its old cache; {fix}")


def _remove_own(old: Path) -> None:
    """Remove llama4spec's moved-aside cache: only files its marker proves, then the emptied directories."""
    marker = _read_marker(old)
    files = (marker or {}).get("files", {})
    doomed = [old / rel for rel in files if _proven(old, marker, rel)] + ([old / MARKER] if marker else [])
    for path in doomed:
        try:
            path.unlink()
        except OSError:
            pass
    for path in [old / rel for rel in sorted(_parents(files), key=lambda r: -r.count("/"))] + [old, old.parent]:
        try:
            path.rmdir()  # only if now empty
        except OSError:
            pass
