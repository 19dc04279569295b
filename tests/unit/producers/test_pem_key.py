"""The converted key is encrypted with a scheme the Java client's PEM keystore decrypts
(producers.pem_key); OpenSSL decrypts it too (kafka-python, librdkafka). The JDK side is
the integration tier's TLS run (tests/integration/orchestration/test_safe_cluster.py)."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from producers.pem_key import _kdf, encrypted_pkcs8_pem


def test_the_key_derivation_gives_the_known_pkcs12_vectors():
    # the PKCS#12 key derivation's widely published vectors (password "smeg")
    salt = bytes.fromhex("0A58CF64530D823F")
    assert _kdf("smeg", salt, 1, 1, 24).hex().upper() == \
        "8AAAE6297B6CB04642AB5B077851284EB7128F1A2A7FBCA3"
    assert _kdf("smeg", salt, 2, 1, 8).hex().upper() == "79993DFE048D3B76"


@pytest.mark.parametrize("key", [rsa.generate_private_key(public_exponent=65537, key_size=2048),
                                 ec.generate_private_key(ec.SECP256R1())],
                         ids=["rsa", "ec"])
def test_openssl_decrypts_it_with_the_password_only(key):
    password = "pässwörd-1"  # not ASCII: the derivation's BMPString
    pem = encrypted_pkcs8_pem(key, password)
    assert pem.startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n")
    assert max(len(ln) for ln in pem.splitlines()) <= 64
    back = serialization.load_pem_private_key(pem, password.encode())
    assert back.private_numbers() == key.private_numbers()
    with pytest.raises(ValueError):
        serialization.load_pem_private_key(pem, b"wrong")
