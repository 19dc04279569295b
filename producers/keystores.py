"""Java keystores (JKS, PKCS12) from a Java client's properties, as PEM for every client.

A Java service's properties name its TLS material as keystores: ``ssl.keystore.location``
(its key and certificate chain), ``ssl.truststore.location`` (the certificates it trusts),
their ``.type`` (Kafka's default: JKS) and passwords. kafka-python and librdkafka read
PEM files only, and so does the tool's own plumbing (topic administration, the plain
reader; the Spark observer is given PEM stores too). :func:`pem_stores` rewrites those
properties onto PEM files it writes into :func:`private_folder`:

- ``ca.pem``: every certificate of the truststore;
- ``client.pem``: the keystore's private key, encrypted (PKCS#8, a scheme every client
  decrypts: producers.pem_key) with the keystore's own key password, then its certificate
  chain. Encrypted because the Java client's PEM keystore requires ``ssl.key.password``,
  and so no new secret is made: the password travels as it did before, redacted in the
  run's files, to the children in their environment (verifier.rundata.plan).

Why keytool and ``cryptography``: keytool is the JDK's own reader of JKS (and of every
variant Java writes), and the JDK is already required (Spark, the brokers); its passwords
are given through the environment (``-storepass:env``), never on a command line that
``ps`` shows. keytool cannot export a private key, so the key of a PKCS12 store (the
user's, or the one keytool converted a JKS store into) is read with PyCA ``cryptography``,
the maintained library for it (pyjks, the pure-Python JKS reader, has had no release
since 2020). Nothing here prints a password; keytool's own messages carry none.

The folder is private (0700, on /dev/shm when it can: never on a disk) and goes when the
tool exits: at exit, and, after a SIGKILL of the tool, by a small watcher process that
removes it when the pipe the tool holds closes.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from producers.pem_key import encrypted_pkcs8_pem
from verifier.rundata.errors import UsageError

#: the properties a keystore or truststore is named by
KEYSTORE_KEYS = ("ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password",
                 "ssl.key.password")
TRUSTSTORE_KEYS = ("ssl.truststore.location", "ssl.truststore.type",
                   "ssl.truststore.password")
#: what keytool calls each store type it may be asked to read
STORE_TYPES = ("JKS", "JCEKS", "PKCS12")

_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
_folder: Path | None = None
_watcher: subprocess.Popen | None = None

#: the watcher: waits for the pipe from the tool to close (the tool exited, however),
#: then removes the folder; the terminal's signals are not for it
_WATCHER = ("import shutil, signal, sys\n"
            "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n"
            "    signal.signal(s, signal.SIG_IGN)\n"
            "sys.stdin.buffer.read()\n"
            "shutil.rmtree(sys.argv[1], ignore_errors=True)\n")


def private_folder() -> Path:
    """This process's private folder for converted stores (created on first use, 0700),
    removed when the process exits, however it exits."""
    global _folder, _watcher
    if _folder is None:
        shm = Path("/dev/shm")
        base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
        _folder = Path(tempfile.mkdtemp(prefix="verifier-keys-", dir=base))  # mode 0700
        _watcher = subprocess.Popen(
            [sys.executable, "-c", _WATCHER, str(_folder)], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        atexit.register(remove_private_folder)
    return _folder


def remove_private_folder() -> None:
    """Remove the folder now (at exit; tests), and let the watcher go."""
    global _folder, _watcher
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)
        _folder = None
    if _watcher is not None:
        _watcher.stdin.close()  # the watcher removes nothing more and exits
        _watcher = None


def store_type(path: Path, declared: str | None) -> str:
    """``PEM``, ``JKS``, ``JCEKS`` or ``PKCS12``: the declared ``ssl.*.type``, else what the
    file's first bytes say (a PEM file named without its type keeps working as before)."""
    if declared:
        return declared.strip().upper()
    try:
        head = path.read_bytes()[:16]
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if head.lstrip().startswith(b"-----BEGIN"):
        return "PEM"
    if head.startswith(b"\xfe\xed\xfe\xed"):
        return "JKS"
    if head.startswith(b"\xce\xce\xce\xce"):
        return "JCEKS"
    if head.startswith(b"\x30"):
        return "PKCS12"  # a DER SEQUENCE: what a PKCS#12 file is
    return "PEM"  # let the client say what it makes of it


def pem_stores(pairs: Iterable[tuple[str, str]], source: str, java: bool = False
               ) -> list[tuple[str, str]]:
    """``pairs`` (Java properties) with a JKS, JCEKS or PKCS12 keystore and truststore
    replaced by PEM files in :func:`private_folder`; PEM stores and everything else as
    they are. ``java``: for the Java client's own file (no ``ssl.key.location``, a key
    Kafka's Java client takes only inside the PEM keystore)."""
    pairs = list(pairs)
    given = dict(pairs)
    out = pairs
    trust = given.get("ssl.truststore.location")
    trust_kind = store_type(Path(trust), given.get("ssl.truststore.type")) if trust else "PEM"
    if trust_kind in STORE_TYPES:
        ca = _truststore_pem(Path(trust), trust_kind, given.get("ssl.truststore.password"),
                             source)
        out = [(k, v) for k, v in out if k not in TRUSTSTORE_KEYS]
        out += [("ssl.truststore.location", str(ca)), ("ssl.truststore.type", "PEM")]
    keystore = given.get("ssl.keystore.location")
    kind = store_type(Path(keystore), given.get("ssl.keystore.type")) if keystore else "PEM"
    if kind in STORE_TYPES:
        store_pw = given.get("ssl.keystore.password") or ""
        key_pw = given.get("ssl.key.password") or store_pw
        client, password = _keystore_pem(Path(keystore), kind, store_pw, key_pw, source)
        out = [(k, v) for k, v in out if k not in KEYSTORE_KEYS]
        out += [("ssl.keystore.location", str(client)), ("ssl.keystore.type", "PEM"),
                ("ssl.key.password", password)]
        if not java:  # librdkafka loads the key only from ssl.key.location
            out.append(("ssl.key.location", str(client)))
    return out


