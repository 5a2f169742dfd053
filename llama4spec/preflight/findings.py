"""Rendering of doctor findings and memory plans. Renderers take a Console and return nothing."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from llama4spec.preflight.rule import ERROR, WARNING, Finding
from llama4spec.preflight.memory import GIB, MemoryPlan
from llama4spec.preflight.sources import ModelConfig

STYLE = {ERROR: "bold red", WARNING: "yellow", "info": "cyan"}


def sources(console: Console, models: list[tuple[str, ModelConfig]]) -> None:
    for role, m in models:
        where = {"bundled": "the bundled copy (not in the local cache)", "local": "the directory"}.get(m.source, f"the {m.source}: {m.path}")
        console.print(f"[dim]{role}[/dim] {escape(m.ref)}  [dim]config.json from {escape(where)}[/dim]", highlight=False,
                      soft_wrap=True)


def findings(console: Console, found: list[Finding]) -> None:
    if not found:
        console.print("[green]doctor: no problems found[/green]")
        return
    for f in found:
        console.print(f"[{STYLE[f.severity]}]{f.severity}[/{STYLE[f.severity]}] [bold]{f.rule}[/bold]: {escape(f.what)}",
                      highlight=False, soft_wrap=True)
        console.print(f"    why: {escape(f.why)}", highlight=False, soft_wrap=True)
        console.print(f"    fix: {escape(f.fix)}", highlight=False, soft_wrap=True)
    errors = sum(f.severity == ERROR for f in found)
    warnings = sum(f.severity == WARNING for f in found)
    console.print(f"doctor: {errors} error(s), {warnings} warning(s)")


def _count(n: int) -> str:
    return f"{n / 1e9:,.3f} B" if n >= 1e8 else f"{n / 1e6:,.3f} M" if n >= 1e5 else f"{n:,}"


def _gib(n: float) -> str:
    return f"{n / GIB:,.2f} GiB"


def memory_plan(console: Console, p: MemoryPlan) -> None:
    per_node = -(-p.devices // p.nnodes)
    title = (f"memory plan per device: {p.hardware} ({_gib(p.device_memory)}), {p.devices} device(s)"
             + (f" over {p.nnodes} nodes ({per_node} per node)" if p.nnodes > 1 else ""))
    if p.stages > 1:
        which = "the last, which also holds the draft and the logits" if p.stage == p.stages - 1 else "the fullest"
        title += (f"; figures for a device of pipeline stage {p.stage + 1} of {p.stages} ({which}): "
                  f"vLLM gives every stage the KV cache blocks of the fullest")
    table = Table(title=title, title_justify="left", show_header=True)
    table.add_column("item")
    table.add_column("value", justify="right")
    table.add_column("note", style="dim")
    tp = p.target_params
    table.add_row("target parameters", _count(tp.total), f"active per token {_count(tp.active)}; every expert counted")
    kept = f"; {_count(tp.unconverted)} parameters unconverted (modules_to_not_convert)" if tp.unconverted else ""
    table.add_row("target weights", _gib(p.target_weights), "whole model" + kept)
    if p.draft_params is not None:
        own = any(part.startswith("embeddings") for part in p.draft_params.parts)
        table.add_row("draft parameters", _count(p.draft_params.total),
                      "own token embedding: the last pipeline stage lacks the target's" if own
                      else "embedding shared with the target")
        table.add_row("draft weights", _gib(p.draft_weights), "whole model")
        if p.draft_per_device:
            table.add_row("draft weights on this device", _gib(p.draft_per_device),
                          "sharded over the target's TP whatever draft TP says (vLLM 0.32); fc and norms whole")
    where = "target / (TP x PP)" + (" + draft" if p.draft_per_device else "")
    table.add_row("weights on this device", _gib(p.weights_per_device), where)
    table.add_row("KV per token: target", f"{p.kv_per_token_target:,} B", "this device's layers and KV heads")
    if p.draft_params is not None:
        table.add_row("KV per token: draft", f"{p.kv_per_token_draft:,} B", "the draft's layers share the pool")
    cap = "chunked layers capped at chunk + in-flight tokens" if p.chunk_capped else "every layer keeps every token"
    table.add_row(f"KV per sequence at {p.max_model_len:,}", _gib(p.kv_per_sequence), cap)
    if p.kv_explicit:
        table.add_row("KV cache", _gib(p.kv_budget), "memory.cpu_kvcache_space_gib (VLLM_CPU_KVCACHE_SPACE)")
    else:
        table.add_row("budget", _gib(p.utilization * p.device_memory), f"gpu_memory_utilization {p.utilization:g}")
        table.add_row("working memory: forward pass", _gib(p.activation), "estimate for max_num_batched_tokens")
        table.add_row("working memory: verification", _gib(p.verify), f"lookahead+1 logits x {p.max_num_seqs} sequences")
        table.add_row("runtime overhead", _gib(p.overhead), "hardware.runtime_overhead_gib")
        table.add_row("KV cache left", _gib(p.kv_budget), "")
    table.add_row("KV capacity", f"{p.kv_tokens:,} tokens", "as vLLM reports it at start-up")
    table.add_row(f"sequences at {p.max_model_len:,}", f"{p.concurrency:,.2f}", f"max_num_seqs {p.max_num_seqs}")
    console.print(table)
    if p.fits:
        console.print("[green]verdict: fits[/green]")
        if p.concurrency < p.max_num_seqs:
            console.print(f"[dim]{p.concurrency:.2f} sequences fit at full length; longer batches queue or get preempted[/dim]")
        return
    for problem in p.problems:
        console.print(f"[bold red]verdict: does not fit[/bold red] {escape(problem)}", highlight=False, soft_wrap=True)
    if p.suggestions:
        first, tokens = p.suggestions[0]
        console.print(f"smallest change: [bold]{escape(first)}[/bold] (KV capacity then {tokens:,} tokens)", highlight=False)
        for other, tokens in p.suggestions[1:]:
            console.print(f"  or: {escape(other)} ({tokens:,} tokens)", highlight=False)
    else:
        console.print("no single change fits: combine TP, FP8 and a shorter max_model_len, or use larger GPUs")
