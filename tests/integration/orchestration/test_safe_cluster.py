"""A run never disturbs a live system on the cluster it tests (issue 48, DESIGN §11).

One 1-node local cluster (slot "safe" of tests/conftest.py, its own state folder, stopped
afterwards) stands in for a user's cluster: a PLAINTEXT client listener, and a TLS one
(node 2's client port, free in a 1-node cluster) whose broker keystore and truststore
are JKS files made by keytool and which requires a client certificate. Each test runs
`verifier chaos` (or `--plan`, or `cleanup`) as a subprocess, as a user would, against it
as an external cluster (`--bootstrap-servers`):

- a live transactional service (tests/integration/orchestration/live_service.py) keeps
  committing, without a single error, while a run uses the service's own properties file;
- a producer this test starts with the run generator's transactional id fences it on
  purpose: the run reports it (UNKNOWN with the reason), never a silent PASS;
- `--plan` lists the prefixed ids and the ACLs, and the cluster's topics and groups are
  the same before and after;
- a Java service's JKS keystore and truststore run on the TLS listener, and no password
  of them is anywhere in the run folder or the tool's output, nor is the converted key
  left on the machine;
- `verifier cleanup --bootstrap-servers` after a kill -9 of a run leaves no topic of it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest

from tests.conftest import port_base
from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.topics import admin, create_topics
from verifier.rundata.errors import VerifierError
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.naming import run_of
from verifier.rundata.waiting import GiveUp, wait_until

#: whole `verifier chaos` runs of their own (issue 39): the chaos tier, `make test-runs`
pytestmark = [pytest.mark.integration, pytest.mark.chaos]

BASE_PORT = int(os.environ.get("VERIFIER_TEST_SAFE_BASE_PORT", port_base("safe")))
STATE_DIR = PROJECT_ROOT / ".state" / f"test-safe-{BASE_PORT}"
PLAIN = f"127.0.0.1:{BASE_PORT + 1}"
TLS = f"127.0.0.1:{BASE_PORT + 2}"
SERVICE = Path(__file__).with_name("live_service.py")
#: unique: any copy of one anywhere is a leak
STORE_PW, KEY_PW, TRUST_PW = (f"{w}-{uuid.uuid4().hex}" for w in ("store", "key", "trust"))
BROKER_PW = f"broker-{uuid.uuid4().hex}"


def _keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=120)


def _stores(folder: Path) -> Path:
    """The broker's and the client's JKS stores, each trusting the other's certificate;
    the client's key password differs from its store's (keytool's -keypass)."""
    b, c = folder / "broker.jks", folder / "client.jks"
    _keytool("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-dname", "CN=localhost",
             "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-validity", "30", "-keystore", str(b),
             "-storetype", "JKS", "-storepass", BROKER_PW, "-keypass", BROKER_PW)
    _keytool("-genkeypair", "-alias", "service", "-keyalg", "RSA", "-dname",
             "CN=orders-service", "-validity", "30", "-keystore", str(c), "-storetype", "JKS",
             "-storepass", STORE_PW, "-keypass", KEY_PW)
    for store, pw, alias, into, into_pw in ((b, BROKER_PW, "broker", "client-trust.jks",
                                             TRUST_PW),
                                            (c, STORE_PW, "service", "broker-trust.jks",
                                             BROKER_PW)):
        crt = folder / f"{alias}.crt"
        _keytool("-exportcert", "-alias", alias, "-keystore", str(store), "-storepass", pw,
                 "-file", str(crt))
        _keytool("-importcert", "-noprompt", "-alias", alias, "-file", str(crt),
                 "-keystore", str(folder / into), "-storetype", "JKS", "-storepass", into_pw)
    return folder


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    return _stores(tmp_path_factory.mktemp("stores"))


@pytest.fixture(scope="module")
def safe_cluster(stores):
    b = BASE_PORT
    tls = "listener.name.tls."
    spec = ClusterSpec(nodes=1, base_port=b, overrides={
        "listeners": f"EXTERNAL://127.0.0.1:{b + 1},INTERNAL://127.0.0.1:{b + 101},"
                     f"CONTROLLER://127.0.0.1:{b + 201},TLS://127.0.0.1:{b + 2}",
        "advertised.listeners": f"EXTERNAL://127.0.0.1:{b + 1},"
                                f"INTERNAL://127.0.0.1:{b + 101},TLS://127.0.0.1:{b + 2}",
        "listener.security.protocol.map": "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT,"
                                          "CONTROLLER:PLAINTEXT,TLS:SSL",
        tls + "ssl.keystore.location": str(stores / "broker.jks"),
        tls + "ssl.keystore.type": "JKS", tls + "ssl.keystore.password": BROKER_PW,
        tls + "ssl.key.password": BROKER_PW,
        tls + "ssl.truststore.location": str(stores / "broker-trust.jks"),
        tls + "ssl.truststore.type": "JKS", tls + "ssl.truststore.password": BROKER_PW,
        tls + "ssl.client.auth": "required"})
    cluster, _ = up(STATE_DIR, spec)
    try:
        create_topics(PLAIN, {"orders-live": 1}, 1)  # the live service's own topic
        yield cluster
    finally:
        cluster.down(kill=True)


def _scenario(folder: Path, modes: str, seconds: int = 12) -> str:
    path = folder / "safe.toml"
    path.write_text(f'description = "issue 48"\n[workload]\nduration_s = {seconds}\n'
                    f"rate = 50\nmodes = [{modes}]\n")
    return str(path)


def _service_props(folder: Path, extra: str = "") -> Path:
    path = folder / "service.properties"
    path.write_text("transactional.id=orders-service-tx\nacks=all\nenable.idempotence=true\n"
                    + extra)
    return path


def _chaos_argv(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "verifier", "chaos", "--out", str(out), *args]


def _cli(*argv: str, timeout: float = 480) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier", *argv], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _run_dir(out: Path) -> Path:
    (config,) = out.glob("safe/*/config.json")
    return config.parent


def _names(bootstrap: str, **security) -> tuple[set, set]:
    with admin(bootstrap, timeout=20, **security) as a:
        groups = {g["group_id"] if isinstance(g, dict) else g[0] for g in a.list_groups()}
        return set(a.list_topics()), groups


def test_a_live_service_with_the_same_transactional_id_is_never_fenced(safe_cluster,
                                                                      tmp_path):
    props, log = _service_props(tmp_path), tmp_path / "service.log"
    service = subprocess.Popen([sys.executable, str(SERVICE), str(props), PLAIN,
                                "orders-live", str(log)], cwd=PROJECT_ROOT)
    try:
        wait_until(lambda: (log.exists() and log.read_text().count("commit ") >= 2,
                            log.read_text() if log.exists() else ""),
                   timeout=60, what="the live service's first commits", expected="2 commits")
        t0 = time.time()
        run = subprocess.run(_chaos_argv(tmp_path / "out", "--bootstrap-servers", PLAIN,
                                         "--producer-config", str(props), "--scenario",
                                         _scenario(tmp_path, '"idempotent"')),
                             cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=480)
        t1 = time.time()
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(30)
    lines = log.read_text().splitlines()
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    during = [ln for ln in lines if ln.startswith("commit ") and t0 <= float(ln.split()[2]) <= t1]
    assert errors == [], f"{len(errors)} errors of the live service: {errors[:3]}"
    # one commit per half second and its round trips: at least a third of the ideal
    assert len(during) >= (t1 - t0) / 0.5 / 3, (len(during), t1 - t0)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    plan = orjson.loads((_run_dir(tmp_path / "out") / "config.json").read_bytes())
    user = plan["producers"]["user-0"]
    assert user["overrides"]["transactional_id"] == f"{plan['run']}.orders-service-tx"
    assert "runs as <run id>.orders-service-tx" in run.stdout


def _committed(history: Path) -> bool:
    if not history.exists():
        return False
    return any(b'"f":"commit"' in ln and b'"type":"ok"' in ln
               for ln in history.read_bytes().splitlines())


def test_a_producer_that_fences_the_tools_generator_is_reported(safe_cluster, tmp_path):
    from kafka import KafkaProducer

    out = tmp_path / "out"
    proc = subprocess.Popen(_chaos_argv(out, "--bootstrap-servers", PLAIN, "--scenario",
                                        _scenario(tmp_path, '"transactional"', 16)),
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        def generating():
            if proc.poll() is not None:
                raise GiveUp(VerifierError(f"chaos exited early:\n{proc.stdout.read()}"))
            found = list(out.glob("safe/*/histories/transactional-0.jsonl"))
            return bool(found) and _committed(found[0]), "no committed transaction yet"

        wait_until(generating, timeout=300, what="the generator's first commit",
                   expected="a committed transaction", interval=0.2)
        run = orjson.loads((_run_dir(out) / "config.json").read_bytes())["run"]
        # the run's own transactional id, initialised by a producer that is not the tool's
        foreign = KafkaProducer(bootstrap_servers=PLAIN,
                                transactional_id=f"{run}.transactional-0")
        foreign.init_transactions()
        time.sleep(2)
        foreign.close(timeout=5)
        output, _ = proc.communicate(timeout=480)
    finally:
        if proc.poll() is None:
            proc.kill()
    doc = orjson.loads((_run_dir(out) / "verdict.json").read_bytes())
    cols = {c["name"]: c for c in doc["columns"]}
    for name in ("transactional@read_committed", "transactional@read_uncommitted"):
        # never PASS: UNKNOWN, or a FAIL with the finding beside it
        assert cols[name]["verdict"] in ("UNKNOWN", "FAIL"), (name, output[-3000:])
        assert any("fenced by a producer that is not the tool's" in r
                   for r in cols[name]["reasons"]), cols[name]["reasons"]
    assert len(doc["foreign_fences"]) >= 1 and proc.returncode in (1, 2), output[-3000:]


def test_the_plan_lists_prefixed_ids_and_acls_and_changes_nothing(safe_cluster, tmp_path):
    props = _service_props(tmp_path)
    before = _names(PLAIN)
    run = _cli("chaos", "--plan", "--out", str(tmp_path / "out"), "--bootstrap-servers",
               PLAIN, "--producer-config", str(props), "--scenario",
               _scenario(tmp_path, '"idempotent", "transactional"'))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    topics = [ln.split()[1] for ln in lines if ln.startswith("  topic ")]
    tids = [ln.split()[2] for ln in lines if ln.startswith("  transactional id ")]
    assert len(topics) == 3 and all(t.startswith("verifier-safe-<start>-s1.") for t in topics)
    assert set(tids) == {"verifier-safe-<start>-s1.transactional-0",
                         "verifier-safe-<start>-s1.orders-service-tx"}
    acls = [ln.strip() for ln in lines if ln.strip().startswith("kafka-acls.sh ")]
    assert len(acls) == 7, run.stdout
    assert all(f"--bootstrap-server {PLAIN} --add --allow-principal 'User:ANONYMOUS'" in a
               and a.endswith("verifier- --resource-pattern-type prefixed") for a in acls)
    assert _names(PLAIN) == before  # topics and groups: nothing created, nothing deleted


@pytest.fixture(scope="module")
def jks_run(safe_cluster, stores, tmp_path_factory):
    """One run on the TLS listener with a Java service's JKS stores."""
    folder = tmp_path_factory.mktemp("jks")
    props = _service_props(folder, (
        "security.protocol=SSL\n"
        f"ssl.keystore.location={stores / 'client.jks'}\nssl.keystore.type=JKS\n"
        f"ssl.keystore.password={STORE_PW}\nssl.key.password={KEY_PW}\n"
        f"ssl.truststore.location={stores / 'client-trust.jks'}\n"
        f"ssl.truststore.password={TRUST_PW}\nssl.endpoint.identification.algorithm=https\n"))
    out = folder / "out"
    run = subprocess.run(_chaos_argv(out, "--bootstrap-servers", TLS, "--producer-config",
                                     str(props), "--scenario",
                                     _scenario(folder, '"transactional"')),
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=480)
    return run, out


def _why(out: Path) -> str:
    """A failed run's reasons and its logs' last lines, for the assertion's message."""
    said = []
    for doc in out.glob("safe/*/verdict.json"):
        said += [r for c in orjson.loads(doc.read_bytes())["columns"] for r in c["reasons"]]
    for log in sorted(out.glob("safe/*/logs/*.log")):
        said.append(f"--- {log.name}: " + "\n".join(log.read_text(errors="replace")
                                                      .splitlines()[-15:]))
    return "\n".join(said)[-6000:]


def test_a_jks_keystore_runs_on_a_tls_listener(jks_run):
    run, out = jks_run
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-1000:] + _why(out)
    doc = orjson.loads((_run_dir(out) / "verdict.json").read_bytes())
    assert {c["name"]: c["verdict"] for c in doc["columns"]} == {
        "transactional@read_committed": "PASS", "transactional@read_uncommitted": "PASS",
        "user:service.properties@read_committed": "PASS",
        "user:service.properties@read_uncommitted": "PASS"}, run.stdout[-3000:]
    security = orjson.loads((_run_dir(out) / "config.json").read_bytes())["security"]
    assert security["security_protocol"] == "SSL" and security["ssl_password"] == "***"
    converted = Path(security["ssl_cafile"]).parent
    assert converted.name.startswith("verifier-keys-")
    assert not converted.exists(), "the converted keys outlived the run"
    from kafka.errors import KafkaError

    with pytest.raises(KafkaError):  # the listener really wants TLS: no plaintext client
        _names(TLS)


def test_no_keystore_password_is_written_in_the_run_folder(jks_run):
    run, out = jks_run
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 20
    for secret in (STORE_PW, KEY_PW, TRUST_PW):
        leaks = [p for p in files if secret.encode() in p.read_bytes()]
        assert not leaks, f"a keystore password was written to {leaks}"
        assert secret not in run.stdout and secret not in run.stderr


def test_cleanup_after_a_kill_9_leaves_no_topic_of_the_run(safe_cluster, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(_chaos_argv(out, "--bootstrap-servers", PLAIN, "--scenario",
                                        _scenario(tmp_path, '"idempotent"', 60)),
                            cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: (bool(list(out.glob("safe/*/config.json"))), "no config.json"),
                   timeout=300, what="the run's topics", expected="config.json written")
    finally:
        proc.kill()  # kill -9: no chance to delete anything
        proc.wait(30)
    run = orjson.loads((_run_dir(out) / "config.json").read_bytes())["run"]
    left = {t for t in _names(PLAIN)[0] if run_of(t) == run}
    assert left, "the killed run's topics were expected on the cluster"
    refused = _cli("cleanup", "--bootstrap-servers", PLAIN, "--run", "orders-live")
    assert refused.returncode == 64 and "not a run id of this tool" in refused.stderr
    cleaned = _cli("cleanup", "--bootstrap-servers", PLAIN)
    assert cleaned.returncode == 0, cleaned.stderr
    wait_until(lambda: (not {t for t in _names(PLAIN)[0] if run_of(t) == run},
                        sorted(_names(PLAIN)[0])),
               timeout=60, what="the killed run's topics to go", expected="none of them")
    assert "orders-live" in _names(PLAIN)[0]  # nothing else is touched
    assert sum(f"deleted topic {t}" in cleaned.stdout for t in left) == len(left)
