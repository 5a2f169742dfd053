"""Multi-node planning without an engine: every node's argv and env, the dry run against golden
text, the bad input refused before anything starts (exit 2, one line each)."""

from __future__ import annotations

import shlex
import socket
import sys

import pytest

from llama4spec.config.compose import compose_config, group_options
from llama4spec.config.validate import validate
from llama4spec.multinode.checks import host_problems
from llama4spec.config.layout import is_multinode, problems
from llama4spec.multinode.plan import dry_run_lines, launcher_argv, plan_nodes
from tests.helpers import REPO

MAVERICK = ["target=llama4_maverick", "draft=none", "parallel=two_nodes_tp8_pp2", "hardware=h100_80gb",
            "memory=default", "cluster=two_nodes_ssh", "cluster.python=/opt/venv/bin/python"]
TINY_TWO = ["cluster=tiny_two_host", "parallel=tiny_two_host_tp2"]


def cfg_of(*overrides: str):
    return compose_config(list(overrides)).cfg


def test_presets_compose_and_plan():
    assert {"local", "tiny_two_host", "two_nodes_ssh", "slurm_two_nodes"} <= set(group_options("cluster"))
    for cluster in ("tiny_two_host", "two_nodes_ssh", "slurm_two_nodes"):
        cfg = cfg_of(f"cluster={cluster}", "parallel=tiny_two_host_tp2")
        assert problems(cfg) == [] and validate(cfg) == []
        nodes = plan_nodes(cfg)
        assert [n.rank for n in nodes] == [0, 1]


