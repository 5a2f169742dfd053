"""Live progress without an engine: start-up phases read from real vLLM 0.32 log lines, log
following, the finished-request counter, sweep ETA arithmetic, -q/-v parsing, what each
verbosity prints, and one progress bar per offline pass."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from llama4spec.runbook.steps import make as make_step
from llama4spec.sweep.planned import SweepPlan
from llama4spec.runbook.progress import (NORMAL, QUIET, VERBOSE, Progress, duration_text, eta_s, sweep_points,
                                         time_left_s)
from llama4spec.serving.watch import (PHASE_NAMES, LogFollower, PhaseTracker, ServerWatch, extra_requests,
                                      finished_requests, phase_of, requests_done)

# Lines of a real `llama4spec serve` log (vLLM 0.32.0 CPU build, tiny pair + EAGLE), in order,
# with the noise between them; the last three are the GPU model runner's, from vLLM's sources.
REAL_LOG = """\
Triton is installed, but doesn't include CPU backend. Disabling Triton.
(APIServer pid=22252) INFO 11-30 04:43:19 [api_utils.py:347]   █▄█▀ █     █     █     █  model   /root/.cache/llama4spec/tiny-v2/target
(APIServer pid=22252) INFO 11-30 04:43:19 [api_utils.py:286] non-default args: {'host': '127.0.0.1', 'port': 8790}
(APIServer pid=22252) INFO 11-30 04:43:19 [model.py:733] Resolved architecture: Llama4ForCausalLM
(APIServer pid=22252) WARNING 11-30 04:43:19 [cpu.py:224] Triton is not installed. triton-cpu is expected on x86 CPUs.
(EngineCore pid=22603) INFO 11-30 04:43:29 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: model='/root/.cache/llama4spec/tiny-v2/target'
[W1130 04:43:45.858761673 utils.cpp:68] Warning: NUMA binding: Using MEMBIND policy for memory allocation on the NUMA nodes (0).
(Worker pid=22805) INFO 11-30 04:43:45 [cpu_model_runner.py:68] Starting to load model /root/.cache/llama4spec/tiny-v2/target...
Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]
(Worker pid=22805) INFO 11-30 04:43:45 [default_loader.py:501] Loading weights took 0.04 seconds
(Worker pid=22805) INFO 11-30 04:43:47 [cpu_model_runner.py:75] Loading drafter model...
(Worker pid=22805) INFO 11-30 04:43:47 [weight_utils.py:1108] Filesystem type for checkpoints: EXT4. Checkpoint size: 0.00 GiB.
(EngineCore pid=22603) INFO 11-30 04:43:48 [kv_cache_utils.py:2327] CPU KV cache size: 116,480 tokens, Maximum concurrency for 2,048 tokens per request: 56.88x
(Worker pid=22805) INFO 11-30 04:43:53 [cpu_model_runner.py:107] EAGLE drafter KV cache initialized for CPU backend
(EngineCore pid=22603) INFO 11-30 04:43:53 [core.py:402] init engine (profile, create kv cache, warmup model) took 5.01 s
(EngineCore pid=22603) WARNING 11-30 04:43:55 [vllm.py:1703] Enforce eager set, disabling torch.compile, CUDAGraphs, and JIT kernel warmup.
(APIServer pid=22252) INFO 11-30 04:43:55 [entry.py:136] Supported tasks: ['generate']
(APIServer pid=22252) INFO 11-30 04:43:56 [entry.py:140] Starting vLLM server on http://127.0.0.1:8790
(APIServer pid=22252) INFO 11-30 04:43:56 [launcher.py:195] Route: /health, Methods: GET
INFO:     Application startup complete.
"""
GPU_LINES = [
    ("(Worker pid=1) INFO 11-30 04:43:47 [monitor.py:40] Starting torch.compile", "compiling / warming up"),
    ("(Worker pid=1) INFO 11-30 04:43:47 [gpu_worker.py:760] Available KV cache memory: 61.2 GiB",
     "compiling / warming up"),
    ("Capturing CUDA graphs (mixed prompt-decode, PIECEWISE):  40%|████      | 27/67 [00:02<00:03]",
     "capturing graphs"),
]


def test_phases_of_a_real_server_log_in_order() -> None:
    tracker = PhaseTracker()
    seen = [phase for line in REAL_LOG.splitlines() if (phase := tracker.feed(line))]
    assert seen == ["starting the engine", "loading weights", "compiling / warming up", "starting the API server",
                    "ready"]
    assert tracker.phase == "ready"


def test_noise_starts_no_phase() -> None:
    for line in ("Triton is installed, but doesn't include CPU backend. Disabling Triton.",
                 "(EngineCore pid=1) WARNING [vllm.py:1703] Enforce eager set, disabling torch.compile, CUDAGraphs",
                 "(Worker pid=1) INFO [cpu_model_runner.py:107] EAGLE drafter KV cache initialized for CPU backend"):
        assert phase_of(line) is None, line


@pytest.mark.parametrize("line,phase", GPU_LINES)
def test_gpu_runner_lines(line: str, phase: str) -> None:
    assert phase_of(line) == phase


def test_phase_never_goes_back() -> None:
    tracker = PhaseTracker()
    assert tracker.feed(GPU_LINES[2][0]) == "capturing graphs"
    assert tracker.feed("(Worker pid=1) INFO Starting to load model x...") is None  # a second engine's line
    assert tracker.phase == "capturing graphs"
    assert PHASE_NAMES[0] == "starting" and PHASE_NAMES[-1] == "ready"


def test_log_follower_reads_complete_new_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("an earlier run\n")
    follower = LogFollower(log, from_end=True)
    assert follower.read() == []
    with open(log, "a") as f:
        f.write("one\nbar  0%\rbar 100%\r\ntwo wit")
    assert follower.read() == ["one", "bar  0%", "bar 100%"]
    with open(log, "a") as f:
        f.write("hout its end yet\n")
    assert follower.read() == ["two without its end yet"]
    assert LogFollower(tmp_path / "missing.log").read() == []


def test_server_watch_reports_phases_and_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    phases: list[str] = []
    lines: list[str] = []
    watch = ServerWatch([log], phases.append, lines.append)
    watch.start()
    lines_in = REAL_LOG.splitlines()
    log.write_text("\n".join(lines_in[:8]) + "\n")
    watch.tick()
    assert phases == ["starting", "starting the engine", "loading weights"]
    with open(log, "a") as f:
        f.write("\n".join(lines_in[8:15]) + "\n")
    watch.tick()
    watch.ready()  # /health answered
    assert phases == ["starting", "starting the engine", "loading weights", "compiling / warming up",
                      "starting the API server", "ready"]
    assert lines == lines_in[:15]


# -- benchmarks -----------------------------------------------------------------------------------
METRICS = """\
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 3.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 16.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 1.0
# HELP vllm:request_success_created Count of successfully processed requests.
vllm:request_success_created{engine="0",finished_reason="stop",model_name="m"} 1.7960138352219448e+09
vllm:num_requests_running{engine="0",model_name="m"} 2.0
"""


def test_finished_requests_sums_every_reason() -> None:
    assert finished_requests(METRICS) == 20.0
    assert finished_requests("vllm:num_requests_running 1.0\n") is None


def test_extra_requests_from_the_benchmark_flags() -> None:
    assert extra_requests(["--num-prompts", "16", "--ignore-eos", "--num-warmups", "2"]) == 2
    assert extra_requests(["--num-warmups=3", "--ready-check-timeout-sec", "600"]) == 4
    assert extra_requests(["--num-prompts", "16"]) == 0


def test_requests_done_is_a_clamped_delta() -> None:
    assert requests_done(100.0, 100.0, 2, 16) == 0
    assert requests_done(100.0, 101.0, 2, 16) == 0  # a warm-up finished, not a measured request
    assert requests_done(100.0, 110.0, 2, 16) == 8
    assert requests_done(100.0, 130.0, 2, 16) == 16
    assert requests_done(None, 130.0, 2, 16) is None


# -- sweeps: point n of N and the time left --------------------------------------------------------
def test_eta_is_the_mean_point_duration_times_the_points_left() -> None:
    assert eta_s([], 5) is None
    assert eta_s([60.0, 90.0], 4) == 300.0
    assert eta_s([60.0], 0) == 0.0


def test_time_left_adds_the_servers_still_to_start() -> None:
    assert time_left_s([], 3, [40.0], 1) is None  # no point measured yet: no estimate
    assert time_left_s([30.0, 20.0], 4, [40.0, 50.0], 2) == 4 * 25.0 + 2 * 45.0
    assert time_left_s([30.0], 2, [], 1) == 60.0


def test_duration_text() -> None:
    assert duration_text(4.4) == "4 s"
    assert duration_text(185) == "3 min 05 s"
    assert duration_text(3840) == "1 h 04 min"


def _step(step_id: str, kind: str, points: list[str] | None = None, server: str | None = None) -> SimpleNamespace:
    step = make_step(kind, step_id, **({"server": server} if server else {}))
    if points:  # a sweep's points are its expansion's (``SweepPlan``)
        step.expanded = SweepPlan(points=list(points))
    return SimpleNamespace(id=step_id, kind=kind, step=step)


def _sweep_plan() -> SimpleNamespace:
    """Two servers, three points, the report (as runbook.matrix expands a sweep)."""
    ids = ["sweep-none-c1", "sweep-none-c4", "sweep-k3-c1"]
    return SimpleNamespace(steps=[_step("sweep-none", "serve"), _step(ids[0], "bench", server="sweep-none"),
                                  _step(ids[1], "bench", server="sweep-none"), _step("sweep-k3", "serve"),
                                  _step(ids[2], "bench", server="sweep-k3"), _step("sweep", "sweep", ids)])


def _console() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_sweep_points_are_numbered() -> None:
    assert sweep_points(_sweep_plan().steps) == {"sweep-none-c1": (1, 3), "sweep-none-c4": (2, 3),
                                                 "sweep-k3-c1": (3, 3)}


def test_step_lines_show_the_point_and_the_time_left() -> None:
    plan = _sweep_plan()
    console = _console()
    progress = Progress(console, NORMAL).attach(plan)
    for n, p, seconds in zip(range(1, 6), plan.steps, (40.0, 100.0, 50.0, 60.0, 70.0)):
        progress.step(n, 6, p)
        progress.step_done(p, seconds)
    text = console.file.getvalue()
    assert "[1/6] sweep-none: serve\n" in text
    assert "[2/6] sweep-none-c1: bench (sweep point 1 of 3)" in text
    # two points left at 100 s, one server left at 40 s
    assert "[3/6] sweep-none-c4: bench (sweep point 2 of 3, about 4 min 00 s left)" in text
    assert "[4/6] sweep-k3: serve\n" in text
    # one point left at (100 + 50) / 2, no server left
    assert "[5/6] sweep-k3-c1: bench (sweep point 3 of 3, about 1 min 15 s left)" in text


def test_resumed_points_are_not_left() -> None:
    plan = _sweep_plan()
    console = _console()
    progress = Progress(console, NORMAL).attach(plan, skip=["sweep-none-c1", "sweep-none-c4"])
    assert progress.servers_pending == {"sweep-k3"}  # sweep-none serves no point left to measure
    progress.point_seconds.append(30.0)
    progress.step(5, 6, plan.steps[4])
    assert "sweep point 3 of 3, about 30 s left" in console.file.getvalue()


def test_quiet_prints_no_progress_and_verbose_streams_lines() -> None:
    plan = _sweep_plan()
    for level, shown in ((QUIET, False), (NORMAL, True), (VERBOSE, True)):
        console = _console()
        progress = Progress(console, level, redact=lambda t: t.replace("hunter2", "***")).attach(plan)
        progress.step(1, 5, plan.steps[0])
        with progress.activity("sweep-none: starting the server") as live:  # not a terminal: plain lines
            live.phase("starting")
            live.phase("loading weights")
            live.line("INFO key hunter2 loaded")
            live.count(16, 16)
        text = console.file.getvalue()
        assert ("[1/5] sweep-none: serve" in text) is shown
        assert ("loading weights" in text) is shown
        assert ("16/16 requests" in text) is shown
        assert ("INFO key *** loaded" in text) is (level == VERBOSE)
        assert "hunter2" not in text


# -- the CLI: -q and -v --------------------------------------------------------------------------
@pytest.mark.parametrize("argv,level", [
    (["run", "x"], NORMAL),
    (["-v", "run", "x"], VERBOSE),
    (["run", "x", "-v"], VERBOSE),
    (["--quiet", "offline", "lookahead=5"], QUIET),
    (["offline", "lookahead=5", "-q"], QUIET),
    (["serve", "--verbose", "serve.port=8001"], VERBOSE),
])
def test_verbosity_flags(argv: list[str], level: int) -> None:
    from llama4spec.cli.common import verbosity_of
    from llama4spec.cli.main import build_parser

    args = build_parser().parse_args(argv)
    assert verbosity_of(args) == level
    if argv[-1].endswith("=5"):
        assert args.overrides == ["lookahead=5"]


def test_quiet_and_verbose_exclude_each_other() -> None:
    from llama4spec.cli.common import verbosity_of
    from llama4spec.cli.main import build_parser
    from llama4spec.errors import UserError

    with pytest.raises(UserError, match="exclude each other"):
        verbosity_of(build_parser().parse_args(["-q", "run", "x", "-v"]))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "x", "-q", "-v"])


def test_the_setting_reaches_the_executor() -> None:
    from llama4spec.cli.common import set_verbosity

    try:
        set_verbosity(QUIET)
        assert Progress(_console()).quiet
    finally:
        set_verbosity(NORMAL)
    assert not Progress(_console()).quiet


# -- offline: one bar per pass, the engine's noise out of the terminal ----------------------------
def test_one_progress_bar_per_pass() -> None:
    """vLLM calls the use_tqdm hook for the prompts it renders (an iterable) and for the requests
    it processes (a total): only the second draws a bar."""
    from llama4spec.offline.display import _progress

    console = Console(file=io.StringIO(), width=120)
    make = _progress("tiny_eagle k=3", console)
    rendering = make(["a", "b"], desc="Rendering prompts")
    assert list(rendering) == ["a", "b"] and rendering.disable
    bar = make(total=2, desc="Processed prompts", dynamic_ncols=True)
    bar.update(2)
    bar.close()
    text = console.file.getvalue()
    assert text.count("tiny_eagle k=3") == 1 and "Rendering" not in text and "Processed" not in text


def test_engine_stderr_goes_to_its_log(tmp_path: Path) -> None:
    """What the engine's processes print on stderr lands in the engine log, not the terminal."""
    from llama4spec.offline.run import stderr_to

    log = tmp_path / "engine.log"
    with stderr_to(log):
        subprocess.run([sys.executable, "-c", "import sys; print('noise from a child', file=sys.stderr)"],
                       check=True)
    assert "noise from a child" in log.read_text()
