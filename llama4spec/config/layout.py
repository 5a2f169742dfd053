"""Rules for layouts across nodes (parallel x cluster): pure checks on the config, part of the
one validation pipeline, so ``validate`` refuses what ``serve`` and ``run`` would refuse."""

from __future__ import annotations

import functools
import ipaddress
import re
import socket

from llama4spec.config.schema import Config, HostConfig

LAUNCHERS = ("ssh", "prefix")


def is_multinode(cfg: Config) -> bool:
    """vLLM's own multi-node mode; a Ray executor spans nodes by itself from one process."""
    return cfg.parallel.nnodes > 1 and cfg.parallel.distributed_executor_backend != "ray"


def layout_problems(cfg: Config) -> list[str]:
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
    if c.hosts_from not in (None, "slurm"):
        found.append(f"cluster.hosts_from '{c.hosts_from}' is not supported; use slurm (the job's nodes) or list cluster.hosts")
    elif c.hosts_from == "slurm" and not c.hosts:
        pass  # filled from the Slurm allocation when the group's job starts (scontrol show hostnames)
    elif len(c.hosts) < p.nnodes:
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
    return found + value_problems(cfg)


# Values from the config end up in argv the tool runs here (ssh, the prefix launcher) and in the
# command a remote shell runs. A value that starts with '-' would be read as an option there
# (ssh -oProxyCommand=... runs a local command), so host values must look like what they name.
HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")
SSH_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
INTERFACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}$")  # Linux IFNAMSIZ: 15 characters
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# ssh's own option letters (OpenSSH ssh.c): those that take a value, and plain flags.
SSH_VALUE_FLAGS = set("bceilmopBDEFIJLOPQRSwW")
SSH_PLAIN_FLAGS = set("1246afgknqstvxACGKMNTVXYy")
# ssh -o keywords that run a command or load code here (or replace the remote command).
SSH_COMMAND_KEYWORDS = {"proxycommand", "proxyjump", "localcommand", "permitlocalcommand", "knownhostscommand",
                        "pkcs11provider", "securitykeyprovider", "remotecommand"}
# -F (a config file of the user's own, as tests/engine/test_multinode_engine.py passes) stays allowed.
SSH_COMMAND_FLAGS = {"J": "ProxyJump", "I": "PKCS11Provider"}


def is_host(value: str) -> bool:
    """An IPv4/IPv6 literal or a DNS-style host name; never anything that starts with '-'. A name
    whose last label is all digits (999.999.999.999, 1.2.3) is a malformed address, not a name."""
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        return bool(HOSTNAME.match(value)) and not value.rstrip(".").rsplit(".", 1)[-1].isdigit()
    scope = getattr(ip, "scope_id", None)  # fe80::1%eth0: the zone must be an interface name
    return scope is None or bool(INTERFACE.match(scope))


@functools.lru_cache(maxsize=256)
def unresolved(host: str) -> str | None:
    """Why this machine cannot resolve ``host`` (None when it can): the resolver's own words.
    An address literal resolves at once; a name is asked once a process."""
    try:
        socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as err:
        return getattr(err, "strerror", None) or str(err) or type(err).__name__
    return None


def host_problem(key: str, host: object) -> str | None:
    """One line when ``host`` (the value of ``key``) is no address or host name this machine resolves."""
    text = str(host)
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:80])
    example = "e.g. 127.0.0.1, 0.0.0.0 or a host name"
    if not text.strip():
        return f"{key} is empty; give an address or host name ({example})"
    if not is_host(text):
        return f"{key} '{shown}': not an IP address or host name ({example}; an IPv4 address has four numbers 0-255)"
    why = unresolved(text)
    if why:
        return f"{key} '{shown}': this machine cannot resolve it ({why}); give an address or a host name it resolves"
    return None


def url_problem(key: str, url: object) -> str | None:
    """One line when ``url`` is not an http(s) server URL whose host resolves here."""
    from urllib.parse import urlsplit

    text = str(url)
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:120])
    example = "give one such as http://127.0.0.1:8000"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises on a port that is no number or out of range
    except ValueError:
        parts = None
    if not text.strip() or parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{key} '{shown}': not a server URL; {example}"
    if parts.username or parts.password or parts.query or parts.fragment:
        return f"{key} '{shown}': a server URL has no user, password, query or fragment; {example}"
    return host_problem(f"{key} host", parts.hostname)


