"""The fitted capacity figure: one PNG with every setting's runs, curve, band and interval, and the
isotonic curve where the logistic shape does not fit."""

from __future__ import annotations

import math

from llama4spec.capacity import fit as cf
from llama4spec.capacity.plot import capacity_fits
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


def test_an_open_interval_around_an_estimate_beyond_the_runs_is_drawn(tmp_path) -> None:
    """Runs that all but held: the fitted crossing lies above every rate probed and its interval is open
    (as a short search on a noisy machine leaves it); the figure is drawn and says 'open'."""
    runs = [cf.Run(16.0, 48, 48), cf.Run(22.78, 64, 69), *(cf.Run(32.44, a, 98) for a in (51, 98, 98)),
            cf.Run(25.63, 77, 77), *(cf.Run(28.83, a, 87) for a in (87, 84))]
    a = cf.answer(cf.Settings(start=16.0, target=0.8), runs)
    assert a.estimate is not None and a.estimate > 32.44 and (a.low is None or a.high is None)
    labels = capacity_fits({"no speculation": (runs, a)}, 0.8, tmp_path / "open.png")
    assert any(label.startswith(f"no speculation: capacity {a.estimate:.3g} [") and "open" in label for label in labels)


def test_a_run_set_aside_as_an_outlier_is_drawn_as_such(tmp_path) -> None:
    runs = [*_runs(25.0), cf.Run(25.0, 10, 300)]  # a stalled run at the capacity
    a = cf.answer(cf.Settings(start=8.0, target=0.9), runs)
    assert [o.index for o in a.outliers] == [len(runs) - 1]
    labels = capacity_fits({"no speculation": (runs, a)}, 0.9, tmp_path / "stall.png")
    assert {"no speculation: runs", "no speculation: runs set aside as outliers"} <= set(labels)
