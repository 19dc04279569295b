"""A Java service's PKCS12 stores become PEM files every client reads, in a private folder
that goes with the process (producers.keystores). JKS stores need the JDK's keytool: the
integration tier runs them (tests/integration/orchestration/test_safe_cluster.py)."""

from __future__ import annotations

import datetime
import os
import ssl
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from producers import keystores
from producers.keystores import pem_stores, store_type
from producers.properties import read_user_config
from verifier.rundata.errors import UsageError
from verifier.rundata.plan import redacted, security_of
from verifier.rundata.waiting import wait_until

PASSWORD = f"pw-{uuid.uuid4().hex}"  # unique: any copy of it anywhere is a leak


def _cert(name: str, key, issuer=None, issuer_key=None, ca=False):
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    return (x509.CertificateBuilder().subject_name(subject)
            .issuer_name(issuer or subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .sign(issuer_key or key, hashes.SHA256()))


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A CA, a client key signed by it: a PKCS12 keystore and a PKCS12 truststore."""
    folder = tmp_path_factory.mktemp("stores")
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test-ca", ca_key, ca=True)
    client = _cert("client", key, ca.subject, ca_key)
    enc = serialization.BestAvailableEncryption(PASSWORD.encode())
    (folder / "client.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(b"client", key, client, [ca], enc))
    (folder / "trust.p12").write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"ca")], enc))
    return folder, ca, client


def _props(folder: Path, extra: str = "") -> Path:
    path = folder / "service.properties"
    path.write_text(
        "security.protocol=SSL\n"
        f"ssl.keystore.location={folder / 'client.p12'}\nssl.keystore.type=PKCS12\n"
        f"ssl.keystore.password={PASSWORD}\nssl.key.password={PASSWORD}\n"
        f"ssl.truststore.location={folder / 'trust.p12'}\n"  # no type: sniffed
        f"ssl.truststore.password={PASSWORD}\n" + extra)
    return path


def test_store_types_are_read_from_the_file_when_not_declared(tmp_path, stores):
    folder, _, _ = stores
    pem = tmp_path / "a.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\n")
    jks = tmp_path / "a.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    assert store_type(pem, None) == "PEM"
    assert store_type(jks, None) == "JKS"
    assert store_type(folder / "trust.p12", None) == "PKCS12"
    assert store_type(jks, "pkcs12") == "PKCS12"  # what the file says it is wins


def test_pkcs12_stores_become_pem_files_python_ssl_loads(stores):
    folder, ca, client = stores
    pairs = pem_stores([("acks", "all"), ("security.protocol", "SSL"),
                        ("ssl.keystore.location", str(folder / "client.p12")),
                        ("ssl.keystore.password", PASSWORD),
                        ("ssl.truststore.location", str(folder / "trust.p12")),
                        ("ssl.truststore.type", "PKCS12"),
                        ("ssl.truststore.password", PASSWORD)], "service.properties")
    got = dict(pairs)
    private = keystores.private_folder()
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert got["acks"] == "all" and got["ssl.keystore.type"] == "PEM"
    assert "ssl.keystore.password" not in got and "ssl.truststore.password" not in got
    assert got["ssl.key.password"] == PASSWORD  # the key stays encrypted with its own
    cafile, certfile = Path(got["ssl.truststore.location"]), Path(got["ssl.keystore.location"])
    assert cafile.parent == private and got["ssl.key.location"] == str(certfile)
    for f in (cafile, certfile):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        assert PASSWORD.encode() not in f.read_bytes()
    assert b"BEGIN ENCRYPTED PRIVATE KEY" in certfile.read_bytes()
    assert x509.load_pem_x509_certificate(cafile.read_bytes()) == ca
    # what kafka-python does with them (ssl_cafile, ssl_certfile, ssl_keyfile, ssl_password)
    ctx = ssl.create_default_context(cafile=str(cafile))
    ctx.load_cert_chain(str(certfile), str(certfile), PASSWORD)
    with pytest.raises(ssl.SSLError):
        ctx.load_cert_chain(str(certfile), str(certfile), "wrong")


def test_a_java_services_file_runs_on_every_client_with_secrets_redacted(stores):
    folder, _, _ = stores
    props = _props(folder, "transactional.id=orders-tx\n")
    for client in ("kafka-python", "librdkafka", "java"):
        user = read_user_config(props, client)
        sec = security_of(user.settings)
        assert sec["ssl_password"] == PASSWORD, client
        assert Path(sec["ssl_cafile"]).parent == keystores.private_folder()
        assert PASSWORD not in repr(redacted(user.settings)), client
        if client == "java":  # verbatim: a PEM keystore, the key inside it
            assert user.overrides["ssl.keystore.type"] == "PEM"
            assert "ssl.key.location" not in user.overrides


def test_a_wrong_password_is_one_line_without_the_password(stores):
    folder, _, _ = stores
    props = folder / "wrong.properties"
    props.write_text(f"ssl.keystore.location={folder / 'client.p12'}\n"
                     "ssl.keystore.password=not-it\n")
    with pytest.raises(UsageError, match="cannot read it as PKCS12") as exc:
        read_user_config(props)
    assert "not-it" not in str(exc.value)


def test_the_private_folder_goes_when_the_process_is_killed(tmp_path):
    code = ("import os, signal, sys\n"
            "from producers import keystores\n"
            "f = keystores.private_folder()\n"
            "(f / 'client.pem').write_text('key')\n"
            "print(f, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).parents[3])
    assert proc.returncode == -9, proc.stderr
    folder = Path(proc.stdout.strip())
    assert folder.name.startswith("verifier-keys-")
    wait_until(lambda: (not folder.exists(), sorted(os.listdir(folder))
                        if folder.exists() else []),
               timeout=10, what="the killed process's key folder to go", expected="gone")
