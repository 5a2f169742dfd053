"""A capacity step's section of report.html (``analysis.page.Section``, registered as
``capacity``): its searches analysed again (capacity.json's record), the SLO they recorded, each
setting's latency-throughput plot, and its answer among the page's verdicts. Built by its
``page_part`` (``capacity.read_back``); shown by ``templates/capacity.html.j2``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from llama4spec.capacity import bands as capacity_bands
from llama4spec.capacity import tables as capacity_report
from llama4spec.analysis.page import Figure, Section, Table, register


@register
@dataclass(frozen=True)
class CapacitySection(Section):
    """One capacity step of the run: its searches analysed again (capacity.json's record), the SLO
    they recorded, each setting's latency-throughput plot."""

    kind: ClassVar[str] = "capacity"
    order: ClassVar[int] = 20
    package: ClassVar[str] = "llama4spec.capacity"
    template: ClassVar[str] = "capacity.html.j2"

    id: str
    record: Mapping[str, Any]
    figures: list[Figure] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"Request capacity {self.id}"

    def view(self) -> dict[str, Any]:
        return capacity_view(self)

    def verdicts(self) -> list[str]:
        """Its answer in one line, and how many settings were not measured."""
        lines = [capacity_verdict(self)]
        if self.record.get("missing"):
            lines.append(f"{self.id}: {len(self.record['missing'])} settings not measured (listed below)")
        return lines


def capacity_view(part: CapacitySection) -> dict[str, Any]:
    """A capacity step's section: the headline, the SLO, the table, each setting in words, the plots."""
    r = part.record
    table = Table(f"request capacity under {r['slo']}", list(capacity_report.PAGE_HEADER),
                  capacity_report.page_rows(r), [False, True, True, False, False, True, True, True])
    lines = [capacity_report.method_words(r)]
    for s in r["settings"].values():
        lines.append(f"{s['sentence']}; error bound {s['error_bound']:.2g}")
        lines += [note for note in s["notes"] if s.get("search") == "fit" and note not in s["sentence"]]
    lines += (r.get("demand") or {}).get("lines", [])
    lines += capacity_bands.lines(r.get("input_bands"))
    return {"id": part.id, "title": part.title, "headline": r.get("headline") or "", "slo": capacity_report.slo_lines(
        r.get("thresholds") or {}, r.get("resolved") or {}), "table": table, "lines": lines,
        "missing": list((r.get("missing") or {}).items()), "figures": part.figures,
        "warnings": [f"warning: {w}" for w in r.get("warnings") or []]}


def capacity_verdict(part: CapacitySection) -> str:
    """A capacity step's answer in one line: its headline, else each setting's capacity."""
    r = part.record
    if r.get("headline"):
        return f"{part.id}: {r['headline']}"
    if r["settings"]:
        return f"{part.id}: " + "; ".join(s["sentence"] for s in r["settings"].values())
    return f"{part.id}: no request capacity measured"