def _keytool() -> str:
    from verifier.rundata import jvm

    java = Path(os.path.realpath(jvm.choose_java()))
    for candidate in (java.with_name("keytool"), shutil.which("keytool")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise UsageError("a JKS store needs the JDK's keytool, found neither beside "
                     f"{java} nor on the PATH")


def _keytool_run(args: list[str], env: dict[str, str], what: str) -> bytes:
    """keytool with its passwords in the environment (``:env``), never in argv."""
    # its listing is parsed (``Alias name:``): in English, whatever the user's locale
    proc = subprocess.run([_keytool(), "-J-Duser.language=en", "-J-Duser.country=US", *args],
                          capture_output=True,
                          env={**os.environ, **env}, timeout=60)
    if proc.returncode != 0:
        said = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
        raise UsageError(f"{what}: keytool: {said[-1] if said else proc.returncode}")
    return proc.stdout


def _truststore_pem(path: Path, kind: str, password: str | None, source: str) -> Path:
    """Every certificate of a truststore, as one PEM file: a PKCS12 store read here, a
    JKS or JCEKS one listed by keytool."""
    what = f"{source}: ssl.truststore.location {path}"
    if kind == "PKCS12":
        from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

        try:
            store = pkcs12.load_pkcs12(_read(path, what),
                                       password.encode() if password else None)
        except ValueError:
            raise UsageError(f"{what}: cannot read it as PKCS12 with "
                             "ssl.truststore.password (wrong password, or not a store)") from None
        found = [c.certificate for c in ((store.cert,) if store.cert else ())]
        found += [c.certificate for c in store.additional_certs]
        certs = [c.public_bytes(Encoding.PEM).strip() for c in found]
    else:
        env = {"VERIFIER_STORE_PASS": password or ""}
        args = ["-list", "-rfc", "-keystore", str(path), "-storetype", kind]
        args += ["-storepass:env", "VERIFIER_STORE_PASS"] if password else []
        certs = _CERT.findall(_keytool_run(args, env, what))
    if not certs:
        raise UsageError(f"{what}: no certificate in it")
    target = private_folder() / "ca.pem"
    _write_private(target, b"\n".join(certs) + b"\n")
    return target


def _keystore_pem(path: Path, kind: str, store_pw: str, key_pw: str,
                  source: str) -> tuple[Path, str]:
    """The keystore's private key (encrypted with its key password) and certificate
    chain as one PEM file; returns it and the password its key is encrypted with."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    what = f"{source}: ssl.keystore.location {path}"
    if kind == "PKCS12":
        data, p12_pw = _read(path, what), store_pw
    else:
        data, p12_pw = _as_pkcs12(path, kind, store_pw, key_pw, what), key_pw
    try:
        key, cert, chain = pkcs12.load_key_and_certificates(
            data, p12_pw.encode() if p12_pw else None)
    except ValueError:
        raise UsageError(f"{what}: cannot read it as {kind} with ssl.keystore.password "
                         "(wrong password, or not a keystore)") from None
    if key is None or cert is None:
        raise UsageError(f"{what}: no private key with its certificate in it")
    password = key_pw or secrets.token_urlsafe(24)  # a store without one: the run's own
    pem = encrypted_pkcs8_pem(key, password)  # a scheme the Java client decrypts too
    for c in (cert, *(chain or [])):
        pem += c.public_bytes(serialization.Encoding.PEM)
    target = private_folder() / "client.pem"
    _write_private(target, pem)
    return target, password


def _as_pkcs12(path: Path, kind: str, store_pw: str, key_pw: str, what: str) -> bytes:
    """A JKS or JCEKS keystore's key entry converted by keytool into a PKCS12 file in the
    private folder (read, then removed), protected by the key's password."""
    env = {"VERIFIER_STORE_PASS": store_pw, "VERIFIER_KEY_PASS": key_pw}
    listed = _keytool_run(["-list", "-v", "-keystore", str(path), "-storetype", kind,
                           "-storepass:env", "VERIFIER_STORE_PASS"], env, what)
    alias = _key_alias(listed.decode(errors="replace"))
    if alias is None:
        raise UsageError(f"{what}: no private key entry in it")
    target = private_folder() / "keystore.p12"
    target.unlink(missing_ok=True)
    try:
        _keytool_run(["-importkeystore", "-noprompt", "-srckeystore", str(path),
                      "-srcstoretype", kind, "-srcstorepass:env", "VERIFIER_STORE_PASS",
                      "-srcalias", alias, "-srckeypass:env", "VERIFIER_KEY_PASS",
                      "-destkeystore", str(target), "-deststoretype", "PKCS12",
                      "-deststorepass:env", "VERIFIER_KEY_PASS",
                      "-destkeypass:env", "VERIFIER_KEY_PASS"], env, what)
        return target.read_bytes()
    finally:
        target.unlink(missing_ok=True)


def _key_alias(listing: str) -> str | None:
    """The first private key entry's alias in ``keytool -list -v``'s output."""
    alias = None
    for line in listing.splitlines():
        if line.startswith("Alias name:"):
            alias = line.split(":", 1)[1].strip()
        elif line.startswith("Entry type:") and "PrivateKeyEntry" in line:
            return alias
    return None


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{what}: {exc.strerror}") from None


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
