"""A capacity step banded by input length (``bands:``): one search per server and band on the same
start, each band's gains against no speculation in the same band, where speculation stops adding
capacity and the route vLLM 0.32 allows, in capacity.json, report.md, report.html and a rebuilt
report; bad bands one line, exit 2. The searches are simulated (``tests.recorded_runs``); the
pure verdicts on hand-made records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llama4spec.analysis.bands import InputBand
from llama4spec.capacity import bands
from llama4spec.capacity.write_report import Setting
from llama4spec.runbook.plan import plan_file
from tests.helpers import REPO
from tests.recorded_runs import finished_capacity_run
from tests.unit.runbook.test_report_page import Parsed

RUNBOOK = REPO / "runbooks" / "tiny_cpu_capacity_bands.yaml"
NONE, EAGLE = "capacity-none", "capacity-tiny_eagle_contrast"
SHORT, LONG = "input_band-1-16", "input_band-65-128"
# short prompts: EAGLE carries more than twice the requests; long ones: a third fewer
CAPACITIES = {f"{NONE}-search-{SHORT}": 3.0, f"{EAGLE}-search-{SHORT}": 7.0,
              f"{NONE}-search-{LONG}": 6.0, f"{EAGLE}-search-{LONG}": 4.0}


@pytest.fixture(scope="module")
def banded_run(tmp_path_factory) -> Path:
    return finished_capacity_run(tmp_path_factory.mktemp("bands") / "run", CAPACITIES, runbook=RUNBOOK)


def test_each_server_is_searched_once_per_band_on_one_start(tmp_path: Path) -> None:
    plan = plan_file(RUNBOOK, lambda name: tmp_path, [])
    ids = [p.id for p in plan.steps]
    assert ids[3:] == [NONE, f"{NONE}-search-{SHORT}", f"{NONE}-search-{LONG}", f"{NONE}-stop",
                       EAGLE, f"{EAGLE}-search-{SHORT}", f"{EAGLE}-search-{LONG}", f"{EAGLE}-stop", "capacity"]
    keys = plan.get("capacity").step.keys
    assert keys.band_key == "bench.input_band" and keys.baseline == f"{NONE}-search-{SHORT}"
    assert keys.band_of == {sid: sid.rsplit("input_band-", 1)[1] for sid in CAPACITIES}
    for sid in CAPACITIES:  # each band's own prompts, written into the probe's directory before it runs
        argv = plan.get(sid).argv
        path = argv[argv.index("--dataset-path") + 1]
        assert path.startswith(str(plan.get(sid).dir / "probes")) and keys.band_of[sid] in path
    assert keys.settings_record()["bands"] == keys.band_of  # plan.json: what report and report.html read back


def test_the_report_says_where_speculation_stops_adding_capacity(banded_run: Path) -> None:
    record = json.loads((banded_run / "capacity" / "capacity.json").read_text())
    found = record["input_bands"]
    assert [g["band"] for g in found["gains"]] == ["1-16 tokens", "65-128 tokens"]
    short, long = found["gains"]
    assert short["best"] == "EAGLE k=3" and short["low"] > 1 and short["verdict"] == "more"
    assert long["high"] < 1 and long["verdict"] == "less"
    assert short["ratio"] == pytest.approx(7 / 3, rel=0.25) and long["ratio"] == pytest.approx(4 / 6, rel=0.25)
    assert found["sentence"].startswith("speculation stops adding capacity between 1-16 tokens and 65-128 tokens")
    assert "route prompts longer than 16 tokens to a server without speculation" in found["routing"]
    assert record["headline"] == found["sentence"]
    names = list(record["settings"])
    assert names == ["no speculation, 1-16 tokens", "EAGLE k=3, 1-16 tokens", "no speculation, 65-128 tokens",
                     "EAGLE k=3, 65-128 tokens"]
    # each gain against no speculation in its own band, never across bands
    eagle_long, none_long = record["settings"]["EAGLE k=3, 65-128 tokens"], record["settings"]["no speculation, 65-128 tokens"]
    assert eagle_long["gain"]["ratio"] == pytest.approx(eagle_long["rate"] / none_long["rate"])
    text = (banded_run / "capacity" / "report.md").read_text()
    assert "## Input length" in text and "| 65-128 tokens | EAGLE k=3 |" in text and found["routing"] in text
    page = Parsed((banded_run / "report.html").read_text()).all_text()
    assert found["sentence"] in page and "1-16 tokens: best EAGLE k=3 at" in page


def test_report_rebuilds_the_banded_capacity_report(cli, banded_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(banded_run, run)
    shutil.rmtree(run / "capacity")
    done = cli("report", str(run))
    assert done.returncode == 0, done.stderr
    assert json.loads((run / "capacity" / "capacity.json").read_text()) == \
        json.loads((banded_run / "capacity" / "capacity.json").read_text())
    assert "stops adding capacity" in done.stdout


BANDS = "bands: [[1, 16], [65, 128]]"


@pytest.mark.parametrize("old,new,said", [
    (BANDS, "bands: [16, 128]", "a prompt file's bands are [LOW, HIGH] token counts"),
    (BANDS, "bands: [[1, 16], [10, 128]]", "[1, 16] and [10, 128] overlap"),
    ("serve.engine_nice=19]", "serve.engine_nice=19, memory.max_model_len=150]",
     "[65, 128] (128 tokens) + bench.output_len 32 exceed the server's max_model_len 150"),
    (BANDS, "bands: [[1, 16], [20, 30]]", "[20, 30] is empty: no prompt of"),
    (BANDS, "bands: [[1, 16]]", "give 2 to 16 input-length bands"),
])
def test_bad_bands_are_one_line_exit_2(cli, tiny_dir, tmp_path: Path, old: str, new: str, said: str) -> None:
    path = tmp_path / "runbook.yaml"
    path.write_text(RUNBOOK.read_text().replace(old, new))
    done = cli("run", str(path), "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr and done.stderr.count("\n") == 1, done.stderr


# -- the verdicts, on hand-made records ------------------------------------------------------------

def _record(*gains: tuple[float, float, float] | None) -> dict:
    settings = {"no speculation": {"gain": None}}
    settings.update({f"EAGLE k={i + 1}": {"gain": None if g is None else dict(zip(("ratio", "low", "high"), g))}
                     for i, g in enumerate(gains)})
    return {"settings": settings}


B1, B2, B3 = InputBand(1, 16), InputBand(17, 64), InputBand(65, 128)


def test_a_band_adds_capacity_when_one_gain_is_declared_above_1_and_costs_when_all_are_below() -> None:
    assert bands.band_gain(B1, _record((1.5, 1.1, 2.0), (0.9, 0.5, 1.2))).verdict == "more"
    assert bands.band_gain(B1, _record((0.7, 0.5, 0.9), (0.6, 0.4, 0.8))).verdict == "less"
    assert bands.band_gain(B1, _record((0.7, 0.5, 0.9), (1.0, 0.8, 1.2))).verdict == "undecided"
    assert bands.band_gain(B1, _record(None)).verdict == "not measured"
    best = bands.band_gain(B1, _record((1.2, 0.9, 1.5), (1.4, 1.1, 1.8)))
    assert best.best == "EAGLE k=2" and best.ratio == 1.4


@pytest.mark.parametrize("verdicts,start,routes", [
    (("more", "more", "more"), "speculation adds capacity in every band measured", False),
    (("less", "undecided", "less"), "speculation adds capacity in no band measured", False),
    (("more", "less", "less"), "speculation stops adding capacity between 1-16 tokens and 17-64 tokens", True),
    (("more", "undecided", "less"), "speculation stops adding capacity between 1-16 tokens and 17-64 tokens", True),
    (("more", "more", "undecided"), "speculation stops adding capacity between 17-64 tokens and 65-128 tokens", False),
    (("more", "undecided", "more"), "speculation adds capacity in 1-16 tokens, 65-128 tokens but not in every", False),
])
def test_the_break_and_the_route(verdicts, start: str, routes: bool) -> None:
    gains = {"more": (1.5, 1.2, 1.9), "less": (0.5, 0.4, 0.7), "undecided": (1.0, 0.8, 1.3)}
    found = [bands.band_gain(b, _record(gains[v])) for b, v in zip((B1, B2, B3), verdicts)]
    assert bands.sentence(found).startswith(start)
    route = bands.routing(found)
    assert (route is not None) == routes
    if routes:
        below = 16 if verdicts[1] == "less" else 64
        assert f"route prompts longer than {below} tokens" in route and "vLLM 0.32 has no lookahead" in route
        assert "2.00x [1.43, 2.50] the requests of EAGLE k=1 in 65-128 tokens" in route


def test_groups_take_each_bands_baseline_by_the_baselines_setting() -> None:
    settings = [Setting(f"{s}-{b}", n, Path(".")) for s, n in (("n", "no speculation"), ("e", "EAGLE k=3"))
                for b in ("16", "128")]
    found = bands.groups(settings, "n-16", {s.id: s.id.split("-")[1] for s in settings})
    assert [(g.band.low, g.baseline, [s.id for s in g.settings]) for g in found] == [
        (16, "n-16", ["n-16", "e-16"]), (128, "n-128", ["n-128", "e-128"])]
    assert bands.groups(settings, "n-16", {})[0].band is None  # not banded: one group


def test_a_setting_that_fails_down_to_min_rate_is_bounded_there_and_costs_capacity() -> None:
    """Every run of EAGLE fails (30% good) from 8 req/s down to min_rate 2: its capacity is below 2
    (the runs at 2 fail the 0.9 target at 95%), so its gain over a baseline that holds at about 20
    is at most 2 / L0, declared below 1: a band where it runs so costs capacity, and the route says
    how much more no speculation carries there."""
    from llama4spec.capacity import probing as cap
    from llama4spec.capacity import tables
    from llama4spec.capacity.search_settings import Settings
    from llama4spec.capacity.strategies.base import of
    from llama4spec.capacity.write_report import fitted_answer
    from tests.recorded_runs import simulated_search

    settings = Settings(start_rate=8.0, min_rate=2.0)
    strategy, failing = of(settings, 0.9), cap.begin(settings.bisect(0.9))
    n = cap.decidable_requests(failing.settings)
    while (move := strategy.move(failing))[0] is not None:
        failing = strategy.add(failing, move[0], cap.Run(0.3, n, "tpot", 1.0, 0.1, {"ttft": 1.0, "tpot": 0.3}), move[1])
    holding = simulated_search(settings, 20.0)
    searches = {"no speculation": holding, "EAGLE k=3": failing}
    record = tables.analyse(searches, "no speculation", "an SLO", fitted={k: fitted_answer(v) for k, v in searches.items()})
    eagle, base = record["settings"]["EAGLE k=3"], record["settings"]["no speculation"]
    assert eagle["rate"] is None and eagle["high"] == 2.0 and "the SLO failed at the lowest rate, 2 req/s" in eagle["sentence"]
    assert eagle["gain"]["ratio"] is None and eagle["gain"]["high"] == pytest.approx(2.0 / base["low"]) and base["low"] > 2
    found = [bands.band_gain(B1, {"settings": {"x": {"gain": {"ratio": 2.0, "low": 1.4, "high": 2.9}}}}),
             bands.band_gain(B3, record)]
    assert found[1].verdict == "less"
    route = bands.routing(found)
    assert f"at least {base['low'] / 2.0:.2f}x the requests of EAGLE k=3 in 65-128 tokens" in route
