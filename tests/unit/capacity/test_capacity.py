"""The request capacity search (capacity/probing.py) on synthetic servers: settings, verdicts, moves,
the interval against the true capacity, runs against a dense grid, cliffs, search.json and resume."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from llama4spec.errors import UserError
from llama4spec.capacity import probing as cap
from llama4spec.capacity.answer import capacity, from_json, to_json
from llama4spec.capacity.probing import (Probe, Run, Settings, begin, binding_metric, move, next_probe, record_run,
                                                 standing)
from llama4spec.capacity.verdict import FAILS, HOLDS, OPEN, UNDECIDED, verdict

TARGET = 0.95


class Server:
    """Attainment falls with the rate as a logistic curve (``mid``, ``width``), plus run-to-run noise
    (``run_sd``) and binomial sampling of the requests a run sends (``duration_s`` x rate, at
    least 16); inside ``dip`` (a band of rates) attainment drops to 0.5: a cliff above it."""

    def __init__(self, seed, mid=7.0, width=0.5, run_sd=0.02, duration_s=60.0, dip=None):
        self.rng, self.mid, self.width, self.run_sd, self.duration_s, self.dip = (
            np.random.default_rng(seed), mid, width, run_sd, duration_s, dip)

    def mean(self, rate):
        if self.dip and self.dip[0] <= rate <= self.dip[1]:
            return 0.5
        return 1 / (1 + math.exp((rate - self.mid) / self.width))

    @property
    def capacity(self):
        """The rate at which the mean attainment is the target (outside any dip)."""
        return self.mid + self.width * math.log(1 / TARGET - 1)

    def run(self, rate):
        p = min(1.0, max(0.0, self.mean(rate) + self.rng.normal(0, self.run_sd)))
        n = max(16, math.ceil(rate * self.duration_s))
        return Run(self.rng.binomial(n, p) / n, n, "ttft" if rate >= self.capacity else "tpot", 30.0 * rate)


def search(server, **settings):
    s = begin(Settings(**{"start": 1.0, "target": TARGET, **settings}))
    while (rate := next_probe(s)) is not None:
        s = record_run(s, rate, server.run(rate))
    return s


def grid_runs(true_capacity, precision=0.05, runs=3):
    """A dense grid: rates spaced by the search's precision over [0.5, 2] x capacity, 3 runs each."""
    return runs * (math.floor(math.log(4) / math.log(1 + precision)) + 1)


# -- settings --------------------------------------------------------------------------------------

@pytest.mark.parametrize("settings,expected", [
    (dict(start=0.0), "the start rate must be above 0"),
    (dict(start=-1.0), "the start rate must be above 0"),
    (dict(start=float("nan")), "the start rate must be above 0"),
    (dict(start=50.0, cap=20.0), "the start rate 50 is above the highest rate 20"),
    (dict(start=1.0, cap=20_000.0), "the highest rate must lie in (0, 10000]"),
    (dict(start=1.0, target=1.0), "a capacity search needs an attainment in (0, 1)"),
    (dict(start=1.0, precision=0.001), "the precision must lie in [0.01, 1]"),
    (dict(start=1.0, max_probes=65), "the probes must number 1 to 64"),
    (dict(start=1.0, min_runs=1), "runs per probe must satisfy 2 <= min <= max <= 20"),
    (dict(start=1.0, max_runs=21), "runs per probe must satisfy"),
    (dict(start=1.0, lean_runs=0), "runs before a probe leans must satisfy 1 <= lean <= min runs"),
    (dict(start=1.0, lean_runs=3), "runs before a probe leans must satisfy 1 <= lean <= min runs"),
    (dict(start=1.0, confidence=1.0), "the confidence must lie in (0.5, 1)"),
    (dict(start=1.0, confirm=1.0), "the confirming factor must be above 1"),
    (dict(start=0.005, floor=0.005), "the lowest rate must lie in [0.01, 10000]"),
    (dict(start=0.005), "the start rate 0.005 is below the lowest rate 0.01"),
])
def test_settings_are_refused_one_line_each(settings, expected):
    with pytest.raises(UserError) as info:
        begin(Settings(**settings))
    assert any(expected in line for line in info.value.problems), info.value.problems


def test_every_settings_problem_at_once():
    with pytest.raises(UserError) as info:
        begin(Settings(start=0.0, cap=1e9, max_probes=0, precision=2.0))
    assert len(info.value.problems) == 4, info.value.problems


# -- verdicts at one rate --------------------------------------------------------------------------

