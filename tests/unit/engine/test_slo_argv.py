"""The SLO on vLLM's benchmark command line: --goodput on every benchmark, an open-loop probe's flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.engine.bench_flags import bench_flags, goodput_pairs, probe_flags, resolve_thresholds, static_thresholds
from llama4spec.errors import UserError

URL = "http://127.0.0.1:8000"


def _cfg(*overrides):
    return compose_config(list(overrides)).cfg


def _value(flags, flag):
    return flags[flags.index(flag) + 1]


def test_no_slo_leaves_the_command_as_it_was():
    flags = bench_flags(_cfg(), URL, Path("/r"), "record.json", "x")
    assert "--goodput" not in flags and "--burstiness" not in flags and "--save-detailed" not in flags
    assert _value(flags, "--metric-percentiles") == "50,99"


def test_every_benchmark_gets_the_slo_thresholds_given():
    flags = bench_flags(_cfg("slo=interactive"), URL, Path("/r"), "record.json", "x")
    i = flags.index("--goodput")
    assert flags[i + 1:i + 3] == ["ttft:1000", "tpot:50"] and flags[i + 3].startswith("--")
    assert _value(flags, "--metric-percentiles") == "50,95,99"  # the attainment quantile: the binding metric
    assert "--max-concurrency" in flags  # a closed-loop benchmark keeps its cap
    flags = bench_flags(_cfg("slo=batch", "slo.attainment=0.975"), URL, Path("/r"), "record.json", "x")
    assert flags[flags.index("--goodput") + 1] == "e2el:60000"
    assert _value(flags, "--metric-percentiles") == "50,97.5,99"


def test_goodput_words_round_trip_and_keep_vllms_order():
    assert goodput_pairs({"e2el": 1500.0, "ttft": 33.333333333333336}) == ["ttft:33.333333333333336", "e2el:1500"]
    assert float(goodput_pairs({"tpot": 0.1 + 0.2})[0].split(":")[1]) == 0.1 + 0.2


def test_relative_slo_waits_for_its_step_then_multiplies_its_medians():
    cfg = _cfg("slo.relative_to=base", "slo.ttft=3.0", "slo.tpot=1.5", "slo.e2el_ms=9000")
    assert static_thresholds(cfg) == {}
    assert "--goodput" not in bench_flags(cfg, URL, Path("/r"), "r.json", "x")
    resolved = resolve_thresholds(cfg, {"ttft": 25.0, "tpot": 8.0, "e2el": 300.0})
    assert resolved == {"ttft": 75.0, "tpot": 12.0, "e2el": 9000.0}
    flags = bench_flags(cfg, URL, Path("/r"), "r.json", "x", goodput=resolved)
    assert flags[flags.index("--goodput") + 1:flags.index("--goodput") + 4] == ["ttft:75", "tpot:12", "e2el:9000"]
    with pytest.raises(UserError, match="slo.tpot=1.5 is relative to step base, whose record has no positive median TPOT"):
        resolve_thresholds(cfg, {"ttft": 25.0})


def test_burstiness_reaches_vllm():
    assert _value(bench_flags(_cfg("bench.burstiness=0.5"), URL, Path("/r"), "r.json", "x"), "--burstiness") == "0.5"


def test_probe_is_open_loop_with_enough_prompts_goodput_and_per_request_data():
    cfg = _cfg("slo=interactive", "bench.burstiness=2")
    flags = probe_flags(cfg, URL, Path("/r"), "probe.json", "p", rate=2.5, duration_s=60)
    assert "--max-concurrency" not in flags
    assert _value(flags, "--request-rate") == "2.5"
    assert _value(flags, "--num-prompts") == "150"  # ceil(60 s x 2.5 req/s) > bench.num_prompts
    assert _value(flags, "--burstiness") == "2"
    assert "ttft:1000" in flags and "--save-detailed" in flags
    few = probe_flags(cfg, URL, Path("/r"), "probe.json", "p", rate=0.1, duration_s=30)
    assert _value(few, "--num-prompts") == str(cfg.bench.num_prompts)  # never fewer than configured
    odd = probe_flags(cfg, URL, Path("/r"), "probe.json", "p", rate=1.0 / 3, duration_s=10)
    assert float(_value(odd, "--request-rate")) == 1.0 / 3


@pytest.mark.parametrize("overrides,rate,duration,expected", [
    (["slo=interactive"], 0.0, 60, "request rate must lie in (0, 10000]"),
    (["slo=interactive"], 20_000.0, 60, "request rate must lie in (0, 10000]"),
    (["slo=interactive"], float("nan"), 60, "request rate"),
    (["slo=interactive"], 1.0, 0, "duration must lie in (0, 3600]"),
    (["slo=interactive"], 1.0, 7200, "duration must lie in (0, 3600]"),
    ([], 1.0, 60, "a probe measures attainment of an SLO"),
])
def test_probe_refuses_what_it_cannot_measure(overrides, rate, duration, expected):
    with pytest.raises(UserError) as info:
        probe_flags(_cfg(*overrides), URL, Path("/r"), "p.json", "p", rate=rate, duration_s=duration)
    assert expected in str(info.value)
