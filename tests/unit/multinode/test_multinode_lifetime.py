"""Process lifetime of a multi-node server with stand-in commands (no engine): the lifeline stops
its group when its launcher goes away, a follower dying during start-up fails at once with its
log tail, and stop leaves no process of any node."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import free_port

from llama4spec.config.schema import HostConfig
from llama4spec.serving.nodes import Nodes
from llama4spec.multinode.plan import LIFELINE_MODULE, NodeCommand
from llama4spec.serving.process import ServerError

HEALTHY = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def pids_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and "pytest" not in cmd:
                found.append(int(entry))
    return found


def wait_gone(marker: str, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while pids_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids_with(marker)


def lifeline(*command: str) -> list[str]:
    return [sys.executable, "-m", LIFELINE_MODULE, "--", *command]


def nodes(leader: list[str], follower: list[str], tmp_path: Path, port: int, timeout: float = 60) -> Nodes:
    cmds = [NodeCommand(0, HostConfig(address="127.0.0.1"), leader, {}, leader),
            NodeCommand(1, HostConfig(address="127.0.0.1"), follower, {}, follower, follower)]
    return Nodes(cmds, host="127.0.0.1", port=port, log_paths=[tmp_path / "node0.log", tmp_path / "node1.log"],
                 health_timeout_s=timeout)


def test_lifeline_stops_its_group_at_end_of_stdin():
    marker = "1234.5671"
    proc = subprocess.Popen(lifeline("sh", "-c", f"sleep {marker} & sleep {marker}"), stdin=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while len(pids_with(marker)) < 3 and time.monotonic() < deadline:  # sh and its two sleeps
        time.sleep(0.1)
    assert len(pids_with(marker)) >= 2
    proc.stdin.close()  # the launcher's connection closes
    assert proc.wait(timeout=20) != 0
    assert wait_gone(marker) == []


def test_follower_dying_fails_start_at_once_with_its_tail(tmp_path):
    marker = "2345.6782"
    port = free_port()
    leader = ["sleep", marker]  # never healthy: only the follower's exit can end the wait quickly
    follower = lifeline("sh", "-c", "echo 'follower: cannot reach the master'; exit 3")
    server = nodes(leader, follower, tmp_path, port)
    started = time.monotonic()
    with pytest.raises(ServerError) as err:
        server.start()
    assert time.monotonic() - started < 15
    assert "node 1 (follower) on 127.0.0.1 exited with code 3 during start-up" in str(err.value)
    assert "follower: cannot reach the master" in err.value.log_tail
    assert wait_gone(marker) == []  # the leader was stopped too


def test_stop_ends_every_node_and_keeps_every_log(tmp_path):
    marker = "3456.7893"
    port = free_port()
    follower = lifeline("sh", "-c", f"echo follower up; sleep {marker}")
    with nodes([sys.executable, "-c", HEALTHY, str(port)], follower, tmp_path, port) as server:
        assert server.alive() and server.url == f"http://127.0.0.1:{port}"
        assert pids_with(marker)  # lifeline, sh, sleep
    assert wait_gone(marker, timeout=5) == []
    assert not server.alive() and all(p.poll() is not None for p in server.procs)
    assert "follower up" in (tmp_path / "node1.log").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node0.log", "node1.log"]
