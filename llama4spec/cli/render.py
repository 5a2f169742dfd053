"""Renderers shared by commands: the config tree, the engine arguments, problems.
Renderers take a Console and return nothing; user text is escaped, never read as markup."""

from __future__ import annotations

import os
from typing import Any

from omegaconf import DictConfig
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text
from rich.tree import Tree

from llama4spec.engine.secrets import known_secrets, redact, redact_env
from llama4spec.results.provenance import config_secrets, public_config


def _add(tree: Tree, value: Any) -> None:
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, dict) and sub:
                _add(tree.add(f"[bold]{escape(str(key))}[/bold]"), sub)
            else:
                shown = sub if isinstance(sub, str) else repr(sub)
                tree.add(f"[bold]{escape(str(key))}[/bold]: {escape(shown)}")
    else:
        tree.add(escape(repr(value)))


def config_tree(console: Console, raw: DictConfig, choices: dict[str, str]) -> None:
    choices = redact(choices, config_secrets(raw))
    title = "config  " + "  ".join(f"[cyan]{escape(g)}[/cyan]={escape(o)}" for g, o in choices.items())
    tree = Tree(title)
    _add(tree, public_config(raw))
    console.print(tree)


def engine_args_panel(console: Console, llm_kwargs: dict[str, Any], serve_line: str, env: dict[str, str],
                      secrets: tuple[str, ...] = ()) -> None:
    """The ``LLM(...)`` kwargs, the ``vllm serve`` line and the engine env, redacted (``secrets``
    plus what the env, the line and this process's environment reveal)."""
    secrets = (*secrets, *known_secrets({"env": env}, serve_line, llm_kwargs, environ=os.environ))
    llm_kwargs, serve_line = redact(llm_kwargs, secrets), redact(serve_line, secrets)
    body = ",\n".join(f"    {k}={v!r}" for k, v in llm_kwargs.items())
    console.print(Panel(Syntax(f"LLM(\n{body},\n)", "python", word_wrap=True), title="offline: vllm.LLM", expand=False))
    console.print("[bold]server:[/bold] vllm serve")
    console.print(serve_line, soft_wrap=True, highlight=False, markup=False)
    if env:
        shown = redact_env(env, secrets)
        console.print(Panel(Text("\n".join(f"{k}={v}" for k, v in shown.items())), title="environment", expand=False))


def problems(console: Console, items: list[str]) -> None:
    """Error lines (they may quote an override such as +env.HF_TOKEN=...), redacted."""
    secrets = known_secrets(items, environ=os.environ)
    for item in items:
        console.print(f"[bold red]error:[/bold red] {escape(redact(item, secrets))}", highlight=False, soft_wrap=True)