def is_ssh_destination(value: str) -> bool:
    """``[user@]host``: no leading '-', no spaces, no shell metacharacters."""
    user, at, host = value.rpartition("@")
    return (not at or bool(SSH_USER.match(user))) and is_host(host)


def ssh_option_problems(options: list[str]) -> list[str]:
    """Read ``cluster.ssh_options`` the way ssh's getopt does; refuse every option that makes ssh run
    a command here (ProxyCommand, LocalCommand, ProxyJump, ...) in any spelling (-oX=v, -o X=v,
    -o 'X v', -vo X=v), and anything that is not an option (ssh would read it as the destination)."""
    found: list[str] = []
    i = 0
    while i < len(options):
        at, item = i, options[i]
        i += 1
        where = f"cluster.ssh_options.{at} {item!r}"
        if not item.startswith("-") or item in ("-", "--"):
            found.append(f"{where}: not an ssh option; list options only, e.g. [-p, '2222', -o, 'ConnectTimeout=5']")
            continue
        for k, flag in enumerate(item[1:], start=1):
            if flag in SSH_PLAIN_FLAGS:
                continue
            if flag not in SSH_VALUE_FLAGS:
                found.append(f"{where}: -{flag} is not an ssh option")
                break
            value = item[k + 1:]
            if not value:
                if i >= len(options):
                    found.append(f"{where}: -{flag} needs a value")
                    break
                value, i = options[i], i + 1
            if flag in SSH_COMMAND_FLAGS:
                found.append(f"{where}: -{flag} ({SSH_COMMAND_FLAGS[flag]}) can run commands on this machine; "
                             f"not allowed in cluster.ssh_options (set it in ~/.ssh/config if you need it)")
            elif flag == "o":
                # ssh's keyword: up to whitespace or '=', quotes dropped, any case.
                keyword = re.split(r"[\s=]", value.strip().replace('"', ""), maxsplit=1)[0]
                if keyword.lower() in SSH_COMMAND_KEYWORDS:
                    found.append(f"{where}: -o {keyword} can run commands on this machine; not allowed in "
                                 f"cluster.ssh_options (set it in ~/.ssh/config if you need it)")
            break  # the value ends this element
    return found


def host_value_problems(index: int, host: HostConfig) -> list[str]:
    """Every malformed value of one host, each a line naming cluster.hosts.<index>.<key>."""
    found: list[str] = []
    at = f"cluster.hosts.{index}"
    if not is_host(str(host.address)):
        found.append(f"{at}.address {host.address!r}: not an IP address or host name "
                     f"(letters, digits, '-', '.'; no leading '-' or '.')")
    if host.ssh is not None and not is_ssh_destination(str(host.ssh)):
        found.append(f"{at}.ssh {host.ssh!r}: not an ssh destination ([user@]host, no leading '-')")
    if host.interface is not None and not INTERFACE.match(str(host.interface)):
        found.append(f"{at}.interface {host.interface!r}: not a network interface name "
                     f"(1-15 letters, digits, '_', '.', ':', '-'; no leading '-')")
    found += [f"{at}.env.{name}: not an environment variable name (letters, digits, '_')"
              for name in host.env if not ENV_NAME.match(str(name))]
    return found


def value_problems(cfg: Config) -> list[str]:
    """Every malformed cluster value (hosts, ssh options, env names, interpreter), all at once."""
    c = cfg.cluster
    found = [line for i, host in enumerate(c.hosts) for line in host_value_problems(i, host)]
    found += ssh_option_problems([str(o) for o in c.ssh_options])
    found += [f"env.{name}: not an environment variable name (letters, digits, '_'); every node gets it"
              for name in cfg.env if not ENV_NAME.match(str(name))]
    if c.python is not None and (not str(c.python).strip() or str(c.python).startswith("-")):
        found.append(f"cluster.python {c.python!r}: not an interpreter path (e.g. /opt/venv/bin/python)")
    return found


problems = layout_problems
