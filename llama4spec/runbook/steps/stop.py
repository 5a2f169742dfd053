"""A ``stop`` step: stop a server started by an earlier serve step (its whole process group)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama4spec.runbook import fields
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind, server_ref


@dataclass
class Keys:
    server: str | None = fields.text(fields.MAX_ID)  # the id of the serve step whose server it stops


def plan(ctx, p) -> None:
    pass


def execute(run, p) -> dict[str, Any]:
    server = run.server(p.step.keys.server)
    if server is not None:  # none when its serve step was measured in an earlier run
        server.stop()
    return {}


def describe(p, say) -> None:
    say(f"    stop server '{p.step.keys.server}' (its whole process group)")


KIND = BaseKind("stop", Keys, Traits(uses_server=True, stops_server=True, describe_first=True), plan, execute,
                describe, required=("server",), references=server_ref)
