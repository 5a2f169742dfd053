"""Host names and addresses are validated and resolved in config validation, one line each, never a
``socket.gaierror``: ``serve serve.host=999.999.999.999`` ended in one. The same rule reads
``bench --url``'s host and a runbook bench step's ``url``; cluster hosts are resolved before any
node starts; a host this machine cannot listen on is refused before a server starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from llama4spec.config.layout import host_problem, is_host, url_problem

GOOD = ["127.0.0.1", "0.0.0.0", "localhost", "::1", "::", "10.77.0.1"]
BAD = {  # value: what the line says
    "999.999.999.999": "not an IP address or host name",
    "256.1.1.1": "not an IP address or host name",
    "1.2.3": "not an IP address or host name",
    "10.0.0.1.5": "not an IP address or host name",
    "-h": "not an IP address or host name",
    "a b": "not an IP address or host name",
    "host;id": "not an IP address or host name",
    "": "is empty",
    " ": "is empty",
    "nosuch.invalid": "cannot resolve it",  # .invalid never resolves (RFC 2606)
}


@pytest.mark.parametrize("host", GOOD)
def test_good_hosts(host: str) -> None:
    assert host_problem("serve.host", host) is None


@pytest.mark.parametrize("host, said", BAD.items())
def test_bad_hosts_one_line(host: str, said: str) -> None:
    problem = host_problem("serve.host", host)
    assert problem and said in problem and "\n" not in problem and problem.startswith("serve.host")


def test_names_with_numeric_last_label_are_addresses_not_names() -> None:
    assert not is_host("999.999.999.999") and not is_host("1.2.3") and is_host("node0") and is_host("a.b-1.example")


@pytest.mark.parametrize("host, said", [("999.999.999.999", "not an IP address"), ("nosuch.invalid", "cannot resolve"),
                                        ("''", "is empty")])
@pytest.mark.parametrize("command", [["validate"], ["serve", "--dry-run"], ["serve"], ["show", "--json"]])
def test_commands_refuse_bad_serve_host(cli, command: list[str], host: str, said: str) -> None:
    done = cli(*command, f"serve.host={host}", "draft=none")
    if command[0] == "show":  # shows a config with problems: its warnings hold the line
        assert done.returncode == 0 and said in done.stdout, done.stdout
        return
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("url, said", [
    ("http://999.999.999.999:8000", "not an IP address"),
    ("http://nosuch.invalid:8000", "cannot resolve"),
    ("http://127.0.0.1:99999", "not a server URL"),
    ("ftp://127.0.0.1:8000", "not a server URL"),
    ("", "not a server URL"),
    ("http://user:pw@127.0.0.1:8000", "no user, password"),
    ("http://127.0.0.1:8000/?x=1", "no user, password, query"),
])
def test_bench_url_host(cli, tmp_path: Path, url: str, said: str) -> None:
    assert said in url_problem("--url", url)
    done = cli("bench", "--url", url, "--out", tmp_path / "out")
    on_the_line = said if url else "an empty value"  # the command line refuses any empty argument first
    assert done.returncode == 2 and on_the_line in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    book = tmp_path / "b.yaml"
    book.write_text(f"name: b\noverrides: [target=tiny]\nsteps:\n  - {{id: b, kind: bench, url: '{url}'}}\n")
    done = cli("run", book, "--dry-run", "--runs-dir", tmp_path / "runs")
    said = said if url else "'url' must be a non-empty string"  # the runbook reader's own line
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_empty_label_is_refused(cli, tmp_path: Path) -> None:
    for label in ("", " ", "-x"):
        done = cli("bench", "--url", "http://127.0.0.1:9", "--label", label, "--out", tmp_path / "o")
        assert done.returncode == 2 and "--label" in done.stderr, done.stderr


def test_a_host_of_another_machine_is_refused_before_a_server_starts() -> None:
    from llama4spec.serving.process import port_in_use, unbindable

    assert unbindable("127.0.0.1") is None
    assert unbindable("192.0.2.1")  # TEST-NET-1: never an address of this machine
    assert port_in_use("nosuch.invalid", 8000) is False  # no gaierror from the probe


def test_cluster_hosts_resolved_before_any_node_starts() -> None:
    from llama4spec.config.compose import compose_config
    from llama4spec.multinode.checks import host_problems
    from llama4spec.multinode.plan import plan_nodes

    cfg = compose_config(["target=tiny", "cluster=tiny_two_host", "parallel=tiny_two_host_tp2",
                          "cluster.hosts.1.address=nosuch.invalid"]).cfg
    found = host_problems(cfg, plan_nodes(cfg))
    assert found and all("cannot resolve" in line and "cluster.hosts.1.address" in line for line in found), found
