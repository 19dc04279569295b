from __future__ import annotations

import pytest

from verifier.rundata.records import RecordIdentity, UndecodableRecord, decode_value, encode_value

RID = RecordIdentity("r1", "idempotent-0", 2, 1, 17, None, False, 1795314893744)


def test_round_trip_and_padding():
    assert decode_value(encode_value(RID)) == RID
    padded = encode_value(RID, size=512)
    assert len(padded) == 512
    assert decode_value(padded) == RID
    txn = RecordIdentity("r1", "transactional-0", 1, 0, 3, 9, True, 1)
    assert decode_value(encode_value(txn, size=10)) == txn
    assert RID.key == b"idempotent-0:1:17"


@pytest.mark.parametrize("value", [None, b"\xff\xfe", b"[1,2]", b'{"v":2}', b'{"v":1,"run":"x"}'])
def test_foreign_values_are_rejected(value):
    with pytest.raises(UndecodableRecord):
        decode_value(value)


@pytest.mark.parametrize("size", [0, 1, 60, 96, 97, 98, 99, 100, 101, 105, 106, 107, 200, 512])
@pytest.mark.parametrize("txn,abort", [(None, False), (0, False), (12345, True)])
def test_encode_values_is_encode_value_byte_for_byte(size, txn, abort):
    from verifier.rundata.records import encode_values

    # sequences of 1 to 6 digits: one call meets every length from the shortest up, each
    # padded by its own length (encode_values keeps one tail per length)
    idents = [(0, 0), (2, 9), (1, 10), (11, 123456789), (0, 99), (0, 100), (1, 1000),
              (2, 10000), (0, 100000)]
    for run, pid in (("r1", "idempotent-0"), ('ru"n\\é', "p\n1")):
        got = encode_values(run, pid, 3, idents, txn, abort, 1795314893744, size)
        want = [encode_value(RecordIdentity(run, pid, 3, p, seq, txn, abort, 1795314893744),
                             size) for p, seq in idents]
        assert got == want
