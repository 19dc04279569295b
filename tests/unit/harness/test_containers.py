"""The docker environment's pure parts: a container node's broker settings, the Java base
image's root file system, the engine check and the CLI's refusal of a conflicting flag.
The containers themselves are tested in tests/containers (the container tier)."""

from __future__ import annotations

import io
import tarfile

import pytest

from verifier.cli import main
from verifier.harness.cluster import ClusterSpec, broker_properties
from verifier.harness.containers.cluster import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    INTERNAL_PORT,
    node_properties,
)
from verifier.harness.containers.engine import engine_problem
from verifier.harness.containers.image import _in_image, java_home, write_jre_rootfs
from verifier.harness.faults.proxy_process import proxied

ADDRESSES = {1: "172.30.0.12", 2: "172.30.0.13", 3: "172.30.0.14"}


def test_a_container_node_binds_inside_and_advertises_the_proxy():
    spec = proxied(ClusterSpec(nodes=3, base_port=23100))
    props = node_properties(spec, 2, ADDRESSES)
    assert props["listeners"] == (f"EXTERNAL://0.0.0.0:{CLIENT_PORT},"
                                  f"INTERNAL://0.0.0.0:{INTERNAL_PORT},"
                                  f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}")
    # clients on the host reach node 2 only through the proxy's port B+300+2
    assert props["advertised.listeners"] == ("EXTERNAL://127.0.0.1:23402,"
                                             f"INTERNAL://172.30.0.13:{INTERNAL_PORT}")
    assert props["controller.quorum.voters"] == (
        f"1@172.30.0.12:{CONTROLLER_PORT},2@172.30.0.13:{CONTROLLER_PORT},"
        f"3@172.30.0.14:{CONTROLLER_PORT}")


def test_a_container_node_has_every_other_setting_of_the_embedded_cluster():
    spec = proxied(ClusterSpec(nodes=3, base_port=23100, overrides={"num.io.threads": "3"}))
    embedded = broker_properties(spec, 1, "/var/lib/kafka/data")
    container = node_properties(spec, 1, ADDRESSES)
    placed = {"listeners", "advertised.listeners", "controller.quorum.voters"}
    assert {k: v for k, v in container.items() if k not in placed} == \
        {k: v for k, v in embedded.items() if k not in placed}
    assert container["min.insync.replicas"] == "2"
    assert container["num.io.threads"] == "3"
    assert container["log.dirs"] == "/var/lib/kafka/data"


def test_the_java_base_root_file_system_holds_java_its_libraries_and_a_shell():
    home = java_home()
    buf = io.BytesIO()  # the JDK without jmods, docs and sources: ~200 MB
    libs = write_jre_rootfs(buf, home)
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["opt/java/bin/java"].isfile()
    assert members["opt/java/lib/server/libjvm.so"].isfile()
    assert members["opt/java/lib/modules"].isfile()
    assert "opt/java/jmods" not in members  # not needed at run time
    assert members["usr/bin/sh"].isfile()
    assert members["bin"].issym() and members["bin"].linkname == "usr/bin"
    assert members["tmp"].mode == 0o1777
    # every library ldd found is in the image at its real folder, under the name asked for
    assert any(lib.endswith("/libc.so.6") for lib in libs)
    for lib in libs:
        assert _in_image(lib) in members, lib
    loader = [n for n in members if n.endswith("ld-linux-x86-64.so.2")]
    assert loader, "the dynamic loader"
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())


def test_no_engine_is_one_line_naming_where_it_looked(monkeypatch, tmp_path):
    pytest.importorskip("testcontainers")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    problem = engine_problem()
    assert problem is not None
    assert f"unix://{tmp_path}/nothing.sock" in problem
    assert "\n" not in problem


def test_docker_environment_with_bootstrap_servers_is_a_usage_error(capsys):
    code = main(["chaos", "--environment", "docker", "--bootstrap-servers", "h:9092",
                 "--scenario", "baseline"])
    assert code == 64
    assert "--environment docker" in capsys.readouterr().err


def test_no_engine_refuses_the_docker_environment_before_anything_starts(monkeypatch,
                                                                        tmp_path, capsys):
    pytest.importorskip("testcontainers")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    code = main(["chaos", "--environment", "docker", "--scenario", "baseline",
                 "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no Docker engine answers" in err and err.count("\n") == 1
