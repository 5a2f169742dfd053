"""``doctor`` and ``memory``: pre-flight checks from the configs alone (no vllm, no torch).
Both validate the config first."""

from __future__ import annotations

import argparse

from llama4spec.cli.common import Command, add_overrides, compose, out


def _doctor(args: argparse.Namespace) -> int:
    from llama4spec.preflight import ERROR, examine, pairing, render

    p = pairing(compose(args.overrides).cfg)
    render.sources(out, [("target", p.target)] + ([("draft", p.draft)] if p.draft else []))
    found = examine(p)
    render.findings(out, found)
    return 1 if any(f.severity == ERROR for f in found) else 0


def _memory(args: argparse.Namespace) -> int:
    from llama4spec.preflight import device_memory_gib, pairing, render
    from llama4spec.preflight.memory import suggest

    cfg = compose(args.overrides).cfg
    p = pairing(cfg)
    render.sources(out, [("target", p.target)] + ([("draft", p.draft)] if p.draft else []))
    result = suggest(cfg, p.target.config, p.draft.config if p.draft else None, device_memory_gib(cfg))
    render.memory_plan(out, result)
    return 0 if result.fits else 1


COMMANDS = [
    Command("doctor", "check the target/draft pairing from the configs alone (exit 1 on an error)", add_overrides,
            _doctor, examples=["llama4spec doctor experiment=scout_eagle_reference",
                               "llama4spec doctor draft=tiny_eagle_imperfect"]),
    Command("memory", "memory plan per GPU from the configs alone: weights, KV cache, verdict (exit 1 when it "
            "does not fit)", add_overrides, _memory, aliases=["plan"],
            examples=["llama4spec memory target=llama4_scout parallel=tp4 hardware=h100_80gb",
                      "llama4spec memory experiment=maverick_eagle3"]),
]
