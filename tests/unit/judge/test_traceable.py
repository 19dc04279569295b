"""An output without identities is detected (verifier.judge.traceable)."""

from __future__ import annotations

from streaming.pipelines.readback import decode_values
from verifier.judge.traceable import no_identity
from verifier.rundata.records import encode_values


def test_word_counts_carry_no_identity():
    rows = decode_values("r1", [b"3", b"17", b'{"word": "a"}', None])
    why = no_identity(rows)
    assert why and "carries no identity" in why and "ORACLE = \"reference\"" in why


def test_one_identity_is_enough_and_another_runs_is_an_identity():
    ours = encode_values("r1", "idempotent-0", 1, [(0, 5)], None, False, 1)
    theirs = encode_values("r0", "idempotent-0", 1, [(0, 5)], None, False, 1)
    assert no_identity(decode_values("r1", [b"3", *ours])) is None
    assert no_identity(decode_values("r1", [b"3", *theirs])) is None
    assert no_identity(decode_values("r1", [])) is None
