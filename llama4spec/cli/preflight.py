"""``doctor`` and ``memory``: pre-flight checks from the configs alone (no vllm, no torch).
Both validate the config first."""

from __future__ import annotations

import argparse

from llama4spec.cli.common import Command, add_overrides, compose, out
from llama4spec.cli.jsonout import add_json_flag, emit, finding, model_source, schema


def _arguments(what: str):
    def arguments(p: argparse.ArgumentParser) -> None:
        add_overrides(p)
        add_json_flag(p, what)
    return arguments


def _models(p) -> list[tuple]:
    return [("target", p.target)] + ([("draft", p.draft)] if p.draft else [])


def _params(params) -> dict | None:
    if params is None:
        return None
    return {"total": params.total, "linear": params.linear, "other": params.other, "active": params.active,
            "parts": dict(params.parts)}


def memory_document(result, models: list[tuple]) -> dict:
    """``memory --json``: the plan's every figure (sizes in bytes), the verdict and the suggestions."""
    import dataclasses

    plan = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
            if f.name not in ("target_params", "draft_params", "suggestions", "problems")}
    plan["target_params"], plan["draft_params"] = _params(result.target_params), _params(result.draft_params)
    return {"schema": schema("memory"), "fits": result.fits, "problems": list(result.problems),
            "suggestions": [{"overrides": o, "kv_tokens": t} for o, t in result.suggestions],
            "models": [model_source(role, m) for role, m in models], "plan": plan}


def _doctor(args: argparse.Namespace) -> int:
    from llama4spec.preflight import ERROR, examine, pairing, findings as render
    from llama4spec.preflight.doctor import WARNING

    p = pairing(compose(args.overrides).cfg)
    if args.json:
        found = examine(p)
        errors = sum(f.severity == ERROR for f in found)
        emit({"schema": schema("doctor"), "ok": not errors, "errors": errors,
              "warnings": sum(f.severity == WARNING for f in found),
              "models": [model_source(role, m) for role, m in _models(p)],
              "findings": [finding(f) for f in found]})
        return 1 if errors else 0
    render.sources(out, [("target", p.target)] + ([("draft", p.draft)] if p.draft else []))
    found = examine(p)
    render.findings(out, found)
    return 1 if any(f.severity == ERROR for f in found) else 0


def _memory(args: argparse.Namespace) -> int:
    from llama4spec.preflight import device_memory_gib, pairing, findings as render
    from llama4spec.preflight.memory import suggest

    cfg = compose(args.overrides).cfg
    p = pairing(cfg)
    if not args.json:
        render.sources(out, _models(p))
    result = suggest(cfg, p.target.config, p.draft.config if p.draft else None, device_memory_gib(cfg))
    if args.json:
        emit(memory_document(result, _models(p)))
        return 0 if result.fits else 1
    render.memory_plan(out, result)
    return 0 if result.fits else 1


COMMANDS = [
    Command("doctor", "check the target/draft pairing from the configs alone (exit 1 on an error)",
            _arguments("the findings (schema llama4spec.doctor/1)"), _doctor,
            examples=["llama4spec doctor experiment=scout_eagle_reference",
                      "llama4spec doctor draft=tiny_eagle_imperfect --json"]),
    Command("memory", "memory plan per GPU from the configs alone: weights, KV cache, verdict (exit 1 when it "
            "does not fit)", _arguments("the plan (schema llama4spec.memory/1)"), _memory, aliases=["plan"],
            examples=["llama4spec memory target=llama4_scout parallel=tp4 hardware=h100_80gb",
                      "llama4spec memory experiment=maverick_eagle3"]),
]
