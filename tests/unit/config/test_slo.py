"""The slo group and bench.burstiness: options, validation (every problem at once, one line each)."""

from __future__ import annotations

import pytest

from llama4spec.cli import complete
from llama4spec.config.compose import compose_config, group_options
from llama4spec.config.conf_dirs import GROUPS, conf_dir
from llama4spec.config.validate import validate


def test_slo_options_and_defaults():
    assert {"none", "interactive", "batch"} <= set(group_options("slo"))
    none = compose_config([]).cfg.slo
    assert (none.name, none.ttft_ms, none.tpot_ms, none.e2el_ms, none.attainment) == ("none", None, None, None, 0.95)
    interactive = compose_config(["slo=interactive"]).cfg.slo
    assert (interactive.ttft_ms, interactive.tpot_ms, interactive.e2el_ms, interactive.attainment) == (1000, 50, None, 0.95)
    assert compose_config(["slo=batch"]).cfg.slo.e2el_ms == 60_000


def test_every_group_is_listed_for_help_completion_and_choices():
    dirs = {p.name for p in conf_dir().iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert set(GROUPS) == dirs == set(complete.GROUPS)


@pytest.mark.parametrize("overrides,expected", [
    (["slo=interactive", "slo.ttft_ms=-1"], "slo.ttft_ms=-1.0: give a time in milliseconds greater than 0"),
    (["slo.tpot_ms=0"], "slo.tpot_ms=0.0: give a time in milliseconds greater than 0"),
    (["slo.e2el_ms=inf"], "slo.e2el_ms=inf: give a time"),
    (["slo.e2el_ms=nan"], "slo.e2el_ms=nan: give a time"),
    (["slo=interactive", "slo.ttft_ms=null", "slo.tpot_ms=null"], "slo=interactive sets no threshold"),
    (["slo=interactive", "slo.attainment=1.5"], "slo.attainment=1.5: give the share of requests"),
    (["slo=interactive", "slo.attainment=0"], "slo.attainment=0.0: give the share"),
    (["slo=interactive", "slo.attainment=-0.2"], "slo.attainment=-0.2: give the share"),
    (["slo.ttft=3"], "multiplies a bench step's median; name the step with slo.relative_to=STEP"),
    (["slo.relative_to=base"], "slo.relative_to=base: give a multiplier"),
    (["slo.relative_to=base", "slo.ttft=-2"], "slo.ttft=-2.0: give a multiplier of the step's median greater than 0"),
    (["slo.relative_to=base", "slo.tpot=0"], "slo.tpot=0.0: give a multiplier"),
    (["slo.relative_to=base", "slo.ttft=2", "slo.ttft_ms=500"], "slo.ttft_ms and slo.ttft both bound TTFT"),
    (["bench.burstiness=0"], "bench.burstiness=0.0: give the gamma shape"),
    (["bench.burstiness=-1"], "bench.burstiness=-1.0"),
])
def test_slo_validation_cases(overrides, expected):
    problems = validate(compose_config(overrides).cfg)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize("overrides", [
    [], ["slo=none"], ["slo=none", "slo.attainment=0.9"], ["slo=interactive"], ["slo=batch"],
    ["slo.ttft_ms=250"], ["slo=interactive", "slo.attainment=1"],
    ["slo=none", "slo.relative_to=baseline", "slo.ttft=3.0", "slo.tpot=1.5"],
    ["slo.relative_to=baseline", "slo.tpot=1.5", "slo.e2el_ms=60000"], ["bench.burstiness=0.5"],
])
def test_valid_slos(overrides):
    assert validate(compose_config(overrides).cfg) == []


def test_every_slo_problem_at_once():
    problems = validate(compose_config(["slo=interactive", "slo.ttft_ms=-1", "slo.tpot_ms=0", "slo.attainment=2",
                                        "bench.burstiness=0"]).cfg)
    assert len(problems) == 4, problems


@pytest.mark.parametrize("args,expected", [
    (["slo=interactive", "slo.ttft_ms=-1"], "slo.ttft_ms=-1.0"),
    (["slo.ttft_ms=abc"], "'slo.ttft_ms=abc'"),
    (["slo.attainment=many"], "slo.attainment=many"),
    (["slo=fast"], "unknown slo option 'fast'; valid options: batch, interactive, none"),
])
def test_bad_slo_exits_2_with_one_line(cli, args, expected):
    result = cli("validate", *args)
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1


def test_show_prints_the_slo(cli):
    result = cli("show", "slo=interactive")
    assert result.returncode == 0, result.stderr
    assert "slo=interactive" in result.stdout and "ttft_ms: 1000.0" in result.stdout
