"""The benchmark record: one typed object for one ``vllm bench serve`` run, written by the bench
runner and read by compare, resume, the sweep report and run summaries alike."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from llama4spec.results.acceptance import AcceptanceCounters

KIND = "llama4spec.bench"
# Figures of vLLM's result JSON a summary shows.
FIGURES = ("request_throughput", "output_throughput", "total_token_throughput", "mean_ttft_ms",
           "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
           "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "completed", "failed")


@dataclass
class BenchRecord:
    """What one benchmark run produced: vLLM's result JSON plus acceptance from /metrics deltas."""

    label: str
    url: str | None = None
    argv: list[str] = field(default_factory=list)  # the pasteable `vllm bench serve` command
    returncode: int | None = None
    wall_time_s: float | None = None
    lookahead: int | None = None
    acceptance: AcceptanceCounters | None = None
    result: dict[str, Any] | None = None  # vLLM's result JSON (None: the run wrote none)

    @property
    def completed(self) -> int:
        value = (self.result or {}).get("completed", 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @property
    def counted(self) -> bool:
        """Whether this run counts as a measurement: exited 0 and completed at least one request."""
        return self.returncode == 0 and self.completed > 0

    def figure(self, key: str) -> float | None:
        """A finite number from vLLM's result, else None."""
        value = (self.result or {}).get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return float(value)

    @property
    def acceptance_length(self) -> float | None:
        if self.acceptance is not None:
            return self.acceptance.mean_acceptance_length
        return self.figure("spec_decode_acceptance_length")

    @property
    def acceptance_rates(self) -> list[float] | None:
        if self.acceptance is not None:
            return self.acceptance.rate_per_position(self.lookahead)
        rates = (self.result or {}).get("spec_decode_per_position_acceptance_rates")
        return list(rates) if isinstance(rates, list) else None

    def figures(self) -> dict[str, Any]:
        """The figures a run summary shows."""
        out: dict[str, Any] = {k: (self.result or {})[k] for k in FIGURES if k in (self.result or {})}
        out["mean_acceptance_length"] = self.acceptance.mean_acceptance_length if self.acceptance else None
        out["acceptance_rate_per_position"] = (self.acceptance.rate_per_position(self.lookahead)
                                               if self.acceptance else None)
        return out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": KIND, "label": self.label, "url": self.url, "argv": self.argv,
            "returncode": self.returncode, "wall_time_s": self.wall_time_s, "lookahead": self.lookahead,
            "acceptance": self.acceptance.to_record(self.lookahead) if self.acceptance else None,
        }
        if self.result is not None:
            data["result"] = self.result
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], fallback_label: str = "result") -> "BenchRecord":
        """A record of this tool, or a plain ``vllm bench serve --save-result`` JSON."""
        if data.get("kind") == KIND:
            result = data.get("result")
            argv = data.get("argv")
            k = data.get("lookahead")
            return cls(
                label=str(data.get("label") or fallback_label),
                url=data.get("url") if isinstance(data.get("url"), str) else None,
                argv=[str(a) for a in argv] if isinstance(argv, list) else [],
                returncode=data.get("returncode") if isinstance(data.get("returncode"), int) else None,
                wall_time_s=data.get("wall_time_s") if isinstance(data.get("wall_time_s"), (int, float)) else None,
                lookahead=k if isinstance(k, int) and not isinstance(k, bool) else None,
                acceptance=AcceptanceCounters.from_record(data.get("acceptance")),
                result=dict(result) if isinstance(result, Mapping) else None,
            )
        return cls(label=str(data.get("label") or fallback_label), returncode=0, result=dict(data))

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")


def read(path: Path) -> BenchRecord | None:
    """The record at ``path``, or None when it is missing or unreadable."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return BenchRecord.from_dict(data, Path(path).parent.name) if isinstance(data, dict) else None