def _probe(*attainments, requests=1000):
    return Probe(1.0, tuple(Run(a, requests) for a in attainments))


def test_verdicts_at_one_rate():
    s = Settings(start=1.0)
    assert verdict(s, _probe(1.0)).state == OPEN
    assert standing(s, _probe(1.0, 1.0)) == cap.LEANS_HOLDS and standing(s, _probe(0.9, 0.92)) == cap.LEANS_FAILS
    good = verdict(s, _probe(1.0, 0.995, 1.0, 0.995))
    assert good.state == HOLDS and good.low > TARGET and good.p_holds <= 0.05
    bad = verdict(s, _probe(0.2, 0.25, 0.22))
    assert bad.state == FAILS and bad.high < TARGET
    assert verdict(s, _probe(0.95, 0.96, 0.94, 0.95, 0.97, 0.93)).state == UNDECIDED


def test_a_verdict_rests_on_the_runs_up_to_its_deciding_look():
    s = Settings(start=1.0)
    first = verdict(s, _probe(1.0, 0.995, 1.0, 0.995))
    later = verdict(s, _probe(1.0, 0.995, 1.0, 0.995, 0.2))
    assert later.state == HOLDS and later.runs == first.runs == 4


def test_agreeing_runs_do_not_decide_alone():
    """Two runs that agree exactly still carry the binomial spread of their requests."""
    assert verdict(Settings(start=1.0), _probe(0.97, 0.97, requests=100)).state == OPEN


def test_a_stopped_probe_takes_no_more_runs_and_bad_runs_are_refused():
    s = begin(Settings(start=1.0))
    for a in (1.0, 0.995, 1.0, 0.995):
        s = record_run(s, 1.0, Run(a, 1000))
    assert verdict(s.settings, s.probes[0]).state == HOLDS
    with pytest.raises(ValueError, match="has stopped"):
        record_run(s, 1.0, Run(1.0, 1000))
    for run in (Run(1.5, 10), Run(0.5, 0), Run(0.5, 10, "latency"), Run(0.5, 10, None, -1.0)):
        with pytest.raises(ValueError):
            record_run(s, 2.0, run)


def test_binding_metric_is_the_quantile_highest_against_its_threshold():
    assert binding_metric({"ttft": 900.0, "tpot": 60.0}, {"ttft": 1000.0, "tpot": 50.0}) == "tpot"
    assert binding_metric({"ttft": 1200.0, "tpot": 40.0, "e2el": 1.0}, {"ttft": 1000.0, "tpot": 50.0}) == "ttft"
    assert binding_metric({"ttft": None}, {"ttft": 1000.0}) is None


# -- the moves -------------------------------------------------------------------------------------

def _step(s, attainment, requests=500):
    return record_run(s, next_probe(s), Run(attainment, requests))


def test_brackets_by_doubling_then_bisects():
    s = begin(Settings(start=1.0, confirm=None))
    rates = []
    while (rate := next_probe(s)) is not None:
        rates.append(rate)
        s = record_run(s, rate, Run(1.0 if rate <= 5.0 else 0.0, 500))  # a wall at 5 req/s
    distinct = list(dict.fromkeys(rates))
    assert distinct[:4] == [1.0, 2.0, 4.0, 8.0] and distinct[4] == pytest.approx(math.sqrt(32), rel=1e-3)
    answer = capacity(s)
    assert answer.done and answer.rate <= 5.0 < answer.high and answer.high / answer.rate - 1 <= 0.05


def test_a_probe_leans_after_one_run_and_only_the_bounds_get_the_runs_a_verdict_needs():
    """One run makes a leaning the search moves on (never a verdict); the rates that end up as L
    and U get runs until their verdicts."""
    s = begin(Settings(start=1.0, confirm=None))
    s = record_run(s, 1.0, Run(1.0, 500))
    assert verdict(s.settings, s.probes[0]).state == OPEN and standing(s.settings, s.probes[0]) == cap.LEANS_HOLDS
    assert next_probe(s) == 2.0  # moved on after one run
    while (rate := next_probe(s)) is not None:
        s = record_run(s, rate, Run(1.0 if rate <= 5.0 else 0.0, 500))
    answer, runs = capacity(s), {p.rate: len(p.runs) for p in s.probes}
    assert answer.done and verdict(s.settings, next(p for p in s.probes if p.rate == answer.rate)).state == HOLDS
    assert verdict(s.settings, next(p for p in s.probes if p.rate == answer.high)).state == FAILS
    assert runs[answer.rate] >= 2 and runs[answer.high] >= 2
    assert all(n == 1 for r, n in runs.items() if r not in (answer.rate, answer.high)), runs


