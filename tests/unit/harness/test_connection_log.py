"""The proxy's connection log belongs to one proxy and one cluster: a proxy starts it
afresh (its connection numbers restart at 1), and each cluster folder has its own proxy
folder (two runs on two clusters once appended to one log and the report paired one
run's opens with the other's closes)."""

from __future__ import annotations

import json

from verifier.harness.environment import LocalEnvironment
from verifier.harness.faults.connection_log import ConnectionLog
from verifier.rundata.formats import FORMATS, read_jsonl


def test_a_proxy_starts_its_log_afresh(tmp_path):
    path = tmp_path / "connections.jsonl"
    old = [{"type": "header", "format": "proxy-connections", "version": 1},
           {"event": "open", "conn": 1, "broker": 1, "t": 5}]
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    log = ConnectionLog(path)
    log.write({"event": "open", "conn": 1, "broker": 2, "t": 9})
    log.close()
    head, rows = read_jsonl(path, "proxy-connections", (FORMATS["proxy-connections"],))
    assert head["version"] == FORMATS["proxy-connections"]
    assert rows == [{"event": "open", "conn": 1, "broker": 2, "t": 9}]


def test_each_cluster_folder_has_its_own_proxy_folder(tmp_path):
    a = LocalEnvironment(tmp_path / "chaos", base_port=21700)
    b = LocalEnvironment(tmp_path / "other", base_port=21900)
    assert a.proxy_process.workdir == tmp_path / "chaos-proxy"  # make chaos: as before
    assert b.proxy_process.workdir == tmp_path / "other-proxy"
