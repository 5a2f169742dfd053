"""``doctor`` and ``memory``: pre-flight checks from the configs alone (no vllm, no torch).
Both validate the config first."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import RUNS_DIR, Command, add_overrides, compose, out
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


def _doctor_arguments(p: argparse.ArgumentParser) -> None:
    _arguments("the findings (schema llama4spec.doctor/1)")(p)
    p.add_argument("--runbook", type=Path, metavar="RUNBOOK",
                   help="check a runbook instead (a file or a shipped runbook's name): every engine step's pairing, "
                        "and the rules across steps (servers a step compares that vLLM schedules differently); "
                        "the overrides apply to every step")


def runbook_findings(path: Path, overrides: list[str]) -> list[tuple[list[str], object]]:
    """(the steps, finding) for a runbook, planned as its dry run plans it (nothing written): each engine
    step's doctor findings (one finding found at several steps said once, naming them), then the
    rules across steps."""
    from llama4spec.preflight import examine, pairing
    from llama4spec.runbook.plan import plan_file
    from llama4spec.runbook.schedulers import findings as across

    plan = plan_file(path, lambda name: RUNS_DIR / name / "doctor", overrides)
    at: dict[str, tuple[object, list[str]]] = {}
    for step in plan.steps:
        if step.composed is None or not step.step.traits.starts_engine:
            continue
        for f in examine(pairing(step.composed.cfg)):
            at.setdefault(f.line(), (f, []))[1].append(step.id)
    return [(ids, f) for f, ids in at.values()] + [([], f) for f in across(plan)]  # these name their steps


def _steps(ids: list[str]) -> str:
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return f"step{'s' if len(ids) > 1 else ''} {shown}"


def _doctor_runbook(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from llama4spec.cli.paths import runbook_path
    from llama4spec.preflight import ERROR, findings as render
    from llama4spec.preflight.doctor import ORDER
    from llama4spec.preflight.rule import WARNING

    found = sorted(runbook_findings(runbook_path(args.runbook), list(args.overrides)), key=lambda x: ORDER[x[1].severity])
    errors = sum(f.severity == ERROR for _, f in found)
    if args.json:
        emit({"schema": schema("doctor"), "ok": not errors, "errors": errors,
              "warnings": sum(f.severity == WARNING for _, f in found), "models": [],
              "findings": [{**finding(f), "steps": ids} for ids, f in found]})
    else:
        render.findings(out, [replace(f, what=f"{_steps(ids)}: {f.what}") if ids else f for ids, f in found])
    return 1 if errors else 0


def _doctor(args: argparse.Namespace) -> int:
    from llama4spec.preflight import ERROR, examine, pairing, findings as render
    from llama4spec.preflight.rule import WARNING

    if args.runbook is not None:
        return _doctor_runbook(args)
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
            _doctor_arguments, _doctor,
            examples=["llama4spec doctor experiment=scout_eagle_reference",
                      "llama4spec doctor draft=tiny_eagle_imperfect --json",
                      "llama4spec doctor --runbook tiny_cpu_eagle_vs_baseline"]),
    Command("memory", "memory plan per GPU from the configs alone: weights, KV cache, verdict (exit 1 when it "
            "does not fit)", _arguments("the plan (schema llama4spec.memory/1)"), _memory, aliases=["plan"],
            examples=["llama4spec memory target=llama4_scout parallel=tp4 hardware=h100_80gb",
                      "llama4spec memory experiment=maverick_eagle3"]),
]
