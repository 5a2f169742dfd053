"""A ``stop`` step: stop a server started by an earlier serve step (its whole process group)."""

from __future__ import annotations

from typing import Any


def plan(ctx, p) -> None:
    pass


def execute(run, p) -> dict[str, Any]:
    server = run.servers.get(p.step.server)
    if server is not None:  # none when its serve step was measured in an earlier run
        server.stop()
    return {}


def describe(p, say) -> None:
    say(f"    stop server '{p.step.server}' (its whole process group)")
