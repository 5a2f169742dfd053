"""Every node's command and environment for a multi-node layout: pure, no I/O.

Host 0 is the leader: it runs here and serves the OpenAI API. Every other host runs a headless
follower started through the cluster's launcher (ssh, or a command prefix such as srun). The
follower runs under ``lifeline``, which stops it when the launcher's connection closes.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from llama4spec.config.layout import ENV_NAME
from llama4spec.config.schema import Config, HostConfig
from llama4spec.engine import build
from llama4spec.engine.args import API_SERVER_MODULE, engine_env, serve_argv, serve_flags
from llama4spec.errors import UserError
from llama4spec.engine.secrets import redact_env

FOLLOWER_MODULE = "llama4spec.multinode.follower"
LIFELINE_MODULE = "llama4spec.multinode.lifeline"
# ssh never prompts (a password prompt would hang the start) and gives up on a dead host quickly.
SSH_DEFAULTS = ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]


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


SLURM_PLACEHOLDER = "slurm-node{rank}"  # a host of an allocation not granted yet (planning on the login node)


def node_hosts(cfg: Config) -> list[HostConfig]:
    """The layout's hosts, leader first. ``cluster.hosts_from: slurm`` before the job runs (no hosts
    listed yet): placeholders named after their rank, replaced by the allocation's nodes in the job."""
    hosts = list(cfg.cluster.hosts[: cfg.parallel.nnodes])
    if cfg.cluster.hosts_from == "slurm" and not hosts:
        hosts = [HostConfig(address=SLURM_PLACEHOLDER.format(rank=r), ssh=SLURM_PLACEHOLDER.format(rank=r))
                 for r in range(cfg.parallel.nnodes)]
    return hosts


def node_flags(cfg: Config, rank: int) -> list[str]:
    flags = ["--nnodes", str(cfg.parallel.nnodes), "--node-rank", str(rank),
             "--master-addr", node_hosts(cfg)[0].address, "--master-port", str(cfg.cluster.master_port)]
    return flags + (["--headless"] if rank else [])


def node_env(cfg: Config, host: HostConfig, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**(extra or {}), **engine_env(cfg), "VLLM_HOST_IP": host.address}
    if host.interface:
        env["GLOO_SOCKET_IFNAME"] = host.interface
        env["NCCL_SOCKET_IFNAME"] = host.interface
    return {**env, **host.env}


PLACEHOLDER = re.compile(r"\{(host|address)\}")


def is_shell_script_flag(part: str) -> bool:
    """``-c`` or a cluster of short flags ending in it (``-lc``, ``-ec``): the next element is a script."""
    return bool(re.fullmatch(r"-[A-Za-z]*c", part))


def launcher_argv(cfg: Config, host: HostConfig, remote: list[str]) -> list[str]:
    """The argv that runs ``remote`` on ``host``.

    ssh: ``ssh [defaults] [cluster.ssh_options] -- DEST 'REMOTE'``. The ``--`` ends ssh's options, so
    the destination is never read as one; ssh hands the remote shell one string, so every element
    of ``remote`` is quoted (``shlex.join``) and the remote shell gets back exactly ``remote``.

    prefix: ``cluster.prefix`` with ``{host}`` (the host's ssh name, else its address) and
    ``{address}`` filled in, then ``remote`` as further elements. No shell runs here, so a
    substituted value stays one argument. The values are the validated ones (``problems``: no
    leading '-', no spaces or shell metacharacters). An element right after ``-c`` (or ``-lc``,
    ``-ec``: ``bash -c SCRIPT``, ``sh -c SCRIPT``) is a shell script, so there each value is
    inserted ``shlex.quote``-d; write the placeholder bare there, not inside quotes of your own.
    """
    c = cfg.cluster
    dest = host.ssh or host.address
    if c.launcher == "ssh":
        return ["ssh", *SSH_DEFAULTS, *c.ssh_options, "--", dest, shlex.join(remote)]
    values = {"host": dest, "address": host.address}
    argv = []
    for k, part in enumerate(c.prefix):
        quote = shlex.quote if k and is_shell_script_flag(c.prefix[k - 1]) else str
        argv.append(PLACEHOLDER.sub(lambda m: quote(values[m[1]]), part))
    return argv + remote


def plan_nodes(cfg: Config, python: str | None = None,
               extra_env: Mapping[str, str] | None = None) -> list[NodeCommand]:
    """Leader first; it runs ``vllm serve`` where the build's console script works
    (``build.vllm_cli()``), else the API server module. ``extra_env`` (a runbook's environment)
    goes to every node, under the config's own."""
    python = cfg.cluster.python or python or sys.executable
    nodes = []
    for rank, host in enumerate(node_hosts(cfg)):
        flags = [*serve_flags(cfg), *node_flags(cfg, rank)]
        argv = [*serve_argv(cfg)[:3], *flags]
        env = node_env(cfg, host, extra_env)
        if rank == 0:
            api_server = [python, "-m", API_SERVER_MODULE, "--model", cfg.target.model, *flags]
            exec_argv = argv if build.vllm_cli() else api_server
            nodes.append(NodeCommand(rank, host, argv, env, exec_argv))
            continue
        # The follower goes through vLLM's serve command on both builds (its --headless path).
        follower = [python, "-m", FOLLOWER_MODULE, "--model", cfg.target.model, *flags]
        bad = [name for name in env if not ENV_NAME.match(name)]
        if bad:  # `env` on the host would read a name such as --split-string=... as its own option
            raise UserError(*(f"environment variable name {name!r}: use letters, digits and '_' only" for name in bad))
        remote = ["env", *(f"{k}={v}" for k, v in env.items()), python, "-m", LIFELINE_MODULE, "--", *follower]
        nodes.append(NodeCommand(rank, host, argv, env, launcher_argv(cfg, host, remote), remote))
    return nodes


def dry_run_lines(cfg: Config, nodes: list[NodeCommand]) -> list[str]:
    """What ``serve --dry-run`` prints for a multi-node layout: each node's command, env, launch."""
    c = cfg.cluster
    how = "ssh" if c.launcher == "ssh" else shlex.join(c.prefix)
    lines = [f"{len(nodes)} nodes, cluster {c.name}, master {nodes[0].host.address}:{c.master_port}, "
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