def test_a_gap_beside_an_undecided_rate_is_narrowed_only_to_the_zone():
    """Between 5 and 7 req/s runs alternate between 0.85 and 1.0 (mean 0.925, the target 0.95 inside
    their spread): rates there end undecided, and a gap that ends at one is narrowed only while wider
    than UNDECIDED_ZONE x the precision."""
    s = begin(Settings(start=1.0, target=TARGET, confirm=None))
    while (rate := next_probe(s)) is not None:
        done = sum(len(p.runs) for p in s.probes if p.rate == rate)  # alternating at each rate
        attainment = 1.0 if rate <= 5.0 else 0.0 if rate >= 7.0 else (0.85, 1.0)[done % 2]
        s = record_run(s, rate, Run(attainment, 500))
    answer = capacity(s)
    assert answer.done and answer.undecided and answer.rate <= 5.0 and answer.high >= 7.0, answer
    assert answer.stopped.startswith("stopped: undecided at ") and "longer runs" in answer.stopped
    rates = sorted(p.rate for p in s.probes if answer.rate <= p.rate <= answer.high)
    zone = cap.UNDECIDED_ZONE * s.settings.precision
    for lo, hi in zip(rates, rates[1:]):
        if lo in answer.undecided or hi in answer.undecided:
            assert hi / lo - 1 <= zone, (lo, hi, rates)


def test_halves_when_the_start_fails_and_stops_at_the_floor():
    s = begin(Settings(start=8.0, confirm=None))
    rates = []
    while (rate := next_probe(s)) is not None:
        rates.append(rate)
        s = record_run(s, rate, Run(1.0 if rate <= 1.5 else 0.0, 500))
    assert list(dict.fromkeys(rates))[:4] == [8.0, 4.0, 2.0, 1.0]
    nothing = search_wall(start=0.04, wall=0.0)
    assert nothing.rate is None and "nothing held down to the lowest rate, 0.01" in nothing.stopped


def search_wall(wall, **settings):
    s = begin(Settings(**settings))
    while (rate := next_probe(s)) is not None:
        s = record_run(s, rate, Run(1.0 if rate <= wall else 0.0, 500))
    return capacity(s)


def test_stops_at_the_highest_rate_when_nothing_fails():
    answer = search_wall(start=100.0, cap=300.0, wall=1e9)
    assert answer.rate == 300.0 and answer.high is None and "nothing failed up to the highest rate, 300" in answer.stopped


def test_at_most_max_probes():
    answer = search_wall(start=1.0, wall=7.3, max_probes=3)
    assert answer.probes == 3 and answer.done


def test_every_probe_says_why_the_search_went_there():
    s = search(Server(0), start=4.0)
    whys = [p.why for p in s.probes]
    assert whys[0] == "start" and whys[1].startswith("up from 4") and all(whys)
    assert any(w.startswith("between ") for w in whys) and any(w.startswith("confirming") or "up from" in w for w in whys)


# -- the search on a noisy synthetic server --------------------------------------------------------

@pytest.mark.parametrize("start", [1.0, 4.0, 20.0])
def test_interval_contains_the_true_capacity_with_far_fewer_runs_than_a_grid(start):
    """20 seeded servers a start rate: every interval holds the true capacity; the searches use at
    most a third of the runs of a dense grid (rates 5% apart over [0.5, 2] x capacity, 3 runs each)."""
    runs = []
    for seed in range(20):
        server = Server(seed)
        answer = capacity(search(server, start=start))
        assert answer.done and answer.cliff is None
        assert answer.rate <= server.capacity <= answer.high, (seed, answer)
        assert answer.binding == "ttft" and answer.output_throughput == pytest.approx(30.0 * answer.rate)
        runs.append(answer.runs)
    assert np.mean(runs) <= grid_runs(Server(0).capacity) / 3, runs


def test_a_planted_cliff_is_flagged():
    """The SLO fails in a band of rates [3.5, 4.5] and holds again above it up to about 7.5."""
    flagged = 0
    for seed in range(10):
        server = Server(seed, mid=9.0, dip=(3.5, 4.5))
        answer = capacity(search(server, start=1.0))
        assert answer.rate < 3.5 <= answer.high <= 4.5  # the capacity below the first failure
        if answer.cliff is not None:
            flagged += 1
            failed, held = answer.cliff
            assert 3.5 <= failed <= 4.5 and 4.5 < held <= server.capacity
            assert any(n.startswith("cliff:") for n in answer.notes)
    assert flagged >= 9
    smooth = capacity(search(Server(0), start=1.0))
    assert smooth.cliff is None and not any(n.startswith("cliff") for n in smooth.notes)


