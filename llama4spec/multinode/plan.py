"""Every node's command and environment for a multi-node layout: pure, no I/O.

Host 0 is the leader: it runs here and serves the OpenAI API. Every other host runs a headless
follower started through the cluster's launcher (ssh, or a command prefix such as srun). The
follower runs under ``lifeline``, which stops it when the launcher's connection closes.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from llama4spec.config.schema import Config, HostConfig
from llama4spec.engine.args import engine_env, serve_argv, serve_flags
from llama4spec.runbook.record import redact_env
from llama4spec.server import API_SERVER_MODULE

FOLLOWER_MODULE = "llama4spec.multinode.follower"
LIFELINE_MODULE = "llama4spec.multinode.lifeline"
LAUNCHERS = ("ssh", "prefix")
# ssh never prompts (a password prompt would hang the start) and gives up on a dead host quickly.
SSH_DEFAULTS = ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]


def is_multinode(cfg: Config) -> bool:
    """vLLM's own multi-node mode; a Ray executor spans nodes by itself from one process."""
    return cfg.parallel.nnodes > 1 and cfg.parallel.distributed_executor_backend != "ray"


def problems(cfg: Config) -> list[str]:
    """Everything wrong with the cluster for this layout, all at once (empty when fine)."""
    if not is_multinode(cfg):
        return []
    found: list[str] = []
    p, c = cfg.parallel, cfg.cluster
    world = p.tensor_parallel_size * p.pipeline_parallel_size
    if world % p.nnodes:
        found.append(
            f"parallel: world size {world} (tensor_parallel_size {p.tensor_parallel_size} x pipeline_parallel_size "
            f"{p.pipeline_parallel_size}) is not divisible by nnodes={p.nnodes}; every node needs the same number of ranks"
        )
    if len(c.hosts) < p.nnodes:
        found.append(
            f"parallel.nnodes={p.nnodes} needs {p.nnodes} hosts but cluster '{c.name}' lists {len(c.hosts)}; "
            f"pick a cluster preset (cluster=...) or list cluster.hosts"
        )
    hosts = c.hosts[: p.nnodes]
    addresses = [h.address for h in hosts]
    for i, address in enumerate(addresses):
        if address in addresses[:i]:
            found.append(f"cluster.hosts.{i}.address {address} repeats an earlier host's; each node needs its own host")
    if not 0 < c.master_port < 65536:
        found.append(f"cluster.master_port={c.master_port}: must be a port number (1-65535)")
    elif c.master_port == cfg.serve.port:
        found.append(f"cluster.master_port={c.master_port} is also serve.port; give them different ports")
    if c.launcher not in LAUNCHERS:
        found.append(f"cluster.launcher '{c.launcher}' is not supported; use ssh or prefix (with cluster.prefix)")
    elif c.launcher == "prefix" and not c.prefix:
        found.append("cluster.launcher=prefix needs cluster.prefix, e.g. [srun, --nodes=1, --ntasks=1, --nodelist={host}]")
    return found


@dataclass
class NodeCommand:
    rank: int
    host: HostConfig
    argv: list[str]  # the pasteable vLLM command for this node
    env: dict[str, str]  # its environment beyond the host's own (no secrets)
    exec_argv: list[str]  # what llama4spec runs here: the leader itself, or the launcher for a follower
    remote_argv: list[str] = field(default_factory=list)  # followers: what the launcher runs on the host

    @property
    def leader(self) -> bool:
        return self.rank == 0

    @property
    def label(self) -> str:
        return f"node {self.rank} ({'leader' if self.leader else 'follower'}) on {self.host.address}"


def node_flags(cfg: Config, rank: int) -> list[str]:
    flags = ["--nnodes", str(cfg.parallel.nnodes), "--node-rank", str(rank),
             "--master-addr", cfg.cluster.hosts[0].address, "--master-port", str(cfg.cluster.master_port)]
    return flags + (["--headless"] if rank else [])


def node_env(cfg: Config, host: HostConfig, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**(extra or {}), **engine_env(cfg), "VLLM_HOST_IP": host.address}
    if host.interface:
        env["GLOO_SOCKET_IFNAME"] = host.interface
        env["NCCL_SOCKET_IFNAME"] = host.interface
    return {**env, **host.env}


def launcher_argv(cfg: Config, host: HostConfig, remote: list[str]) -> list[str]:
    """The argv that runs ``remote`` on ``host``: ssh hands the remote shell one quoted string."""
    c = cfg.cluster
    if c.launcher == "ssh":
        return ["ssh", *SSH_DEFAULTS, *c.ssh_options, host.ssh or host.address, shlex.join(remote)]
    name = host.ssh or host.address
    return [part.replace("{host}", name).replace("{address}", host.address) for part in c.prefix] + remote


def plan_nodes(cfg: Config, vllm_cli: bool, python: str | None = None,
               extra_env: Mapping[str, str] | None = None) -> list[NodeCommand]:
    """Leader first. ``vllm_cli``: the GPU build's ``vllm serve`` works (the CPU build's does not).
    ``extra_env`` (a runbook's environment) goes to every node, under the config's own."""
    python = cfg.cluster.python or python or sys.executable
    nodes = []
    for rank, host in enumerate(cfg.cluster.hosts[: cfg.parallel.nnodes]):
        flags = [*serve_flags(cfg), *node_flags(cfg, rank)]
        argv = [*serve_argv(cfg)[:3], *flags]
        env = node_env(cfg, host, extra_env)
        if rank == 0:
            exec_argv = argv if vllm_cli else [python, "-m", API_SERVER_MODULE, "--model", cfg.target.model, *flags]
            nodes.append(NodeCommand(rank, host, argv, env, exec_argv))
            continue
        # The follower goes through vLLM's serve command on both builds (its --headless path).
        follower = [python, "-m", FOLLOWER_MODULE, "--model", cfg.target.model, *flags]
        remote = ["env", *(f"{k}={v}" for k, v in env.items()), python, "-m", LIFELINE_MODULE, "--", *follower]
        nodes.append(NodeCommand(rank, host, argv, env, launcher_argv(cfg, host, remote), remote))
    return nodes


def dry_run_lines(cfg: Config, nodes: list[NodeCommand]) -> list[str]:
    """What ``serve --dry-run`` prints for a multi-node layout: each node's command, env, launch."""
    c = cfg.cluster
    how = "ssh" if c.launcher == "ssh" else shlex.join(c.prefix)
    lines = [f"{len(nodes)} nodes, cluster {c.name}, master {c.hosts[0].address}:{c.master_port}, "
             f"followers started with {how}"]
    for node in nodes:
        lines += ["", f"{node.label}{' (here)' if node.leader else ''}:", f"  {shlex.join(node.argv)}",
                  "  env: " + " ".join(f"{k}={shlex.quote(v)}" for k, v in redact_env(node.env).items())]
        if node.exec_argv != node.argv:
            lines.append(f"  runs as: {shlex.join(node.exec_argv)}")
    return lines


def node_records(nodes: list[NodeCommand]) -> list[dict[str, Any]]:
    """Every node's command for a run record (plan.json)."""
    return [{"rank": n.rank, "address": n.host.address, "argv": n.argv, "exec_argv": n.exec_argv, "env": n.env}
            for n in nodes]
