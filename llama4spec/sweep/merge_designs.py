"""The designs of the sweeps merged by ``report``: runs of one runbook may have measured a sweep in
different designs (one interleaved, its baseline's runs tagged with the candidate they pair with;
one sequential). They merge, and the report says in one line what that means (the sweep's merge
part's ``notes``)."""

from __future__ import annotations

from typing import Any

from llama4spec.files import plain


def designs_of(sources: list[Any]) -> dict[str, dict[str, list[Any]]]:
    """Sweep id -> the design each source (``merge.Source``) measured its pairs in (its plan.json's
    ``design.design``) -> the sources that did, in order."""
    out: dict[str, dict[str, list[Any]]] = {}
    for s in sources:
        for step in s.record.root if s.record is not None else []:
            design = step.design.get("design") if step.design is not None else None
            if isinstance(design, str):
                out.setdefault(step.id, {}).setdefault(plain(design, 40), []).append(s)
    return out


def design_warnings(sources: list[Any], sid: str) -> list[str]:
    """One line when sweep ``sid`` was measured in more than one design across the runs merged: its
    paired (back-to-back) runs pair within the run that measured them only, and the merged points'
    comparison is not back to back (the other run's runs were measured one setting after another)."""
    out = []
    designs = designs_of(sources).get(sid, {})
    if len(designs) >= 2:
        said = " and ".join(f"{design} in {', '.join(plain(str(s.dir)) for s in found)}"
                            for design, found in designs.items())
        out.append(f"warning: sweep '{sid}' was measured {said}: the two designs differ, so back-to-back pairs "
                   f"come from one run only and the merged points' comparison is not back to back")
    return out
