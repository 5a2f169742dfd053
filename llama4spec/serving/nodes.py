"""The processes of one multi-node server: the leader here, a launcher per follower.

Started together, watched together (a node that dies during start-up fails at once with its
log tail), stopped together. Each follower's launcher keeps a pipe to the host's ``lifeline``:
closing it stops the follower's whole process group over there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from llama4spec.multinode.plan import NodeCommand
from llama4spec.serving.process import close_stdin, spawn, spawn_tethered, stop_groups, terminate_group
from llama4spec.serving.server import OwnedServer

STOP_WAIT_S = 30.0  # a follower's lifeline gives its group 15 s after SIGTERM, then kills it


def _spawn_follower(argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> subprocess.Popen:
    """Like ``spawn`` but stdin stays a pipe: the follower's lifeline lives as long as it."""
    return spawn(argv, env, log_path, stdin=subprocess.PIPE)


class Nodes(OwnedServer):
    """A multi-node vLLM server (a context manager), used wherever a ``Server`` is.

    ``start()`` launches every node, then waits for the leader's ``/health`` while polling every
    node's process; ``stop()`` stops every node and waits for them; every node's log is kept.
    ``on_phase`` hears the start-up phases read from the leader's log, ``on_line`` every new line
    of every node's log (a follower's prefixed with its label).
    """

    def __init__(self, nodes: list[NodeCommand], *, host: str, port: int, log_paths: Sequence[Path],
                 secret_env: Mapping[str, str] | None = None, health_timeout_s: float = 900.0,
                 name: str = "server"):
        super().__init__()
        self.nodes = nodes
        self.host, self.port = host, port
        self.log_paths = [Path(p) for p in log_paths]
        self.secret_env = dict(secret_env or {})  # the leader's only (followers serve no API)
        self.health_timeout_s = health_timeout_s
        self.name = name

    def _spawn(self) -> None:
        for node, log in zip(self.nodes, self.log_paths):
            if node.leader:
                self.procs.append(spawn_tethered(node.exec_argv, {**node.env, **self.secret_env}, log))
            else:
                self.procs.append(_spawn_follower(node.exec_argv, {}, log))

    def _labels(self) -> list[str]:
        return ["" if n.leader else n.label for n in self.nodes]

    def _who(self, index: int) -> str:
        return f"{self.name}: {self.nodes[index].label}"

    def stop(self) -> None:
        """Stop every node at once: the leader's group gets SIGTERM, each follower's lifeline its
        end of file; wait for all, then stop whatever is left the hard way."""
        leaders = {id(proc) for node, proc in zip(self.nodes, self.procs) if node.leader}

        def ask(proc: subprocess.Popen) -> None:
            (terminate_group if id(proc) in leaders else close_stdin)(proc)

        stop_groups(self.procs, STOP_WAIT_S, ask=ask, then_grace_s=5.0)
