"""The doctor's checks of each ``config.json`` by itself, run before the pairing rules: sizes and
counts vLLM computes with, and the config built through transformers' config class as vLLM builds
it (with the fix a rejected value needs)."""

from __future__ import annotations

import json

from llama4spec.preflight import hfconfig, values
from llama4spec.preflight.rule import ERROR, INFO, Finding, Pairing
from llama4spec.preflight.sources import ModelConfig


def config_values(p: Pairing) -> list[Finding]:
    """Sizes and counts the rules and vLLM compute with: positive integers, text_config an object, head_dim derivable."""
    out = []
    for model in p.models:
        for problem in values.problems(model.config):
            out.append(Finding(
                "config-values", ERROR, f"{model.role} config.json ({model.describe()}): {problem}",
                "vLLM sizes the model from these values and fails to load it (the pairing rules are skipped until "
                "the file is fixed)",
                _value_fix(model),
            ))
    return out


def _value_fix(model: ModelConfig) -> str:
    if model.source == "local":
        return f"correct the value in {model.path}"
    if model.source == "bundled":
        return f"download the model, correct the value in its config.json, and pass {model.key}=DIR"
    return f"correct the value in {model.path}, or download the model, correct it there and pass {model.key}=DIR"


def transformers_config(p: Pairing) -> list[Finding]:
    """Each config.json built through the installed transformers' config class, as vLLM 0.32 builds it."""
    models = p.models
    version = hfconfig.transformers_version()
    try:
        verdicts = hfconfig.check([m.config for m in models], version)
    except hfconfig.Skipped as why:
        return [Finding("transformers-config", INFO, f"config.json not built through transformers: {why}",
                        "vLLM builds every model's config with transformers' config classes; this check mirrors it",
                        "run the doctor in the environment that runs vLLM (where transformers is installed)")]
    out = []
    for model, verdict in zip(models, verdicts):
        if verdict.status == "rejected":
            out.append(Finding(
                "transformers-config", ERROR,
                f"transformers {version} rejects the {model.role}'s config.json ({model.describe()}): {verdict.summary()}",
                f"vLLM 0.32 builds every model's config through transformers' config classes, which validate "
                f"strictly, so the engine dies at start-up ({verdict.error})",
                _strict_fix(model, verdict),
            ))
        elif verdict.status == "unchecked":
            out.append(Finding(
                "transformers-config", INFO, f"{model.role} config.json not built through transformers: {verdict.message}",
                "vLLM then needs a config class of its own or trust_remote_code for this model_type",
                "check that vLLM supports this model" + ("" if p.cfg.target.trust_remote_code
                                                         else ", or set target.trust_remote_code=true for a custom one"),
            ))
    return out


def _json_value(expected: str, value: str) -> str | None:
    """The JSON value of type ``expected`` that a rejected ``value`` (its Python repr) stands for."""
    try:
        parsed = json.loads(value.replace("'", '"').replace("True", "true").replace("False", "false").replace("None", "null"))
    except ValueError:
        return None
    if expected == "bool" and isinstance(parsed, str):
        return parsed.strip().lower() if parsed.strip().lower() in ("true", "false") else None
    if expected == "bool" and isinstance(parsed, (int, float)):
        return "true" if parsed else "false"
    if expected == "int" and isinstance(parsed, float) and parsed.is_integer():
        return str(int(parsed))
    if expected == "float" and isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        return str(float(parsed))
    return None


def _strict_fix(model: ModelConfig, verdict: hfconfig.Verdict) -> str:
    field, mismatch = verdict.field, verdict.mismatch
    if field and mismatch:
        expected, _, value = mismatch
        good = _json_value(expected, value)
        setting = f"set \"{field}\": {good}" if good else f"give \"{field}\" a value of type {expected}"
    else:
        setting = f"correct the value transformers' {verdict.cls} names above"
    if model.source == "local":
        return f"{setting} in {model.path}"
    what = "head" if model.role == "draft" else "model"
    return (f"download the {what}, {setting} in its config.json, and pass {model.key}=DIR "
            f"(`hf download {model.ref} --local-dir DIR`)")
