"""A private key as an encrypted PKCS#8 PEM that every client the tool starts decrypts.

Kafka's Java client reads a PEM keystore's key only encrypted (``ssl.key.password`` is
required) and decrypts it with ``SecretKeyFactory.getInstance(algorithm)`` of the key's
own algorithm name. PyCA ``cryptography`` writes encrypted PKCS#8 only as PBES2 (AES,
PBKDF2), whose name the JDK reports as plain ``PBES2`` and has no factory for (measured
on OpenJDK 17.0.15: ``NoSuchAlgorithmException: PBES2 SecretKeyFactory not available``):
the Spark observer could not load such a key. The scheme every JDK has a factory for,
and OpenSSL (kafka-python, librdkafka) reads too, is PKCS#12's
``pbeWithSHAAnd3-KeyTripleDES-CBC`` (Java's ``PBEWithSHA1AndDESede``; what
``openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES`` writes). ``cryptography`` has its cipher but
not its key derivation, which is written here from RFC 7292, appendix B.2; the unit tier
checks the result against OpenSSL's own decryption (``cryptography`` and Python's ``ssl``).

The key is only as safe as its folder (producers.keystores: 0700, memory-backed, gone
with the tool); the encryption is what the Java client requires, not the protection.
"""

from __future__ import annotations

import hashlib
import os
from base64 import b64encode

#: pbeWithSHAAnd3-KeyTripleDES-CBC, 1.2.840.113549.1.12.1.3 (RFC 7292 appendix C)
_OID = bytes.fromhex("2a864886f70d010c0103")
ITERATIONS = 10_000
_U, _V = 20, 64  # SHA-1's output and block sizes in bytes


def _kdf(password: str, salt: bytes, purpose: int, iterations: int, size: int) -> bytes:
    """RFC 7292 B.2 with SHA-1: ``purpose`` 1 derives the key, 2 the IV."""
    def fill(data: bytes) -> bytes:  # repeated to a whole number of blocks
        n = _V * -(-len(data) // _V)
        return (data * (n // len(data) + 1))[:n] if data else b""

    pw = password.encode("utf-16-be") + b"\0\0" if password else b""
    d, i = bytes([purpose]) * _V, fill(salt) + fill(pw)
    out = b""
    while len(out) < size:
        a = hashlib.sha1(d + i).digest()
        for _ in range(iterations - 1):
            a = hashlib.sha1(a).digest()
        out += a
        b = int.from_bytes((a * (_V // _U + 1))[:_V], "big") + 1
        i = b"".join(((int.from_bytes(i[j:j + _V], "big") + b) % (1 << (8 * _V)))
                     .to_bytes(_V, "big") for j in range(0, len(i), _V))
    return out[:size]


def _der(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def encrypted_pkcs8_pem(private_key, password: str, iterations: int = ITERATIONS) -> bytes:
    """``private_key`` (a ``cryptography`` key) as ``-----BEGIN ENCRYPTED PRIVATE KEY-----``
    with pbeWithSHAAnd3-KeyTripleDES-CBC under ``password``."""
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives import padding, serialization
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    plain = private_key.private_bytes(serialization.Encoding.DER,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
    salt = os.urandom(8)
    key = _kdf(password, salt, 1, iterations, 24)
    iv = _kdf(password, salt, 2, iterations, 8)
    padder = padding.PKCS7(64).padder()
    enc = Cipher(TripleDES(key), modes.CBC(iv)).encryptor()
    data = enc.update(padder.update(plain) + padder.finalize()) + enc.finalize()
    count = iterations.to_bytes(iterations.bit_length() // 8 + 1, "big")  # DER: minimal
    params = _der(0x30, _der(0x04, salt) + _der(0x02, count))
    info = b64encode(_der(0x30, _der(0x30, _der(0x06, _OID) + params) + _der(0x04, data)))
    lines = b"".join(info[i:i + 64] + b"\n" for i in range(0, len(info), 64))
    return (b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + lines
            + b"-----END ENCRYPTED PRIVATE KEY-----\n")
