"""A capacity step read back from its records: its part of ``llama4spec report`` (``merge_part``:
its searches analysed again, report.md and capacity.json rewritten, the searches copied into a
new output directory) and its section of report.html (``page_part``). Its settings and baseline
come from its plan.json entry (``write_report.from_plan_record``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from llama4spec.engine.secrets import redact
from llama4spec.errors import UserError
from llama4spec.files import json_or_none, plain, write_json
from llama4spec.results import bench as bench_record
from llama4spec.capacity import step_report
from llama4spec.capacity import write_report as capacity_report
from llama4spec.capacity.write_report import SEARCH, Found, Setting, medians_of, probe_dir, read_search
from llama4spec.runbook.rundir import is_step_id, not_run
from llama4spec.runbook.spec import MergeRead, PageRead, ReadBack


def reference_medians(read: ReadBack, settings: list[Setting]) -> dict[str, float] | None:
    """The medians, as its record is now, of the bench step a relative SLO names (its first
    search's search.json says which); None without one (a search.json that is not one says so when
    its setting is read: ``write_report.read_search``)."""
    for setting in settings:
        search, recorded, _ = read_search(setting.dir / SEARCH)
        step = recorded["slo"].get("relative_to") if search is not None else None
        if step:
            found = read.collect([step]) if is_step_id(step) else {}
            return medians_of(found[step].record) if step in found else None
    return None


def _write_searches(out: Path, found: Found) -> None:
    """A merged run's searches (search.json and each probe's record) in directories of its own, so
    that the merged directory is itself a run directory for ``report`` and its page."""
    for setting in found.settings:
        search = found.searches.get(setting.name)
        if search is None or setting.dir.parent == out:
            continue
        data, _ = json_or_none(setting.dir / SEARCH)
        write_json(out / setting.id / SEARCH, data)
        for probe in search.probes:
            record = bench_record.read(probe_dir(setting.dir, probe.rate) / "record.json")
            if record is not None:
                record.write(probe_dir(out / setting.id, probe.rate) / "record.json")


@dataclass
class Rebuilt:
    """A capacity step's part of ``report``: its settings (search steps) and the baseline's."""

    id: str
    settings: list[Setting]
    baseline: str | None
    band_of: dict[str, str] = field(default_factory=dict)  # banded: search step -> its band
    pairs: dict[str, str] = field(default_factory=dict)  # blocks: a setting's search -> its block's baseline search
    found: Found | None = None
    points: list[str] = field(default_factory=list)
    demand: tuple[float | None, float | None] = (None, None)  # the step's load and price, as plan.json recorded
    notes: list[str] = field(default_factory=list)

    @property
    def writes(self) -> list[str]:
        return [s.id for s in self.settings]

    def read(self, ctx: MergeRead) -> None:
        """Its searches analysed (a search.json that is not one refused) before anything is written."""
        load, price = self.demand
        self.found = step_report.analyse_step(self.settings, self.baseline, self.band_of, ctx.failures,
                                                  self.pairs, strict=True, reference=reference_medians(ctx, self.settings),
                                                  load=load, price=price)

    def write(self, ctx: MergeRead) -> int:
        """Its report from its searches (read before) into ``ctx.out``, with the searches themselves
        when that is a new directory; returns the settings missing."""
        found, cid, out = self.found, self.id, ctx.out
        files = {"report": out / cid / "report.md", "analysis": out / cid / "capacity.json",
                 **{f"latency-{s.id}": out / cid / f"latency-{s.id}.png" for s in found.settings}}
        text = capacity_report.write(found, files, ctx.console)
        if not ctx.in_place:
            _write_searches(out, found)
        ctx.comparisons[cid] = text.replace("](latency-", f"]({cid}/latency-")
        return len(found.record["missing"])


def merge_part(sid: str, sources: list[Any]) -> Rebuilt:
    """A capacity step's part of ``report``; UserError when more than one run directory planned it
    (a search goes on with --resume, never by a merge). Each search is read where it lies (the run
    directories and their groups, in order)."""
    planned = [s for s in sources if s.step(sid) is not None]
    if len(planned) > 1:
        raise UserError(f"capacity step '{sid}' searched in {plain(str(planned[0].dir))} and in "
                        f"{plain(str(planned[1].dir))}: a search goes on with --resume, never by a merge; report "
                        f"each run on its own")
    source = planned[0]
    settings, baseline = capacity_report.from_plan_record(source.step(sid), source.kinds(),
                                                          [r for s in sources for r in s.runs])
    return Rebuilt(sid, settings, baseline, capacity_report.bands_of(source.step(sid)),
                   capacity_report.pairs_of(source.step(sid)), demand=capacity_report.demand_of(source.step(sid)))


def page_part(read: PageRead, step: Mapping[str, Any], page) -> None:
    """One capacity step's section of report.html (``capacity.section.CapacitySection``): its
    searches analysed again from their search.json files (one that is not a record is a setting not
    measured, with why), each setting's plot as the step wrote it."""
    from llama4spec.capacity.section import CapacitySection

    source, secrets = read.sources[0], read.secrets
    settings, baseline = capacity_report.from_plan_record(step, source.kinds(), source.runs)
    load, price = capacity_report.demand_of(step)
    found = step_report.analyse_step(settings, baseline, capacity_report.bands_of(step),
                                         not_run(source.status.get("steps") or []), capacity_report.pairs_of(step),
                                         reference=reference_medians(read, settings), load=load, price=price)
    sid = str(step["id"])
    figures = []
    if found.searches:  # every setting's runs against the rate, with the fitted curves
        title = "attainment against request rate, every setting"
        figures.append(read.figure(title, source.dir / sid / capacity_report.FIT_FIGURE))
    for s in settings:
        if s.name not in found.searches:
            continue
        title = redact(f"latency against request throughput, {s.name}", secrets)
        figures.append(read.figure(title, source.dir / sid / f"latency-{s.id}.png"))
    page.sections.append(CapacitySection(sid, redact(found.record, secrets), figures))
