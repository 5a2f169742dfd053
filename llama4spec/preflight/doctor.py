"""Pairing doctor: small pure rules over the config and both models' ``config.json``, listed here in
the order ``examine`` runs them (the checks of each file by itself in ``file_checks``, the rules
over the draft in ``draft_rules``, over the settings in ``setting_rules``).

Each rule takes a :class:`Pairing` and returns findings (severity, what, why, fix; ``rule``). The
facts about vLLM are those of the pinned version (0.32): its registered draft classes, the keys its
Llama 4 EAGLE head asserts on, and the flags it removed.
"""

from __future__ import annotations

from llama4spec.preflight.draft_rules import (compatible, draft_class, draft_model_vocab, draft_moe, draft_vocab,
                                              eagle3_aux_layers, no_rope, yoco_keys)
from llama4spec.preflight.file_checks import config_values, transformers_config
from llama4spec.preflight.rule import ERROR, INFO, WARNING, Finding, Pairing, Rule
from llama4spec.preflight.setting_rules import (async_scheduling, cpu_sampling, eagle_draft_tp, exposed_server,
                                                hybrid_kv_cache, lookahead_schedule, max_model_len, method_runs_here,
                                                parallel, prefix_caching, removed_flags, trust_remote_code)


# The checks of each config.json by itself, in order: malformed values (the first) skip everything
# after them, which would reason over garbage; transformers' strictness is checked once they are sane.
FILE_CHECKS: dict[str, Rule] = {
    "config-values": config_values,
    "transformers-config": transformers_config,
}

RULES: dict[str, Rule] = {
    "draft-class": draft_class,
    "yoco-keys": yoco_keys,
    "draft-vocab": draft_vocab,
    "draft-model-vocab": draft_model_vocab,
    "method-runs-here": method_runs_here,
    "draft-moe": draft_moe,
    "no-rope-layers": no_rope,
    "eagle3-aux-layers": eagle3_aux_layers,
    "compatible": compatible,
    "parallel": parallel,
    "eagle-draft-tp": eagle_draft_tp,
    "prefix-caching": prefix_caching,
    "hybrid-kv-cache": hybrid_kv_cache,
    "removed-flags": removed_flags,
    "max-model-len": max_model_len,
    "trust-remote-code": trust_remote_code,
    "exposed-server": exposed_server,
    "lookahead-schedule": lookahead_schedule,
    "cpu-sampling": cpu_sampling,
    "async-scheduling": async_scheduling,
}
ORDER = {ERROR: 0, WARNING: 1, INFO: 2}
# Errors no --force gets past: the method cannot run in this installation, or vLLM refuses the pair itself.
CANNOT_START = frozenset({"method-runs-here", "draft-model-vocab", "hybrid-kv-cache"})


def examine(p: Pairing) -> list[Finding]:
    """Every check's findings, errors first: each config.json by itself, then (when both are sane) the pairing rules."""
    (first, check), *others = FILE_CHECKS.items()
    found = _run(first, check, p)
    if not any(f.severity == ERROR for f in found):
        for name, rule in [*others, *RULES.items()]:
            found += _run(name, rule, p)
    return sorted(found, key=lambda f: ORDER[f.severity])


def _run(name: str, rule: Rule, p: Pairing) -> list[Finding]:
    """One rule; a value it cannot compute with becomes a finding, never a traceback."""
    try:
        return rule(p)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError) as err:
        files = ", ".join(str(m.path or m.ref) for m in p.models)
        return [Finding(name, ERROR, f"the {name} rule cannot read the models' config.json ({files}): "
                                     f"{type(err).__name__}: {err}",
                        "a value there has a type or size vLLM cannot load either",
                        "check the values the rule reads in config.json against the model's published config")]
