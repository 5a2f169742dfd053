"""Looking at the hosts before anything starts: the leader's address is here, the master port is
free, every follower answers through its launcher with a Python that has llama4spec.
"""

from __future__ import annotations

import socket
import subprocess

from llama4spec.config.schema import Config
from llama4spec.config.layout import host_problem, value_problems
from llama4spec.multinode.plan import NodeCommand, launcher_argv

PROBE_TIMEOUT_S = 30.0


def is_local_address(address: str) -> bool:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


def port_taken(address: str, port: int) -> bool:
    """Something listens on (address, port). SO_REUSEADDR as torch's store uses it: connections
    of an earlier run still in TIME_WAIT do not count."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError:
            return True
    return False


def probe_host(cfg: Config, node: NodeCommand) -> str | None:
    """None when the host runs llama4spec's Python through the launcher; else the problem.

    The probe runs ``launcher_argv``: for ssh that is ``ssh [options] -- DEST 'python -c ...'``, the
    destination after ``--`` so that it is never read as an option, the remote command quoted."""
    python = node.remote_argv[node.remote_argv.index("-m") - 1]
    argv = launcher_argv(cfg, node.host, [python, "-c", "import llama4spec.multinode.lifeline"])
    where = f"cluster.hosts.{node.rank} ({node.host.ssh or node.host.address})"
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except FileNotFoundError:
        return f"{where}: the launcher '{argv[0]}' is not installed here"
    except subprocess.TimeoutExpired:
        return f"{where}: no answer through {argv[0]} within {PROBE_TIMEOUT_S:.0f} s; check that the host is up and reachable"
    if done.returncode == 0:
        return None
    said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    if cfg.cluster.launcher == "ssh" and done.returncode == 255:
        return f"{where}: cannot reach the host over ssh ({said}); check the address, sshd and keys"
    return f"{where}: cannot run {python} with llama4spec there ({said}); install it at the same path or set cluster.python"


def host_problems(cfg: Config, nodes: list[NodeCommand]) -> list[str]:
    """Every problem with the hosts, found before any node starts. Malformed cluster values (an ssh
    destination or address that starts with '-', an ssh option that runs a command, ...) are
    reported without running anything: no launcher starts with a value that failed validation."""
    found = value_problems(cfg)
    if found:
        return found
    # resolved here, before any node starts (a config may be written where cluster names do not resolve)
    found = [problem for node in nodes if (problem := host_problem(f"cluster.hosts.{node.rank}.address",
                                                                   node.host.address))]
    if found:
        return found
    leader = nodes[0].host.address
    if not is_local_address(leader):
        found.append(f"cluster.hosts.0.address {leader} is not an address of this machine; the leader (host 0) "
                     f"runs where llama4spec runs, so run it there or list this machine first")
    elif port_taken(leader, cfg.cluster.master_port):
        found.append(f"master port {cfg.cluster.master_port} on {leader} is already in use; stop what listens there "
                     f"or pick another with cluster.master_port=N")
    for node in nodes[1:]:
        problem = probe_host(cfg, node)
        if problem:
            found.append(problem)
    return found
