"""Which steps a failure blocks (pure: decided from the plan and the steps' statuses so far).

A failed step blocks what depends on it and nothing else, so one broken point of a sweep costs
that point and its server's group, not the sweep:

- a bench or stop step on a server that failed, was skipped, or exited during the run is skipped
  (the executor stops what is left of a server that exited when it finds it gone);
- an explicit ``needs`` on a failed or skipped step blocks, except a need on a step that stops a
  server (that only orders servers that share a port) and the needs of the steps that merge
  results (a sweep, a comparison), which report whatever was measured;
- a compare step whose baseline or candidate bench failed or was skipped is skipped: there is
  nothing to compare.
"""

from __future__ import annotations

from typing import Any, Mapping

from llama4spec.runbook.steps import traits_of

FAILED, SKIPPED = "failed", "skipped"


def _why(dep: str, kinds: Mapping[str, str], entry: Mapping[str, Any], role: str | None = None) -> str | None:
    """Why ``dep`` blocks its dependants, or None when it does not."""
    status = entry.get("status")
    what = f"{role or ('server' if traits_of(kinds.get(dep)).serves else 'step')} '{dep}'"
    if status == FAILED:
        return f"{what} failed"
    if status == SKIPPED:
        reason = entry.get("reason")
        return f"{what} was skipped" + (f" ({reason})" if reason else "")
    return None


def blocked_by(p: Any, statuses: Mapping[str, Mapping[str, Any]], kinds: Mapping[str, str]) -> str | None:
    """Why planned step ``p`` must be skipped, or None when it may run.

    ``statuses``: step id -> its entry in the run's status (``status``, and for a skipped step its
    ``reason``; a server that exited during the run has ``exited``); ``kinds``: step id -> kind.
    """
    step = p.step
    server = step.server if step.server in kinds else None
    if server is not None:
        entry = statuses.get(server, {})
        why = _why(server, kinds, entry)
        if why:
            return why
        if entry.get("exited"):
            return f"server '{server}' exited"
    for r in step.references():
        if r.file_ok and r.ref in kinds:  # a compared result measured in this run
            why = _why(r.ref, kinds, statuses.get(r.ref, {}), r.role)
            if why:
                return why
    if step.traits.merges:  # reports run on whatever was measured
        return None
    for dep in p.needs:
        if dep == server or traits_of(kinds.get(dep)).stops_server:
            continue
        why = _why(dep, kinds, statuses.get(dep, {}))
        if why:
            return why
    return None
