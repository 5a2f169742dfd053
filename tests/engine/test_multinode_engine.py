"""Two real hosts on one machine: network namespaces joined by a veth pair, an sshd in the
follower's namespace, and the tiny pair served with TP 2 across them with its EAGLE draft.
Greedy output and acceptance counters must equal a one-host run's (the successor chain and the
counters tests/tiny_sim.py predicts); after stop no process of the run is left on either host.

Needs root, ``ip netns`` and Debian's openssh-server (``.ci/run`` installs it when missing).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.engine

# The names and addresses of conf/cluster/tiny_two_host.yaml.
LEADER_NS, FOLLOWER_NS = "l4s-leader", "l4s-follower"
LEADER_IF, FOLLOWER_IF = "l4s-veth0", "l4s-veth1"
LEADER_IP, FOLLOWER_IP = "10.77.0.1", "10.77.0.2"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
PROMPTS = ["w4 w5 w6 w7 w8 w9", "w41 w42 w43 w44", "w78 w79 w80 w81 w82", "w200 w201 w202"]
MAX_TOKENS = 32
READY_TIMEOUT_S = 400
# vLLM's CPU build reserves 0.4 of the NUMA node per worker by default; four workers on one
# machine would not fit beside the rest, so each run's KV cache gets 1 GiB.
SMALL = ["memory.cpu_kvcache_space_gib=1"]

# Runs in the host's network namespace: greedy completions and the acceptance counters after them.
CLIENT = r"""
import json, sys, requests
from llama4spec.results.acceptance import from_prometheus_text
url, prompts, max_tokens = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
model = requests.get(url + "/v1/models", timeout=30).json()["data"][0]["id"]
texts = []
for prompt in prompts:
    r = requests.post(url + "/v1/completions", timeout=300, json={
        "model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True})
    r.raise_for_status()
    texts.append(r.json()["choices"][0]["text"])
c = from_prometheus_text(requests.get(url + "/metrics", timeout=30).text)
print(json.dumps({"texts": texts, "drafts": c.num_drafts, "draft_tokens": c.num_draft_tokens,
                  "accepted": c.num_accepted_tokens, "per_position": list(c.accepted_per_pos)}))
"""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def in_ns(ns: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv] if ns else argv


def ns_pids(ns: str) -> set[int]:
    done = ip("netns", "pids", ns, check=False)
    return {int(p) for p in done.stdout.split()}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "(gone)"


def teardown_namespaces() -> None:
    for ns in (LEADER_NS, FOLLOWER_NS):
        for pid in ns_pids(ns):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        ip("netns", "del", ns, check=False)  # takes the veth pair with it
    ip("link", "del", LEADER_IF, check=False)


def namespaces_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    if not os.path.exists(SSHD):
        return "no sshd (install openssh-server)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "no ssh client (install openssh-client)"
    probe = ip("netns", "add", "l4s-probe", check=False)
    if probe.returncode:
        return f"cannot create network namespaces: {probe.stderr.strip()}"
    ip("netns", "del", "l4s-probe", check=False)
    return None


def _ssh_files(tmp: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "id"), "-C", "llama4spec-test"], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "host_key")], check=True)
    shutil.copy(tmp / "id.pub", tmp / "authorized_keys")
    (tmp / "sshd_config").write_text(
        f"ListenAddress {FOLLOWER_IP}\nPort 22\nHostKey {tmp / 'host_key'}\n"
        f"AuthorizedKeysFile {tmp / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"PidFile {tmp / 'sshd.pid'}\n"
    )
    config = tmp / "ssh_config"
    config.write_text(
        f"Host *\n  User root\n  IdentityFile {tmp / 'id'}\n  IdentitiesOnly yes\n"
        "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
    )
    return config


@pytest.fixture(scope="session")
def two_hosts():
    """Namespaces, veth pair, sshd in the follower's namespace; all removed afterwards."""
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    teardown_namespaces()  # left over from an interrupted run
    tmp = Path(tempfile.mkdtemp(prefix="llama4spec-two-hosts-"))
    sshd = None
    try:
        for ns in (LEADER_NS, FOLLOWER_NS):
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
        ip("link", "add", LEADER_IF, "netns", LEADER_NS, "type", "veth", "peer", "name", FOLLOWER_IF, "netns", FOLLOWER_NS)
        for ns, dev, addr in ((LEADER_NS, LEADER_IF, LEADER_IP), (FOLLOWER_NS, FOLLOWER_IF, FOLLOWER_IP)):
            ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
        ssh_config = _ssh_files(tmp)
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
        sshd = subprocess.Popen(in_ns(FOLLOWER_NS, [SSHD, "-D", "-e", "-f", str(tmp / "sshd_config")]),
                                stdout=open(tmp / "sshd.log", "wb"), stderr=subprocess.STDOUT)
        probe = in_ns(LEADER_NS, ["ssh", "-F", str(ssh_config), "-o", "BatchMode=yes", FOLLOWER_IP, "true"])
        deadline = time.monotonic() + 30
        while subprocess.run(probe, capture_output=True).returncode != 0:
            if sshd.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"sshd in {FOLLOWER_NS} did not accept the test key: {(tmp / 'sshd.log').read_text()}")
            time.sleep(0.3)
        yield {"tmp": tmp, "ssh_config": ssh_config, "sshd": sshd}
    finally:
        if sshd is not None:
            sshd.kill()
            sshd.wait()
        teardown_namespaces()
        shutil.rmtree(tmp, ignore_errors=True)


class Serving:
    """``llama4spec serve`` as a user runs it (optionally inside a namespace), until it is ready."""

    def __init__(self, ns: str | None, overrides: list[str], log: Path, env: dict[str, str] | None = None):
        argv = in_ns(ns, [sys.executable, "-m", "llama4spec", "serve", *overrides, "--log", str(log)])
        self.out_path = log.parent / f"{log.stem}.stdout"
        log.parent.mkdir(parents=True, exist_ok=True)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=open(self.out_path, "wb"),
                                     stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200", **(env or {})})
        self.ready_after_s = None

    def output(self) -> str:
        return self.out_path.read_text(errors="replace")

    def wait_ready(self) -> float:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while "ready" not in self.output():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"llama4spec serve did not become ready:\n{self.output()[-6000:]}")
            time.sleep(0.5)
        self.ready_after_s = time.monotonic() - self.started
        return self.ready_after_s

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def query(ns: str | None, url: str) -> dict:
    done = subprocess.run(in_ns(ns, [sys.executable, "-c", CLIENT, url, json.dumps(PROMPTS), str(MAX_TOKENS)]),
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def predicted() -> dict:
    """What one host serves for PROMPTS (greedy, k=3, the perfect draft): the successor chain of
    each prompt's last word, and the counters the simulation of greedy EAGLE (tests/tiny_sim.py)
    predicts; a one-host TP 2 server gave exactly these."""
    from llama4spec.tiny.words import successor
    from llama4spec.tiny.prompts import last_token
    from tests import tiny_sim

    words = []
    for prompt in PROMPTS:
        chain, x = [], last_token(prompt)
        for _ in range(MAX_TOKENS):
            x = successor(x)
            chain.append(f"w{x}")
        words.append(chain)
    c = tiny_sim.predict(PROMPTS, MAX_TOKENS, 3, tiny_sim.perfect)
    return {"words": words, "drafts": c.num_drafts, "draft_tokens": c.num_draft_tokens,
            "accepted": c.num_accepted_tokens, "per_position": c.accepted_per_pos}


@pytest.fixture(scope="session")
def two_host_run(tiny_dir, two_hosts):
    """TP 2 across the two namespaces; llama4spec runs in the leader's, the follower is reached over ssh."""
    log = two_hosts["tmp"] / "two-host" / "serve.log"
    overrides = ["cluster=tiny_two_host", "parallel=tiny_two_host_tp2", "serve.port=8000",
                 f"cluster.ssh_options=['-F','{two_hosts['ssh_config']}']", *SMALL]
    sshd_pid = two_hosts["sshd"].pid
    serving = Serving(LEADER_NS, overrides, log)
    try:
        serving.wait_ready()
        during = {LEADER_NS: ns_pids(LEADER_NS), FOLLOWER_NS: ns_pids(FOLLOWER_NS)}
        result = query(LEADER_NS, "http://127.0.0.1:8000")
    finally:
        code = serving.stop()
    left = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = {ns: {p: _cmdline(p) for p in ns_pids(ns) if p != sshd_pid} for ns in (LEADER_NS, FOLLOWER_NS)}
        if not any(left.values()):
            break
        time.sleep(0.5)
    logs = sorted(p.name for p in (log.parent / "serve").glob("*.log"))
    return {"result": result, "ready_after_s": serving.ready_after_s, "exit": code, "during": during,
            "left": left, "logs": logs, "log_dir": log.parent / "serve", "output": serving.output()}


def test_two_hosts_match_one_host(two_host_run):
    """Greedy output and acceptance counters across two hosts are one host's: the successor chain
    and the simulation's counters, which a one-host TP 2 server equals (measured before the
    prediction replaced that reference start)."""
    two, one = two_host_run["result"], predicted()
    print(f"\ntwo hosts TP 2: ready after {two_host_run['ready_after_s']:.0f} s, counters "
          f"drafts={two['drafts']} draft_tokens={two['draft_tokens']} accepted={two['accepted']} per_position={two['per_position']}")
    assert [text.split() for text in two["texts"]] == one["words"]
    assert one["words"][0][:3] == ["w10", "w11", "w12"]
    assert (two["drafts"], two["draft_tokens"], two["accepted"], two["per_position"]) == (
        one["drafts"], one["draft_tokens"], one["accepted"], one["per_position"])
    assert two["drafts"] > 0 and two["accepted"] > 0


def test_both_hosts_ran_a_rank(two_host_run):
    during = two_host_run["during"]
    follower = [_cmdline(p) for p in during[FOLLOWER_NS]]
    assert any("llama4spec.multinode.follower" in c for c in follower) or len(during[FOLLOWER_NS]) > 1, follower
    assert len(during[LEADER_NS]) > 1
    assert two_host_run["logs"] == ["node0.log", "node1.log"]
    follower_log = (two_host_run["log_dir"] / "node1.log").read_text(errors="replace")
    assert FOLLOWER_IP in follower_log or "rank=1" in follower_log or "rank 1" in follower_log, follower_log[-3000:]


def test_stop_leaves_no_process_on_either_host(two_host_run):
    assert two_host_run["exit"] in (0, 130), two_host_run["output"][-3000:]
    assert two_host_run["left"] == {LEADER_NS: {}, FOLLOWER_NS: {}}
