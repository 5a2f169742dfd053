"""A capacity search's settings are declared once (``capacity.search_settings.Settings``):
the capacity step's runbook keys, the settings each generated search step carries, and the
``llama4spec capacity`` flags with their help all come from that one object."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from llama4spec.cli.common import add_settings_flags
from llama4spec.errors import UserError
from llama4spec.capacity import search as search_step
from llama4spec.capacity.search_settings import Settings
from llama4spec.capacity.strategies.fit import FitSearch
from llama4spec.runbook.fields import runbook_keys
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.steps import kind
from tests.helpers import REPO

TINY = REPO / "runbooks" / "tiny_cpu_capacity.yaml"
SETTINGS = [f.name for f in dataclasses.fields(Settings)]


def test_every_setting_is_a_key_of_the_capacity_step_and_no_search_step_restates_one() -> None:
    assert set(SETTINGS) <= runbook_keys(kind("capacity").Keys)
    assert [f.name for f in dataclasses.fields(search_step.Keys)] == ["server", "relative_to", "settings", "overrides"]
    assert runbook_keys(search_step.Keys) == set()  # generated only: a runbook writes no search step


def test_the_capacity_step_hands_its_settings_whole_to_every_search_it_generates(tmp_path: Path) -> None:
    path = tmp_path / "rb.yaml"
    path.write_text(TINY.read_text().replace("precision: 0.1", "precision: 0.2\n    search: bisect\n    confirm: 2"))
    plan = plan_file(path, lambda name: tmp_path / "run", [])
    capacity = plan.get("capacity").step.keys.settings
    searches = [p.step.keys.settings for p in plan.steps if p.kind == "search"]
    assert len(searches) == 3 and all(s is capacity for s in searches)
    assert (capacity.precision, capacity.search, capacity.confirm, capacity.start_rate) == (0.2, "bisect", 2.0, 8.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        capacity.start_rate = 1.0  # type: ignore[misc]


def test_a_misspelled_setting_gets_the_closest_key(tmp_path: Path) -> None:
    path = tmp_path / "rb.yaml"
    path.write_text(TINY.read_text().replace("precision: 0.1", "min_probe_run: 3"))
    with pytest.raises(UserError) as info:
        plan_file(path, lambda name: tmp_path / "run", [])
    assert info.value.problems == [f"{path}: step 'capacity': unknown key 'min_probe_run' for a capacity step; "
                                   f"did you mean 'min_probe_runs'?"]


def test_the_flags_and_their_help_come_from_the_settings() -> None:
    parser = argparse.ArgumentParser()
    flags = add_settings_flags(parser, Settings)
    assert flags == {"start_rate": "--start-rate", "max_rate": "--max-rate", "min_rate": "--min-rate", "search": "--search",
                     "precision": "--precision", "min_probe_runs": "--min-probe-runs",
                     "max_probe_runs": "--max-probe-runs", "max_probes": "--max-probes", "duration_s": "--duration-s",
                     "confirm": "--confirm"}  # extra_args and confidence: runbook keys only
    helps = {a.dest: a for a in parser._actions}
    for name, flag in flags.items():
        field = next(f for f in dataclasses.fields(Settings) if f.name == name)
        action = helps[name]
        assert action.option_strings == [flag] and action.default is None  # left out: the step's default
        assert action.help.startswith(field.metadata["help"].replace("%", "%%"))
        if field.default is not None:
            shown = f"{field.default:g}" if isinstance(field.default, float) else str(field.default)
            assert f"(default {shown}" in action.help
    assert helps["search"].choices == ("fit", "bisect") and helps["max_probe_runs"].type is int
    assert "at most 3600" in helps["duration_s"].help and helps["confirm"].type is float
    given = parser.parse_args(["--start-rate", "4", "--search", "bisect", "--max-probes", "9"])
    assert (given.start_rate, given.search, given.max_probes, given.precision) == (4.0, "bisect", 9, None)


def test_the_search_settings_follow_from_the_one_object() -> None:
    s = Settings(start_rate=4.0, max_rate=50.0, search="bisect", min_probe_runs=3, max_probe_runs=5, max_probes=9,
                 confirm=None)
    bisect = s.bisect(0.9)
    assert (bisect.start, bisect.cap, bisect.target, bisect.min_runs, bisect.max_runs, bisect.max_probes,
            bisect.confirm, bisect.precision) == (4.0, 50.0, 0.9, 3, 5, 9, None, 0.05)
    fit = FitSearch(Settings(start_rate=4.0, max_rate=50.0, max_probes=12), 0.9).fitted
    assert (fit.start, fit.cap, fit.max_runs, fit.precision, fit.target) == (4.0, 50.0, 12, 0.10, 0.9)
    assert Settings(start_rate=80.0, max_rate=50.0).problems() == [
        "the start rate 80 is above the highest rate 50; start at or below it"]


@pytest.mark.parametrize("search", ["fit", "bisect"])
def test_a_setting_that_fails_everywhere_stops_at_min_rate_not_at_one_request_in_100_s(search: str) -> None:
    """A search whose every run fails goes down by halves: with ``min_rate`` it stops there, said."""
    from llama4spec.capacity import probing as cap
    from llama4spec.capacity.strategies.base import of

    settings = Settings(start_rate=8.0, min_rate=1.0, search=search, max_probes=24)
    strategy = of(settings, 0.9)
    found = cap.begin(settings.bisect(0.9))
    rates, requests = [], cap.decidable_requests(found.settings)
    while (move := strategy.move(found))[0] is not None:
        rates.append(move[0])
        found = strategy.add(found, move[0], cap.Run(0.0, requests, "tpot", 1.0, 0.1, {"tpot": 0.0}), move[1])
    assert min(rates) >= 1.0 and 1.0 in rates  # it probed the lowest rate and nothing below it
    assert "1" in strategy.move(found)[1] and "lowest rate" in strategy.move(found)[1]
