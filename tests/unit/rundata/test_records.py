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
