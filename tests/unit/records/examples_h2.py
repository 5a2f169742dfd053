"""Valid records of a bench step and a capacity step, each written by the tool's own writers (the
recorded-run fixtures of ``tests.recorded_runs``, ``points.write``), keyed by their registry key:
the corruption test walks each model's fields over these."""

from __future__ import annotations

import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable


@lru_cache(maxsize=None)
def _built(kind: str) -> Path:
    """A finished run of ``kind`` ("sweep" or "capacity"), built once a process and copied from."""
    from tests.recorded_runs import finished_capacity_run, finished_run

    where = Path(tempfile.mkdtemp(prefix=f"examples-h2-{kind}-")) / "run"
    (finished_run if kind == "sweep" else finished_capacity_run)(where)
    return where


def _copy(kind: str, tmp: Path) -> Path:
    return Path(shutil.copytree(_built(kind), Path(tmp) / f"{kind}-run", dirs_exist_ok=True))


def bench(tmp: Path) -> Path:
    """A sweep point's record.json (repeats, acceptance counters, per-request rows)."""
    return sorted(_copy("sweep", tmp).glob("sweep-tiny_eagle-k3-*/record.json"))[0]


def points(tmp: Path) -> Path:
    """A bench step's summary.json, as the bench step writes it (``vllm_runs`` through ``points.write``)."""
    from llama4spec.records import points as model
    from llama4spec.results import bench as bench_record
    from llama4spec.runbook.rundir import vllm_runs

    record = bench_record.read(bench(tmp))
    config = {"draft": {"name": "tiny_eagle", "method": "eagle"}, "bench": {"max_concurrency": 4, "category": None}}
    path = Path(tmp) / "summary.json"
    model.write(path, vllm_runs(config, record))
    return path


def capacity_search(tmp: Path) -> Path:
    """A fitted search's search.json."""
    return sorted(_copy("capacity", tmp).glob("capacity-*-search/search.json"))[0]


def capacity(tmp: Path) -> Path:
    """A capacity step's capacity.json."""
    return _copy("capacity", tmp) / "capacity" / "capacity.json"


EXAMPLES: dict[str, Callable[[Path], Path]] = {
    "bench": bench, "points": points, "capacity_search": capacity_search, "capacity": capacity,
}
