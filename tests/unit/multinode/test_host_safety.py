"""Host values never become ssh options or shell code: the destination follows ``--``, malformed
addresses, destinations, interfaces and command-running ssh options are refused (one line each,
all at once), and prefix placeholders in a ``-c`` script are shell-quoted. Pure: no vLLM, no ssh."""

from __future__ import annotations

import shlex

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.multinode.checks import host_problems
from llama4spec.config.layout import problems
from llama4spec.multinode.plan import launcher_argv, plan_nodes

TWO_NODES = ["target=llama4_maverick", "draft=none", "parallel=two_nodes_tp8_pp2", "hardware=h100_80gb",
             "memory=default", "cluster=two_nodes_ssh", "cluster.python=/opt/venv/bin/python"]
EVIL = "-oProxyCommand=touch /tmp/x"


def cfg_of(*overrides: str):
    return compose_config([*TWO_NODES, *overrides]).cfg


def q(value: str) -> str:
    """An override value as Hydra reads it (quoted: spaces, '=', ':' and '@' stay in the string)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def test_ssh_destination_follows_double_dash(gpu_build):
    cfg = cfg_of("cluster.ssh_options=[-p,'2222',-o,'ConnectTimeout=5']")
    follower = plan_nodes(cfg)[1]
    ssh = follower.exec_argv
    dash = ssh.index("--")
    assert ssh[0] == "ssh" and ssh[dash + 1] == "node1" and len(ssh) == dash + 3
    assert ssh[1:dash] == ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-p", "2222", "-o", "ConnectTimeout=5"]
    assert shlex.split(ssh[-1]) == follower.remote_argv  # every remote element quoted for the remote shell


def test_probe_argv_also_ends_options_before_the_destination():
    cfg = cfg_of()
    host = cfg.cluster.hosts[1]
    argv = launcher_argv(cfg, host, ["/opt/venv/bin/python", "-c", "import llama4spec.multinode.lifeline"])
    assert argv[argv.index("--") + 1] == "node1"
    assert shlex.split(argv[-1]) == ["/opt/venv/bin/python", "-c", "import llama4spec.multinode.lifeline"]


def test_a_dash_destination_is_still_after_double_dash_even_unvalidated():
    cfg = cfg_of(f"cluster.hosts.1.ssh={q(EVIL)}")
    ssh = launcher_argv(cfg, cfg.cluster.hosts[1], ["true"])
    assert ssh[ssh.index("--") + 1] == EVIL and ssh.index("--") < ssh.index(EVIL)


@pytest.mark.parametrize("key", ["ssh", "address"])
def test_option_looking_ssh_or_address_is_refused(key):
    found = problems(cfg_of(f"cluster.hosts.1.{key}={q(EVIL)}"))
    assert any(line.startswith(f"cluster.hosts.1.{key} '{EVIL}': not an") for line in found), found
    assert all("\n" not in line for line in found)


def test_ssh_destination_line_names_host_and_key():
    found = problems(cfg_of("cluster.hosts.1.ssh='-oProxyCommand=x'"))
    assert found == ["cluster.hosts.1.ssh '-oProxyCommand=x': not an ssh destination ([user@]host, no leading '-')"]


@pytest.mark.parametrize("value", ["", "-eth0", "eth0/1", "eth 0", "a" * 16, "eth0;id", "$(id)", ".eth0"])
def test_bad_interface_names_are_refused(value):
    found = problems(cfg_of(f"cluster.hosts.1.interface={q(value)}"))
    assert [line for line in found if line.startswith("cluster.hosts.1.interface ")], found


@pytest.mark.parametrize("address", ["10.0.0.1", "node0", "fe80::1", "fe80::1%eth0", "node-1.example.com", "10.77.0.2"])
def test_good_addresses_are_accepted(address):
    assert problems(cfg_of(f"cluster.hosts.0.address={q(address)}", "cluster.hosts.1.address=192.0.2.7")) == []


@pytest.mark.parametrize("dest", ["node0", "user@node-1.example.com", "_svc.1@10.0.0.2", "root@fe80::1"])
def test_good_ssh_destinations_are_accepted(dest):
    assert problems(cfg_of(f"cluster.hosts.1.ssh={q(dest)}")) == []


@pytest.mark.parametrize("interface", ["eth0", "ib0", "l4s-veth0", "enp5s0f1", "bond0.100", "eth0:1"])
def test_good_interfaces_are_accepted(interface):
    assert problems(cfg_of(f"cluster.hosts.1.interface={q(interface)}")) == []


@pytest.mark.parametrize("value", ["node;id", "node 1", "$(id)", "`id`", "a|b", "node\nx", "-node", ".node", "node..x",
                                   "a" * 254, "fe80::1%$(id)", "-u@node", "us er@node", "@node", "user@", "user@-x"])
def test_bad_ssh_and_address_values_are_refused(value):
    found = problems(cfg_of(f"cluster.hosts.1.ssh={q(value)}", f"cluster.hosts.1.address={q(value)}"))
    keys = [line.split(" ", 1)[0] for line in found]
    assert "cluster.hosts.1.ssh" in keys, found
    if "@" not in value:
        assert "cluster.hosts.1.address" in keys, found


@pytest.mark.parametrize("options", [
    ["-oProxyCommand=touch /tmp/x"],
    ["-o", "ProxyCommand=touch /tmp/x"],
    ["-o", "proxycommand touch /tmp/x"],
    ["-o", " PROXYCOMMAND = touch /tmp/x"],
    ["-o", '"ProxyCommand"=touch /tmp/x'],
    ["-vo", "ProxyCommand=x"],
    ["-TvoProxyCommand=x"],
    ["-o", "LocalCommand=x"],
    ["-oPermitLocalCommand=yes"],
    ["-o", "ProxyJump=bastion"],
    ["-J", "bastion"],
    ["-Jbastion"],
    ["-o", "KnownHostsCommand=x"],
    ["-o", "PKCS11Provider=/tmp/x.so"],
    ["-I", "/tmp/x.so"],
])
def test_command_running_ssh_options_are_refused(options):
    found = problems(cfg_of(f"cluster.ssh_options=[{','.join(q(o) for o in options)}]"))
    assert len(found) == 1 and found[0].startswith("cluster.ssh_options.") and "can run commands" in found[0], found


@pytest.mark.parametrize("options,expected", [
    (["evil-host"], "not an ssh option"),
    (["--"], "not an ssh option"),
    (["-p"], "-p needs a value"),
    (["-Z"], "-Z is not an ssh option"),
])
def test_ssh_options_must_be_options(options, expected):
    found = problems(cfg_of(f"cluster.ssh_options=[{','.join(q(o) for o in options)}]"))
    assert len(found) == 1 and expected in found[0], found


def test_ordinary_ssh_options_are_accepted():
    options = ["-p", "2222", "-o", "StrictHostKeyChecking=no", "-oUserKnownHostsFile=/dev/null", "-i",
               "~/.ssh/id_ed25519", "-F", "/tmp/ssh_config", "-4", "-vvo", "LogLevel=ERROR", "-o", "ProxyCommandLike=no"]
    assert problems(cfg_of(f"cluster.ssh_options=[{','.join(q(o) for o in options)}]")) == []


def test_every_problem_at_once_one_line_each():
    found = problems(cfg_of(f"cluster.hosts.0.address={q(EVIL)}", f"cluster.hosts.1.ssh={q(EVIL)}",
                            "cluster.hosts.1.interface='eth0/x'", f"cluster.ssh_options=[{q('-oLocalCommand=id')}]",
                            "cluster.master_port=70000"))
    assert [line.split(" ", 1)[0] for line in found] == [
        "cluster.master_port=70000:", "cluster.hosts.0.address", "cluster.hosts.1.ssh", "cluster.hosts.1.interface",
        "cluster.ssh_options.0"], found
    assert all("\n" not in line for line in found)


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_master_port_range(port):
    found = problems(cfg_of(f"cluster.master_port={port}"))
    assert found == [f"cluster.master_port={port}: must be a port number (1-65535)"]


def test_env_names_that_env_would_read_as_options_are_refused():
    found = problems(cfg_of("+cluster.hosts.1.env={--split-string: 'sh -c id'}"))
    assert found and found[0].startswith("cluster.hosts.1.env.--split-string: not an environment variable name")


def test_host_checks_run_nothing_for_malformed_values(monkeypatch, gpu_build):
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError(f"ran {args!r}")

    monkeypatch.setattr(subprocess, "run", refuse)
    cfg = cfg_of(f"cluster.hosts.1.ssh={q(EVIL)}")
    found = host_problems(cfg, plan_nodes(cfg))
    assert found == [f"cluster.hosts.1.ssh '{EVIL}': not an ssh destination ([user@]host, no leading '-')"]


def test_prefix_placeholders_fill_plain_elements_and_quote_in_shell_scripts():
    cfg = cfg_of("cluster.launcher=prefix",
                 "cluster.prefix=[srun,'--nodelist={host}',bash,-lc,'ssh -- {host} true; echo {address}',x]")
    host = cfg.cluster.hosts[1]
    assert launcher_argv(cfg, host, ["true"]) == ["srun", "--nodelist=node1", "bash", "-lc",
                                                  "ssh -- node1 true; echo 10.0.0.2", "x", "true"]
    # Were a value ever to reach here unvalidated, the -c script would still see one quoted word.
    host.ssh = "n1; touch /tmp/x"
    argv = launcher_argv(cfg, host, ["true"])
    assert argv[1] == "--nodelist=n1; touch /tmp/x"  # argv element: no shell, stays one argument
    assert argv[4] == "ssh -- 'n1; touch /tmp/x' true; echo 10.0.0.2"
    assert shlex.split(argv[4])[2] == "n1; touch /tmp/x"


def test_prefix_placeholder_as_a_whole_element_cannot_be_an_option_once_validated():
    cfg = cfg_of("cluster.launcher=prefix", "cluster.prefix=[srun,-w,'{host}']", f"cluster.hosts.1.ssh={q(EVIL)}")
    assert any(line.startswith("cluster.hosts.1.ssh ") for line in problems(cfg))
