"""The fitted capacity figure: one PNG with every setting's runs, curve, band and interval, and the
isotonic curve where the logistic shape does not fit."""

from __future__ import annotations

import math

from llama4spec.analysis import capacity_fit as cf
from llama4spec.analysis.capacity_plot import capacity_fits
from tests.helpers import png_series


def _runs(capacity: float) -> list[cf.Run]:
    def p(rate: float) -> float:
        return 1 / (1 + math.exp((math.log(rate / capacity) - 0.15 * math.log(9)) / 0.15))

    return [cf.Run(r, round(p(r) * 300), 300) for r in (capacity / 2, capacity * 0.9, capacity, capacity * 1.1,
                                                          capacity * 1.3) for _ in range(2)]


def test_every_setting_is_drawn_with_its_curve_band_and_interval(tmp_path) -> None:
    s = cf.Settings(start=8.0, target=0.9)
    rising = [cf.Run(r, round(y * 200), 200) for r, y in ((10, 0.92), (20, 0.5), (30, 0.7), (40, 0.85), (50, 0.99))]
    settings = {name: (runs, cf.answer(s, runs)) for name, runs in
                (("no speculation", _runs(25.0)), ("EAGLE k=3", _runs(40.0)), ("EAGLE k=5", rising))}
    path = tmp_path / "capacity.png"
    labels = capacity_fits(settings, 0.9, path)
    assert png_series(path) == labels
    for name in ("no speculation", "EAGLE k=3"):
        a = settings[name][1]
        assert {f"{name}: runs", f"{name}: fitted curve", f"{name}: 95% band",
                f"{name}: capacity {a.estimate:.3g} [{a.low:.3g}, {a.high:.3g}]"} <= set(labels)
    assert "EAGLE k=5: isotonic (the logistic shape does not fit)" in labels
    assert not any(label.startswith("EAGLE k=5: fitted") for label in labels)
    assert "target attainment 0.9" in labels
