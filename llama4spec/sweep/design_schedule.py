"""A schedule phase (``verify_schedule: true``): after the sweep's servers, one more server running
the lookahead schedule derived from their points (gated by ``Schedule``, which derives it before the
server starts), measured like the others."""

from __future__ import annotations

from dataclasses import dataclass

from llama4spec.config.compose import compose_config
from llama4spec.errors import UserError
from llama4spec.runbook.matrix import ServerGroup
from llama4spec.runbook.spec import Runbook
from llama4spec.sweep.design import Design, Scope
from llama4spec.sweep.expansion import Expansion
from llama4spec.sweep.gates import Schedule


@dataclass(frozen=True)
class SchedulePhase(Design):
    """``verify_schedule: true``: a second phase, the schedule derived from the points before it,
    measured the same way; its stop reason: why there can be no such server."""

    name = "schedule"
    phase = 50

    @classmethod
    def of(cls, x: Expansion) -> SchedulePhase | None:
        return cls() if x.keys.verify_schedule else None

    def expand(self, x: Expansion, groups: list[ServerGroup], scope: Scope) -> list[ServerGroup]:
        before = len(scope.problems)
        schedule(x, scope.runbook, scope.matrix, scope.cli, scope.problems, scope.at)
        if len(scope.problems) > before:
            self.state.stop = scope.problems[-1]
        return groups


def schedule(x: Expansion, runbook: Runbook, matrix: dict[str, list[str]], cli: list[str],
             problems: list[str], at: str) -> None:
    """The schedule-verifying server, appended to ``x`` (or why there can be none, in ``problems``)."""
    found = schedule_server(runbook, x.keys.overrides, matrix, cli)
    if isinstance(found, str):
        problems.append(f"{at}: verify_schedule: {found}")
        return
    sid = x.new_id(f"{x.step.id}-schedule")
    x.out.append(x.make("serve", sid, needs=x.needs(),
                        description=f"sweep '{x.step.id}': the lookahead schedule derived from its points",
                        overrides=[*x.keys.overrides, *found], gate=Schedule(list(x.points))))
    x.out += x.measured_by(sid)
    x.stop(sid)


def schedule_server(runbook: Runbook, overrides: list[str], matrix: dict[str, list[str]],
                    cli: list[str]) -> list[str] | str:
    """The overrides of the schedule-verifying server (its draft, and lookahead = the largest swept),
    or why there can be none."""
    try:
        cfg = compose_config([*runbook.overrides, *overrides, *cli]).cfg
    except UserError:
        return "the sweep's own overrides do not compose (reported above)"
    drafts = [d for d in matrix.get("draft", [cfg.draft.name if cfg.draft.method else "none"])
              if d not in ("none", "null")]
    if len(drafts) != 1:
        return (f"needs exactly one draft in the sweep besides none (found {', '.join(drafts) or 'none'}); "
                f"a schedule is derived per draft")
    try:
        lookahead = max(int(v) for v in matrix.get("lookahead", [str(cfg.lookahead)]))
    except ValueError:
        return "the lookahead values are not whole numbers"
    return [f"draft={drafts[0]}", f"lookahead={lookahead}"]