def test_maverick_two_nodes_flags_and_env(gpu_build):
    cfg = cfg_of(*MAVERICK)
    assert is_multinode(cfg) and problems(cfg) == [] and validate(cfg) == []
    leader, follower = plan_nodes(cfg)
    tail = ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
    assert leader.argv[:3] == ["vllm", "serve", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"]
    assert leader.argv[-8:] == ["--nnodes", "2", "--node-rank", "0", "--master-addr", "10.0.0.1", "--master-port", "29500"]
    assert follower.argv[-9:] == ["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port",
                                  "29500", "--headless"]
    for node in (leader, follower):
        assert all(flag in node.argv for flag in tail)
    assert "--headless" not in leader.argv
    assert leader.env == {"VLLM_HOST_IP": "10.0.0.1", "GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}
    assert follower.env["VLLM_HOST_IP"] == "10.0.0.2"
    assert leader.exec_argv == leader.argv  # GPU build: the leader is plain `vllm serve` here


def test_follower_goes_through_ssh_as_one_quoted_remote_command(gpu_build):
    cfg = cfg_of(*MAVERICK, "cluster.ssh_options=[-p,2222]")
    follower = plan_nodes(cfg)[1]
    ssh = follower.exec_argv
    assert ssh[0] == "ssh" and "BatchMode=yes" in ssh and ssh[-2] == "node1" and ssh[ssh.index("-p") + 1] == "2222"
    assert shlex.split(ssh[-1]) == follower.remote_argv  # the remote shell gets back exactly our argv
    remote = follower.remote_argv
    assert remote[0] == "env" and "VLLM_HOST_IP=10.0.0.2" in remote and "NCCL_SOCKET_IFNAME=eth0" in remote
    assert remote[remote.index("--") - 3:remote.index("--")] == ["/opt/venv/bin/python", "-m", "llama4spec.multinode.lifeline"]
    assert remote[remote.index("--") + 1:remote.index("--") + 4] == ["/opt/venv/bin/python", "-m", "llama4spec.multinode.follower"]


def test_a_json_flag_survives_the_remote_shell():
    cfg = cfg_of(*TINY_TWO, "cluster.python=/venv/bin/python")
    follower = plan_nodes(cfg)[1]
    spec = follower.remote_argv[follower.remote_argv.index("--speculative-config") + 1]
    assert spec.startswith('{"method":"eagle"')
    assert shlex.split(follower.exec_argv[-1]) == follower.remote_argv
    assert "VLLM_CPU_OMP_THREADS_BIND=1" in follower.remote_argv


def test_cpu_build_leader_runs_the_api_server_module():
    leader = plan_nodes(cfg_of(*TINY_TWO))[0]
    assert leader.exec_argv[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert leader.exec_argv[leader.exec_argv.index("--node-rank") + 1] == "0"
    assert leader.env["VLLM_CPU_OMP_THREADS_BIND"] == "0" and leader.env["GLOO_SOCKET_IFNAME"] == "l4s-veth0"


def test_prefix_launcher_is_an_argv_with_the_host_filled_in(gpu_build):
    cfg = cfg_of(*MAVERICK, "cluster=slurm_two_nodes")
    follower = plan_nodes(cfg)[1]
    # hosts from the allocation: a placeholder per rank until the job runs (tests/unit/launch: real nodes)
    assert follower.exec_argv[:5] == ["srun", "--nodes=1", "--ntasks=1", "--overlap", "--nodelist=slurm-node1"]
    assert follower.exec_argv[5:] == follower.remote_argv
    assert launcher_argv(cfg, follower.host, ["true"])[-1] == "true"


def test_ray_layouts_stay_one_process():
    cfg = cfg_of("parallel=ray_tp8_pp2", "target=llama4_scout", "draft=eagle_llama4_scout")
    assert not is_multinode(cfg) and problems(cfg) == []


def test_dry_run_golden(gpu_build):
    lines = dry_run_lines(cfg_of(*MAVERICK), plan_nodes(cfg_of(*MAVERICK)))
    golden = REPO / "tests" / "golden" / "multinode_maverick_two_nodes.dry_run.txt"
    assert "\n".join(lines) + "\n" == golden.read_text()


@pytest.mark.parametrize("overrides,expected", [
    (["parallel=tiny_two_host_tp2"], "parallel.nnodes=2 needs 2 hosts but cluster 'local' lists 0"),
    ([*TINY_TWO, "parallel.nnodes=3", "cluster.hosts=[{address: 10.77.0.1},{address: 10.77.0.2},{address: 10.77.0.3}]"],
     "world size 2 (tensor_parallel_size 2 x pipeline_parallel_size 1) is not divisible by nnodes=3"),
    ([*TINY_TWO, "cluster.hosts.1.address=10.77.0.1"], "repeats an earlier host's"),
    ([*TINY_TWO, "cluster.master_port=8000"], "cluster.master_port=8000 is also serve.port"),
    ([*TINY_TWO, "cluster.launcher=pdsh"], "cluster.launcher 'pdsh' is not supported"),
    ([*TINY_TWO, "cluster.launcher=prefix"], "cluster.launcher=prefix needs cluster.prefix"),
])
def test_layout_problems(overrides, expected):
    found = problems(cfg_of(*overrides))
    assert len(found) == 1 and expected in found[0], found


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once closed


def test_unreachable_host_and_foreign_leader_address():
    cfg = cfg_of(*TINY_TWO, "cluster.hosts.1.address=127.0.0.2", f"cluster.ssh_options=[-p,{_closed_port()}]")
    found = host_problems(cfg, plan_nodes(cfg))
    assert len(found) == 2
    assert "cluster.hosts.0.address 10.77.0.1 is not an address of this machine" in found[0]
    assert "cluster.hosts.1 (127.0.0.2): cannot reach the host over ssh" in found[1]


def test_master_port_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = cfg_of(*TINY_TWO, "cluster.hosts.0.address=127.0.0.1", f"cluster.master_port={port}",
                     "cluster.launcher=prefix", "cluster.prefix=[env]")
        found = host_problems(cfg, plan_nodes(cfg, python=sys.executable))
    assert found == [f"master port {port} on 127.0.0.1 is already in use; stop what listens there or pick another "
                     f"with cluster.master_port=N"]


def test_cli_refuses_bad_layouts_with_exit_2_and_one_line_each(cli):
    done = cli("serve", "parallel=tiny_two_host_tp2", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: parallel.nnodes=2 needs 2 hosts but cluster 'local' lists 0; pick a cluster preset "
                      "(cluster=...) or list cluster.hosts"]
    done = cli("serve", *TINY_TWO, "cluster.hosts.1.address=127.0.0.2", f"cluster.ssh_options=[-p,{_closed_port()}]",
                   timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")][-1].startswith(
        "error: cluster.hosts.1 (127.0.0.2): cannot reach the host over ssh")


def test_cli_dry_run_prints_every_node(cli):
    done = cli("serve", *MAVERICK, "--dry-run", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "node 0 (leader) on 10.0.0.1 (here):" in done.stdout and "node 1 (follower) on 10.0.0.2:" in done.stdout
    assert "--node-rank 1 --master-addr 10.0.0.1 --master-port 29500 --headless" in done.stdout


RUNBOOK = """name: two_hosts
description: the tiny pair across two hosts
overrides: [cluster=tiny_two_host, parallel=tiny_two_host_tp2]
steps:
  - {id: eagle, kind: serve}
  - {id: bench, kind: bench, server: eagle}
  - {id: stop, kind: stop, server: eagle}
"""


def test_runbook_serve_step_plans_every_node(cli, tmp_path):
    from llama4spec.runbook.plan import plan_file

    path = tmp_path / "two_hosts.yaml"
    path.write_text(RUNBOOK)
    plan = plan_file(path, lambda name: tmp_path / "runs" / name, [])
    serve = plan.get("eagle")
    assert [n.rank for n in serve.nodes] == [0, 1]
    assert serve.exec_argv == serve.nodes[0].exec_argv and serve.env["VLLM_HOST_IP"] == "10.77.0.1"
    assert serve.artifacts["log"].name == "node0.log" and serve.artifacts["log_node1"].name == "node1.log"
    assert serve.artifacts["log"].parent.name == "eagle"  # the step's own directory
    assert plan.to_record()[0]["nodes"][1]["argv"][-1] == "--headless"
    done = cli("run", str(path), "--dry-run", "--runs-dir", str(tmp_path / "runs"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "node 1 (follower) on 10.77.0.2: vllm serve" in done.stdout


def test_runbook_refuses_a_bad_layout_when_planning(cli, tmp_path):
    path = tmp_path / "two_hosts.yaml"
    path.write_text(RUNBOOK.replace("cluster=tiny_two_host, ", ""))
    done = cli("run", str(path), "--dry-run", "--runs-dir", str(tmp_path / "runs"), timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "step 'eagle': parallel.nnodes=2 needs 2 hosts but cluster 'local' lists 0" in done.stderr
