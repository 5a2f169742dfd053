"""The ``doctor`` and ``plan`` subcommands (no vllm, no torch)."""

from __future__ import annotations

import argparse

OVERRIDES_HELP = "Hydra overrides, e.g. target=llama4_scout draft=eagle_llama4_scout hardware=h100_80gb"


def cmd_doctor(args: argparse.Namespace) -> int:
    from llama4spec.cli import _composed, out
    from llama4spec.preflight import ERROR, examine, pairing, render

    p = pairing(_composed(args.overrides, check=False).cfg)
    render.sources(out, [("target", p.target)] + ([("draft", p.draft)] if p.draft else []))
    found = examine(p)
    render.findings(out, found)
    return 1 if any(f.severity == ERROR for f in found) else 0


def cmd_plan(args: argparse.Namespace) -> int:
    from llama4spec.cli import _composed, out
    from llama4spec.preflight import device_memory_gib, pairing, render
    from llama4spec.preflight.plan import suggest

    cfg = _composed(args.overrides, check=False).cfg
    p = pairing(cfg)
    render.sources(out, [("target", p.target)] + ([("draft", p.draft)] if p.draft else []))
    result = suggest(cfg, p.target.config, p.draft.config if p.draft else None, device_memory_gib(cfg))
    render.plan(out, result)
    return 0 if result.fits else 1


def register(sub, add) -> None:
    p = add("doctor", cmd_doctor, "check the target/draft pairing from the configs alone (exit 1 on an error)")
    p.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    p = add("plan", cmd_plan, "memory plan per GPU from the configs alone: weights, KV cache, verdict (exit 1 when it does not fit)")
    p.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