# -- search.json and resume ------------------------------------------------------------------------

def test_search_json_round_trips_and_a_resumed_search_ends_where_an_uninterrupted_one_does():
    whole = search(Server(3), start=2.0)
    data = json.loads(json.dumps(to_json(whole)))
    assert data["kind"] == cap.KIND and data["next"]["rate"] is None and data["capacity"]["done"]
    first = data["probes"][0]
    assert {"rate", "why", "verdict", "attainment", "interval", "binding", "runs"} <= set(first)
    assert from_json(data) == whole

    server = Server(3)
    part = begin(Settings(start=2.0))
    for _ in range(7):
        part = record_run(part, next_probe(part), server.run(next_probe(part)))
    resumed = from_json(json.loads(json.dumps(to_json(part))))
    while (rate := next_probe(resumed)) is not None:
        resumed = record_run(resumed, rate, server.run(rate))
    assert capacity(resumed) == capacity(whole)


@pytest.mark.parametrize("data,expected", [
    ({"kind": "other"}, "not a capacity search"),
    ({"kind": cap.KIND, "settings": {"start": 1.0, "bogus": 1}}, "unknown keys"),
    ({"kind": cap.KIND, "settings": {"start": 0}}, "the start rate must be above 0"),
    ({"kind": cap.KIND, "settings": {"start": 1.0}, "probes": "x"}, "'probes' must be a list"),
    ({"kind": cap.KIND, "settings": {"start": 1.0}, "probes": [{"rate": -1, "runs": []}]}, "no usable rate"),
    ({"kind": cap.KIND, "settings": {"start": 1.0}, "probes": [{"rate": 1.0, "runs": []}]}, "needs a list of 1 to"),
    ({"kind": cap.KIND, "settings": {"start": 1.0},
      "probes": [{"rate": 1.0, "runs": [{"attainment": 2, "requests": 5}]}]}, "attainment must lie in [0, 1]"),
    ({"kind": cap.KIND, "settings": {"start": 1.0},
      "probes": [{"rate": 1.0, "runs": [{"attainment": 1, "requests": 5, "x": 1}]}]}, "a run that is not one"),
    ({"kind": cap.KIND, "settings": {"start": 1.0},
      "probes": [{"rate": 1.0, "runs": [{"attainment": 1, "requests": 5}]}] * 2}, "no usable rate of its own"),
])
def test_a_bad_search_json_is_one_line(data, expected):
    with pytest.raises(UserError) as info:
        from_json(data)
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_move_of_an_empty_search_is_the_start_rounded():
    assert move(begin(Settings(start=1 / 3))).rate == 0.3333


# -- a benchmark record as a run of the search -----------------------------------------------------

def _record(**result):
    from llama4spec.results.bench import BenchRecord

    base = {"completed": 95, "failed": 5, "duration": 50.0, "request_goodput": 1.8, "output_throughput": 321.0,
            "p95_ttft_ms": 1100.0, "p95_tpot_ms": 30.0}
    return BenchRecord(label="probe", returncode=0, result={**base, **result})


def test_a_benchmark_record_reads_as_a_run():
    run = cap.run_of(_record(), {"ttft": 1000.0, "tpot": 50.0}, 0.95)
    assert run == Run(0.9, 100, "ttft", 321.0)
    detailed = _record(ttfts=[0.2, 0.2], latencies=[1.0, 1.0], output_lens=[5, 5], queue_times=[0.0, 0.9],
                       errors=["", ""], completed=2, failed=0, request_goodput=0.04)
    assert cap.run_of(detailed, {"ttft": 1000.0}, 0.95).attainment == 0.5  # the second waited 0.9 s in the client
    with pytest.raises(UserError, match="no goodput in its result"):
        cap.run_of(_record(request_goodput=None), {"ttft": 1000.0}, 0.95)


def test_rounded_rates_never_leave_the_range():
    assert move(begin(Settings(start=123.456, cap=123.456))).rate == 123.456
    answer = search_wall(start=617.28, cap=1234.56, wall=1e9)
    assert answer.rate == 1234.56 and answer.high is None
