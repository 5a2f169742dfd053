"""noise.json: a noise profile measured by ``llama4spec calibrate``, written and read back through its
model (``noise_records.ProfileRecord``), checked against where it is to be used."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from llama4spec.errors import UserError
from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.noise import CALIBRATE, Component, Noise

FORMAT = 1  # noise.json's format


def profile_source(path: Path | str) -> str:
    return f"profile {path}"


MATCHED = ("vllm_version", "vllm_build", "device", "target", "tensor_parallel_size")  # must agree to reuse a profile


@dataclass(frozen=True)
class Fingerprint:
    """Where a profile was measured."""

    vllm_version: str
    vllm_build: str  # cpu | cuda <version> | rocm ...
    device: str  # the CPU model, or the GPU model and its count
    device_detail: str  # CPU flags that matter (avx512f, amx), or the GPU driver
    target: str
    tensor_parallel_size: int
    concurrency: int


@dataclass(frozen=True)
class Profile:
    noise: Noise
    start_s: float  # seconds to start a server
    run_s: float  # seconds per counted run
    fingerprint: Fingerprint
    design: str  # sequential | back_to_back
    starts: int
    runs: int
    extra: dict = field(default_factory=dict)  # the A/A check and anything else recorded beside


def _component_json(c: Component | None, confidence: float = CONFIDENCE):
    if c is None:
        return None
    low, high = c.interval(confidence)
    return {"sd": c.sd, "var": c.var, "df": c.df, "sd_interval": [low, high], "confidence": confidence,
            "source": c.source}


def profile_json(p: Profile) -> dict:
    return {"format": FORMAT, "kind": "noise profile", "design": p.design, "starts": p.starts, "runs": p.runs,
            "between": _component_json(p.noise.between), "within": _component_json(p.noise.within),
            "paired": _component_json(p.noise.paired), "n0": p.noise.n0,
            "costs": {"start_s": p.start_s, "run_s": p.run_s}, "fingerprint": asdict(p.fingerprint), **p.extra}


def write_profile(path: Path, p: Profile) -> None:
    from llama4spec.files import write_json

    write_json(path, profile_json(p))


PROFILE_FIX = f"{CALIBRATE} (it writes noise.json)"


def _bad(path, what: str) -> UserError:
    return UserError(f"{path}: {what}; {PROFILE_FIX}")


def read_profile(path: Path, here: Fingerprint | None = None) -> Profile:
    """noise.json read back through its model (``noise_records.ProfileRecord``: every component,
    cost and count finite and bounded) and checked: UserError (one line naming the field and the
    rule, or the difference, and the fix) for a file cut short, a field out of its bounds or of the
    wrong type, or one measured elsewhere (``here``: the fingerprint of where it is to be used; its
    fields that are empty are not compared)."""
    rec = _profile_record(path)
    source = profile_source(path)

    def one(c) -> Component | None:
        return None if c is None else Component(c.sd ** 2, c.df, source)

    fp = Fingerprint(**rec.fingerprint.model_dump())
    if here is not None:
        for key in MATCHED:
            theirs, ours = getattr(fp, key), getattr(here, key)
            if ours not in (None, "") and theirs != ours:
                raise UserError(f"{path}: measured with {key.replace('_', ' ')} {theirs!r}, this run has {ours!r}; "
                                f"a profile holds only where it was measured: {CALIBRATE}")
    noise = Noise(one(rec.between), one(rec.within), one(rec.paired), n0=rec.n0)
    extra = {} if rec.aa_check is None else {"aa_check": rec.aa_check.model_dump()}
    return Profile(noise, rec.costs.start_s, rec.costs.run_s, fp, rec.design, rec.starts, rec.runs, extra)



def _profile_record(path: Path):
    """noise.json through its model (``noise_records.ProfileRecord``): UserError, one line, otherwise."""
    from llama4spec.stats.noise_records import ProfileRecord
    from llama4spec.files import Expect, read_json
    from llama4spec.records.base import validated

    data = read_json(Path(path), Expect("noise profile", PROFILE_FIX, 1 << 20))
    if not isinstance(data, dict):
        raise _bad(path, f"holds a JSON {type(data).__name__}, not a noise profile")
    return validated(ProfileRecord, data, str(path), PROFILE_FIX)


def _register() -> None:
    from llama4spec.stats.noise_records import ProfileRecord
    from llama4spec.records.registry import Entry, register

    register(Entry("noise.json", ProfileRecord, "llama4spec.noise/1",
                   "written by `llama4spec calibrate`; read by a sweep's `noise:` key, `calibrate --check` and "
                   "`report` (the prior a plan records)", _profile_record))


_register()
