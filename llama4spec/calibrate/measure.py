"""The calibration's plan (the generated runbook, planned like any other) and its result once the
runbook has run: the profile, written to noise.json in the run directory."""

from __future__ import annotations

from pathlib import Path

from llama4spec.stats.profile import Profile, write_profile
from llama4spec.calibrate import design as calibration
from llama4spec.calibrate.record import measure
from llama4spec.runbook.noise_prior import cpu_flags, fingerprint
from llama4spec.calibrate.settings import Settings, problems
from llama4spec.errors import UserError

SOURCE = Path("<calibrate>")
NOISE_FILE = "noise.json"


def make(settings: Settings, overrides: list[str], run_dir: Path):
    """The plan of the calibration's runbook; UserError listing every problem (nothing started)."""
    from llama4spec.runbook.plan import make_plan
    from llama4spec.runbook.schema import parse
    from llama4spec.runbook.to_yaml import to_yaml

    bad = problems(settings)
    if bad:
        raise UserError(*bad)
    runbook, bad = parse(calibration.runbook(settings, overrides), SOURCE)
    if bad or runbook is None:
        raise UserError(*bad)
    return make_plan(runbook, run_dir, source=to_yaml(runbook, "calibrate", overrides))


def finish(plan, settings: Settings) -> tuple[Profile, Path]:
    """The profile of a calibration run that has finished, written to its noise.json."""
    from llama4spec.results.provenance import host, versions

    composed = next(p.composed for p in plan.steps if p.composed is not None and p.step.traits.benchmarks)
    try:
        flags = cpu_flags(Path("/proc/cpuinfo").read_text())
    except OSError:
        flags = "unknown"
    profile = measure(plan.run_dir, settings, fingerprint(composed.cfg, host(), versions(), flags))
    path = plan.run_dir / NOISE_FILE
    write_profile(path, profile)
    return profile, path
