"""Server groups of a plan (pure): which steps make a group, what it asks for, shards, waves, the
cut-down runbook of one group; devices, hosts and Slurm parameters from text."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from llama4spec.errors import UserError
from llama4spec.engine.devices import cpu_bind, expand_ranges, ranges
from llama4spec.launch.devices import hostnames_inline, hosts_override, job_cpus, slots
from llama4spec.launch.slurm import parameters, parse_show_job
from llama4spec.runbook import groups as G
from llama4spec.runbook.groups import Shape
from llama4spec.runbook.plan import make_plan, plan_file
from tests.helpers import REPO

SWEEP = REPO / "runbooks" / "tiny_cpu_sweep.yaml"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    return plan_file(SWEEP, lambda name: tmp_path_factory.mktemp("run"))


def test_a_sweep_has_one_group_per_server_and_the_schedule_group_comes_after(plan):
    groups = G.plan_groups(plan)
    assert [g.name for g in groups] == ["sweep-none", "sweep-tiny_eagle-k1", "sweep-tiny_eagle-k3", "sweep-schedule"]
    assert groups[2].steps == ["sweep-tiny_eagle-k3", "sweep-tiny_eagle-k3-c1", "sweep-tiny_eagle-k3-c4",
                               "sweep-tiny_eagle-k3-settle", "sweep-tiny_eagle-k3-stop"]  # repeats: auto
    assert all(g.shape == Shape("cpu", 1, 1) for g in groups)
    assert groups[3].after == ["sweep-none", "sweep-tiny_eagle-k1", "sweep-tiny_eagle-k3"]
    assert [[g.name for g in w] for w in G.waves(groups)] == [[g.name for g in groups[:3]], ["sweep-schedule"]]
    assert G.merge_steps(plan) == ["sweep", "compare"] and G.local_steps(plan) == []


def test_shards_split_groups_evenly_and_bad_shards_are_refused(plan):
    groups = G.plan_groups(plan)
    assert [g.name for g in G.shard(groups, 1, 2)] == ["sweep-none", "sweep-tiny_eagle-k3"]
    assert [g.name for g in G.shard(groups, 2, 2)] == ["sweep-tiny_eagle-k1", "sweep-schedule"]
    assert G.parse_shard("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "a/b", "1"):
        with pytest.raises(UserError, match="give i/n"):
            G.parse_shard(bad)
    with pytest.raises(UserError, match="sweep-none, sweep-tiny_eagle-k1"):
        G.find(groups, "nope")


def test_a_group_runbook_keeps_its_steps_and_takes_its_own_port(plan, tmp_path):
    groups = G.plan_groups(plan)
    rb = G.group_runbook(plan.runbook, groups, "sweep-tiny_eagle-k3", 9123)
    assert [s.id for s in rb.steps] == groups[2].steps
    assert rb.steps[0].needs == [] and rb.steps[0].keys.overrides[-1] == "serve.port=9123"
    sub = make_plan(rb, tmp_path / "groups" / "sweep-tiny_eagle-k3")
    assert sub.get("sweep-tiny_eagle-k3-c4").url == "http://127.0.0.1:9123"
    assert sub.get("sweep-tiny_eagle-k3-c4").artifacts["record"] == \
        tmp_path / "groups" / "sweep-tiny_eagle-k3" / "sweep-tiny_eagle-k3-c4" / "record.json"
    # the schedule group carries the groups it derives from, at the ports they used
    rb = G.group_runbook(plan.runbook, groups, "sweep-schedule", 9200, {"sweep-none": 9100})
    assert {s.id for s in rb.steps} >= set(groups[0].steps) | set(groups[3].steps)
    assert rb.step("sweep-none").keys.overrides[-1] == "serve.port=9100"


def test_rebase_points_a_step_at_another_run_directory(plan, tmp_path):
    p = plan.get("sweep-none-c1")
    old = p.artifacts["record"]
    G.rebase(p, plan.run_dir, tmp_path)
    assert p.artifacts["record"] == tmp_path / old.relative_to(plan.run_dir) and p.run_dir == tmp_path


def test_devices_split_disjointly():
    assert ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8" and expand_ranges("0-2,5,7-8") == [0, 1, 2, 5, 7, 8]
    assert cpu_bind([0, 1], 2) == "0|1" and cpu_bind(list(range(8)), 2) == "0-3|4-7" and cpu_bind([3], 1) == "3"
    assert slots([0, 1], Shape("cpu", 1), 2) == [[0], [1]]
    assert slots(list(range(8)), Shape("cuda", 4), 4) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert slots(list(range(8)), Shape("cuda", 2), 3) == [[0, 1], [2, 3], [4, 5]]


def test_job_cpus_and_hosts_come_from_slurm_text():
    detail = ("JobId=8 JobName=l4s\n   NumNodes=1 NumCPUs=1\n     Nodes=vm CPU_IDs=1 Mem=0 GRES=\n"
              "     Nodes=gpu[01-02] CPU_IDs=0-3,8 Mem=0\n")
    assert job_cpus(detail, "vm") == [1] and job_cpus(detail, "gpu02") == [0, 1, 2, 3, 8]
    assert hostnames_inline("gpu[01-03,07],login") == ["gpu01", "gpu02", "gpu03", "gpu07", "login"]


def test_hosts_of_an_allocation_become_the_layout_and_followers_start_with_srun(gpu_build):
    from llama4spec.config.compose import compose_config
    from llama4spec.multinode.plan import plan_nodes

    base = ["target=llama4_maverick", "parallel=two_nodes_tp8_pp2", "hardware=h100_80gb", "cluster=slurm_two_nodes"]
    placeholder = plan_nodes(compose_config(base).cfg)  # before the allocation exists
    assert [n.host.address for n in placeholder] == ["slurm-node0", "slurm-node1"]
    override = hosts_override(["gpu01", "gpu02"], {"gpu01": "10.1.0.1", "gpu02": "10.1.0.2"})
    nodes = plan_nodes(compose_config([*base, override]).cfg)
    assert [n.host.address for n in nodes] == ["10.1.0.1", "10.1.0.2"]
    assert "--master-addr" in nodes[0].argv and nodes[0].argv[nodes[0].argv.index("--master-addr") + 1] == "10.1.0.1"
    assert nodes[1].exec_argv[:5] == ["srun", "--nodes=1", "--ntasks=1", "--overlap", "--nodelist=gpu02"]
    assert nodes[1].env["VLLM_HOST_IP"] == "10.1.0.2"


def test_slurm_parameters_ask_for_the_groups_devices():
    slurm = SimpleNamespace(time_min=60, partition="gpu", account="proj", mem_gb=None, cpus_per_device=8,
                            additional={"qos": "high"})
    p = parameters(slurm, Shape("cuda", 4), "l4s-x", 6, dependency="afterany:12")
    assert p["gpus_per_node"] == 4 and p["cpus_per_task"] == 32 and p["nodes"] == 1
    assert p["slurm_partition"] == "gpu" and p["slurm_account"] == "proj" and p["timeout_min"] == 60
    assert p["slurm_additional_parameters"] == {"qos": "high", "dependency": "afterany:12"}
    p = parameters(SimpleNamespace(time_min=5, partition=None, account=None, mem_gb=None, cpus_per_device=None,
                                   additional={}), Shape("cpu", 2, 2), "l4s-x", 1)
    assert p["cpus_per_task"] == 2 and p["nodes"] == 2 and "gpus_per_node" not in p


def test_scontrol_lines_give_every_array_task():
    text = ("JobId=7 ArrayJobId=7 ArrayTaskId=0-1 JobState=PENDING Reason=Resources NodeList=(null)\n"
            "JobId=9 ArrayJobId=9 ArrayTaskId=0 JobState=COMPLETED NodeList=vm StartTime=2026-01-01T00:00:01\n")
    found = parse_show_job(text)
    assert set(found) == {"7_0", "7_1", "9_0"} and found["9_0"]["JobState"] == "COMPLETED"


def test_dry_run_shows_the_groups_and_what_each_job_asks_for(cli, tmp_path: Path):
    res = cli("run", str(SWEEP), "cluster=slurm_local", "--launcher", "slurm", "--dry-run", "--runs-dir",
                  str(tmp_path), timeout=180)
    assert res.returncode == 0, res.stderr
    assert "4 server groups, as Slurm jobs" in res.stdout and "cpus_per_task=1" in res.stdout
    assert "slurm_partition=debug" in res.stdout and "--only-group sweep-none --into" in res.stdout
    assert not list(tmp_path.iterdir())  # nothing written, nothing submitted


def test_option_mistakes_are_one_line_each(cli):
    res = cli("run", str(SWEEP), "--only-group", "x", "--parallel", "2")
    assert res.returncode == 2 and "--only-group/--shard run groups here" in res.stderr
    res = cli("run", str(SWEEP), "--detach")
    assert res.returncode == 2 and "--detach needs --launcher slurm" in res.stderr
    res = cli("run", str(SWEEP), "--only-group", "nope", "--dry-run")
    assert res.returncode == 2 and "no such server group" in res.stderr and "Traceback" not in res.stderr
