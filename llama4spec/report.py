"""Rendering: Rich trees and tables. Renderers take a Console and return nothing."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.tree import Tree


def _add(tree: Tree, value: Any) -> None:
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, dict) and sub:
                _add(tree.add(f"[bold]{key}[/bold]"), sub)
            else:
                tree.add(f"[bold]{key}[/bold]: {sub!r}" if not isinstance(sub, str) else f"[bold]{key}[/bold]: {sub}")
    else:
        tree.add(repr(value))


def config_tree(console: Console, raw: DictConfig, choices: dict[str, str]) -> None:
    title = "config  " + "  ".join(f"[cyan]{g}[/cyan]={o}" for g, o in choices.items())
    tree = Tree(title)
    _add(tree, OmegaConf.to_container(raw, resolve=True))
    console.print(tree)


def engine_args_panel(console: Console, llm_kwargs: dict[str, Any], serve_line: str, env: dict[str, str]) -> None:
    body = ",\n".join(f"    {k}={v!r}" for k, v in llm_kwargs.items())
    console.print(Panel(Syntax(f"LLM(\n{body},\n)", "python", word_wrap=True), title="offline: vllm.LLM", expand=False))
    console.print(Panel(Syntax(serve_line, "bash", word_wrap=True), title="server: vllm serve", expand=False))
    if env:
        console.print(Panel("\n".join(f"{k}={v}" for k, v in env.items()), title="environment", expand=False))


def problems(console: Console, items: list[str]) -> None:
    for item in items:
        console.print(f"[bold red]error:[/bold red] {item}", highlight=False, soft_wrap=True)
