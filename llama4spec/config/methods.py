"""vLLM's speculative methods, declared once: every consumer (validation, vLLM's arguments, the
doctor, the memory plan, labels) asks this table, never a tuple of names of its own.

The names are vLLM 0.32's ``SpeculativeMethod`` (``vllm/config/speculative.py``, 13 values; its
per-model MTP names are one ``mtp`` row here). Which methods keep async scheduling on is read off
``vllm/config/vllm.py`` (``VllmConfig.__post_init__``): vLLM turns it off for every method outside
the EAGLE family, ``ngram_gpu``, ``draft_model``, ``dspark`` and ``dflash``, so a comparison between
two methods on either side of that line also compares async scheduling on against off.

Adding a method: a row here, its config under ``conf/draft/`` (for a method this tool runs) and its
tests. The table sits in ``config/`` because validating a config asks it first, and every layer
above (engine arguments, the doctor, the memory plan, runbook labels) may import downward.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    name: str  # vLLM's ``speculative_config.method``
    label: str  # in tables and headlines
    needs_model: bool  # ``speculative_config.model`` names a draft model vLLM loads and samples with
    reads_hidden_states: bool  # a draft head on the target's hidden states (EAGLE family): its
    #   config.json is read and checked by the doctor and its layers counted by the memory plan
    prompt_lookup: bool  # drafts from the prompt (prompt_lookup_min / prompt_lookup_max)
    async_scheduling: bool  # vLLM 0.32 keeps async scheduling on for it (off: see the docstring)
    llama4: bool  # applies to a Llama 4 target
    runs: bool  # this tool runs it: a config under conf/draft/, validation and tests
    memory: str = ""  # what the memory plan adds for the draft: "head" (an EAGLE head on the target's
    #   embedding, sharded like the target), "model" (a whole model: weights, KV cache, logits), "" nothing
    package: str | None = None  # the pip requirement vLLM 0.32 names for it (``vllm/config/speculative.py``)
    module: str | None = None  # the module that requirement provides (the doctor looks for it)
    gpu_only: bool = False  # vLLM 0.32 runs it on CUDA only (the doctor refuses it on the CPU build)
    varies: bool = False  # drafts fewer than k tokens where it finds less (a rate per position then needs
    #   the steps that drafted each position: the per-step arrays vLLM returns at the "detailed" level)
    eagle_family: bool = False  # vLLM 0.32's ``SpeculativeConfig.use_eagle()``: the prefix cache drops its
    #   trailing block (``disable_eagle_block_drop`` keeps it), and a chunked-attention target runs
    #   without the hybrid KV cache manager (``VllmConfig.__post_init__``)


SUFFIX_PACKAGE = "arctic-inference==0.1.1"  # SpeculativeConfig._validate_suffix_decoding, vLLM 0.32

TABLE: tuple[Method, ...] = (
    Method("eagle", "EAGLE", True, True, False, True, True, True, memory="head", eagle_family=True),
    Method("eagle3", "EAGLE-3", True, True, False, True, True, True, memory="head", eagle_family=True),
    Method("ngram", "n-gram", False, False, True, False, True, True, varies=True),
    # the GPU proposer (vllm/v1/spec_decode/ngram_proposer_gpu.py) runs its n-gram search as CUDA kernels
    Method("ngram_gpu", "n-gram (GPU)", False, False, True, True, True, True, gpu_only=True, varies=True),
    Method("draft_model", "draft model", True, False, False, True, True, True, memory="model"),
    Method("suffix", "suffix decoding", False, False, False, False, True, True,
           package=SUFFIX_PACKAGE, module="arctic_inference", varies=True),
    Method("medusa", "Medusa", True, False, False, False, False, False),
    Method("mlp_speculator", "MLP speculator", True, False, False, False, False, False),
    Method("custom_class", "custom proposer", False, False, False, False, False, False),
    Method("mtp", "MTP", True, True, False, True, False, False, eagle_family=True),
    Method("extract_hidden_states", "hidden-state extraction", False, True, False, True, False, False),
    Method("dflash", "DFlash", True, True, False, True, False, False, eagle_family=True),
    Method("dspark", "DSpark", True, False, False, True, False, False, eagle_family=True),
)
BY_NAME = {m.name: m for m in TABLE}
RUN = tuple(m.name for m in TABLE if m.runs)  # the methods a config may name


def get(name: str | None) -> Method | None:
    """The method vLLM calls ``name`` (None: no speculation, or a name vLLM does not know)."""
    return BY_NAME.get(name) if name else None


def label(name: str | None) -> str:
    """How tables name the method (its vLLM name where unknown; "no speculation" for none)."""
    if not name:
        return "no speculation"
    m = BY_NAME.get(name)
    return m.label if m else name


def needs_model(name: str | None) -> bool:
    m = get(name)
    return bool(m and m.needs_model)


def reads_hidden_states(name: str | None) -> bool:
    m = get(name)
    return bool(m and m.reads_hidden_states)


def prompt_lookup(name: str | None) -> bool:
    m = get(name)
    return bool(m and m.prompt_lookup)


def varies(name: str | None) -> bool:
    """The method drafts a number of tokens that varies from step to step."""
    m = get(name)
    return bool(m and m.varies)


def eagle_family(name: str | None) -> bool:
    """vLLM 0.32 treats the method as EAGLE (``use_eagle()``): it reads ``disable_eagle_block_drop``."""
    m = get(name)
    return bool(m and m.eagle_family)


def block_drop_problems(name: str | None, disable: bool | None) -> list[str]:
    """``draft.disable_eagle_block_drop`` where vLLM reads it: the EAGLE-family methods only."""
    if disable is None or eagle_family(name):
        return []
    family = ", ".join(m.name for m in TABLE if m.eagle_family)
    return [f"draft.disable_eagle_block_drop={str(disable).lower()}: it applies to vLLM's EAGLE-family methods "
            f"({family}), not draft.method={name or 'none'}; drop draft.disable_eagle_block_drop"]


def draft_memory(name: str | None) -> str:
    """What the memory plan counts for the draft ("head", "model" or "")."""
    m = get(name)
    return m.memory if m else ""


def reads_draft_config(name: str | None) -> bool:
    """The doctor reads the draft's config.json: a head on the target's hidden states, or a whole model."""
    return draft_memory(name) != ""


def pinned_async_scheduling(names) -> bool | None:
    """The async-scheduling setting a comparison of ``names`` (None: no speculation) pins on every side:
    off where vLLM 0.32 turns it off for one of them, so that both sides run the same scheduler;
    None (left to vLLM) where every side keeps it on."""
    return None if all(async_scheduling(n) for n in names) else False


def async_scheduling(name: str | None) -> bool:
    """vLLM 0.32 schedules asynchronously by default under this method (and without speculation)."""
    m = get(name)
    return m.async_scheduling if m else not name
