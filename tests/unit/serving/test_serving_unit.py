"""Serving without an engine: benchmark flags, server argv per build, process-group lifetime,
ports in use reported before launch."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import pytest

from llama4spec.engine.args import server_exec_argv
from llama4spec.engine.bench_flags import bench_flags, display_argv, exec_argv
from llama4spec.config.compose import compose_config
from llama4spec.results.acceptance import AcceptanceCounters
from llama4spec.serving.process import ServerError, log_tail, port_in_use, spawn, stop_group, stop_groups
from llama4spec.serving.server import Server
from tests.helpers import free_port


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture()
def busy_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def test_bench_flags_follow_the_bench_config(tmp_path: Path) -> None:
    cfg = compose_config(["bench=mtbench", "serve.served_model_name=scout"]).cfg
    flags = bench_flags(cfg, "http://127.0.0.1:9000/", tmp_path, "r.json", "eagle", ["--ignore-eos"])
    pairs = dict(zip(flags, flags[1:]))
    assert pairs["--base-url"] == "http://127.0.0.1:9000" and pairs["--served-model-name"] == "scout"
    assert pairs["--dataset-name"] == "hf" and pairs["--dataset-path"] == "philschmid/mt-bench"
    assert pairs["--max-concurrency"] == "16" and pairs["--num-prompts"] == "80" and pairs["--seed"] == "0"
    assert pairs["--result-dir"] == str(tmp_path) and pairs["--result-filename"] == "r.json"
    assert "--save-result" in flags and flags[-1] == "--ignore-eos" and "--input-len" not in flags
    assert display_argv(flags)[:3] == ["vllm", "bench", "serve"]
    assert exec_argv(flags)[:3] == [sys.executable, "-m", "llama4spec.serving.vllm_bench"]


def test_bench_cli_parses_every_flag_the_builder_writes(tmp_path: Path) -> None:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cfg = compose_config(["bench=random_tiny"]).cfg
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(bench_flags(cfg, "http://127.0.0.1:9000", tmp_path, "r.json", "x"))
    assert (args.dataset_name, args.input_len, args.output_len, args.max_concurrency) == ("random", 16, 32, 4)
    assert args.save_result and args.result_dir == str(tmp_path)


def test_acceptance_record_from_metric_deltas() -> None:
    before = AcceptanceCounters(10, 30, 27, [10, 9, 8])
    after = AcceptanceCounters(30, 90, 75, [30, 25, 20])
    rec = (after - before).to_record(3)
    assert rec["num_drafts"] == 20 and rec["mean_acceptance_length"] == pytest.approx(1 + 48 / 20)
    assert rec["acceptance_rate_per_position"] == [1.0, 0.8, 0.6]


def test_server_exec_argv_per_build(use_build) -> None:
    cfg = compose_config(["serve.port=8123"]).cfg
    cpu = server_exec_argv(cfg)
    use_build("gpu")
    gpu = server_exec_argv(cfg)
    assert gpu[:3] == ["vllm", "serve", cfg.target.model]
    assert cpu[:5] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", cfg.target.model]
    assert cpu[5:] == gpu[3:] and "--port" in gpu and "8123" in gpu


def test_port_in_use_is_detected(busy_port: int) -> None:
    assert port_in_use("127.0.0.1", busy_port)
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import one_step_plan
    from llama4spec.runbook.steps import make as make_step

    # checked once, before anything starts, by the executor (serve, runbooks alike)
    plan = one_step_plan(make_step("serve", "serve"), Path("/nonexistent"), [f"serve.port={busy_port}"])
    with pytest.raises(Exception, match=f"port {busy_port} on 127.0.0.1 is already in use"):
        execute.preflight(plan, None, {})


def test_process_that_dies_during_start_up_fails_fast_with_its_log_tail(tmp_path: Path) -> None:
    script = "import sys; print('loading'); print('fatal: bad flag', flush=True); sys.exit(3)"
    server = Server([sys.executable, "-c", script], host="127.0.0.1", port=free_port(), log_path=tmp_path / "s.log",
                    health_timeout_s=120)
    started = time.monotonic()
    with pytest.raises(ServerError) as info:
        server.start()
    assert time.monotonic() - started < 10
    assert "exited with code 3 during start-up" in str(info.value) and str(tmp_path / "s.log") in str(info.value)
    assert info.value.log_tail[-1] == "fatal: bad flag"


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(600)\n"
    )
    proc = spawn([sys.executable, "-c", script], {}, tmp_path / "p.log")
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.1)
    grandchild = int(pid_file.read_text())
    assert _pid_alive(grandchild)
    stop_group(proc, grace_s=5)
    assert proc.poll() is not None
    time.sleep(0.2)
    assert not _pid_alive(grandchild)


def test_stop_groups_asks_every_process_at_once_then_kills_what_is_left(tmp_path: Path) -> None:
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    procs = [spawn([sys.executable, "-c", stubborn], {}, tmp_path / f"{n}.log") for n in range(2)]
    time.sleep(0.5)  # both have set their handler
    asked: list[int] = []
    started = time.monotonic()
    stop_groups(procs, 1.0, ask=lambda p: asked.append(p.pid))
    assert asked == [p.pid for p in procs]
    assert time.monotonic() - started < 5  # one wait for both, then SIGKILL straight away
    assert [p.returncode for p in procs] == [-9, -9]


def test_log_tail_can_skip_blank_lines(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("a\n\n  \nb\r\nc\n\n")
    assert log_tail(log, 2) == ["c", ""]
    assert log_tail(log, 2, skip_blank=True) == ["b", "c"]
    assert log_tail(tmp_path / "absent.log", skip_blank=True) == []


def test_cli_serve_and_run_report_a_busy_port_before_launch(cli, busy_port: int, tmp_path: Path) -> None:
    res = cli("serve", f"serve.port={busy_port}", "--log", str(tmp_path / "s.log"), timeout=120)
    assert res.returncode == 2 and f"port {busy_port} on 127.0.0.1 is already in use" in res.stderr
    assert not (tmp_path / "s.log").exists() and "Traceback" not in res.stderr
    res = cli("run", "runbooks/tiny_cpu_eagle_vs_baseline.yaml", f"serve.port={busy_port}",
                  "--runs-dir", str(tmp_path / "runs"), timeout=120)
    assert res.returncode == 2 and f"step 'eagle': port {busy_port} on 127.0.0.1 is already in use" in res.stderr
    assert "step 'baseline'" in res.stderr and not (tmp_path / "runs").exists()


def test_cli_serve_dry_run_prints_the_pasteable_command(cli) -> None:
    res = cli("serve", "serve.port=8124", "--dry-run", timeout=120)
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith("vllm serve ") and "--port 8124" in first and "--speculative-config" in first


def test_a_benchmark_that_completed_no_request_does_not_count(tmp_path) -> None:
    from llama4spec.results.bench import BenchRecord
    from llama4spec.serving.benchmark import failure

    def outcome(code, result):
        return BenchRecord(label="x", returncode=code, result=result)  # as run_bench makes it

    log = tmp_path / "b.log"
    assert outcome(0, {"completed": 16, "failed": 0}).counted
    nothing = outcome(0, {"completed": 0, "failed": 16})
    assert not nothing.counted and "completed no request (16 failed)" in failure(nothing, log)
    assert not outcome(1, None).counted and "exited with code 1" in failure(outcome(1, None), log)
    # the same predicate holds for a record read back from disk (run, resume and sweep report agree)
    outcome(0, {"completed": 16}).write(tmp_path / "rec.json")
    from llama4spec.results.bench import read

    assert read(tmp_path / "rec.json").counted


def test_bench_against_a_url_where_no_server_answers_is_one_clear_error(cli) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = cli("bench", "--url", f"http://127.0.0.1:{port}", timeout=60)
    assert res.returncode == 2 and "no server answers" in res.stderr and "Traceback" not in res.stderr


def test_in_process_steps_get_their_environment_and_give_it_back(monkeypatch) -> None:
    from llama4spec.runbook.steps.environ import process_env as _environment

    monkeypatch.setenv("L4S_KEPT", "before")
    monkeypatch.delenv("L4S_NEW", raising=False)
    with _environment({"L4S_KEPT": "during", "L4S_NEW": "during"}):
        assert os.environ["L4S_KEPT"] == "during" and os.environ["L4S_NEW"] == "during"
    assert os.environ["L4S_KEPT"] == "before" and "L4S_NEW" not in os.environ
