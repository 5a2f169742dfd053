"""hardware.noise: the CPU config records the measured noise as a prior; GPU configs record none."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from omegaconf import OmegaConf

from llama4spec.config.schema import HardwareConfig
from llama4spec.config.validate import _noise_prior

CONF = Path(__file__).resolve().parents[3] / "conf" / "hardware"


def _hardware(name: str, **noise) -> HardwareConfig:
    data = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    if noise:
        data["noise"] = {**data.get("noise", {}), **noise}
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(HardwareConfig), data))


def _problems(hw: HardwareConfig) -> list[str]:
    problems: list[str] = []
    _noise_prior(SimpleNamespace(hardware=hw), problems)
    return problems


def test_cpu_records_the_measured_prior():
    hw = _hardware("cpu")
    assert hw.noise.between_sd == 0.13 and hw.noise.between_df > 0 and "spreads.py" in hw.noise.source
    assert _problems(hw) == []


@pytest.mark.parametrize("name", sorted(p.stem for p in CONF.glob("*.yaml") if p.stem != "cpu"))
def test_gpu_configs_record_none(name):
    hw = _hardware(name)
    assert hw.noise.between_sd is None and _problems(hw) == []


@pytest.mark.parametrize("noise, words", [({"between_sd": -0.1}, "between_sd=-0.1"),
                                          ({"within_df": 0}, "within_df=0"), ({"source": " "}, "source is empty")])
def test_bad_prior(noise, words):
    assert any(words in p for p in _problems(_hardware("cpu", **noise)))
