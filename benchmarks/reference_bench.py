"""The reference oracle's comparison at 1M output rows (issue 46; a script, not a test: it
prints seconds, it asserts nothing).

Synthetic outputs of an orders job, made in Arrow: ``--rows`` rows of (order id, customer,
amount, status, processed_at) for the faulted output and two fault-free runs. The faulted
one has 1,000 rows written twice (a replayed batch), 10 missing and 10 changed (in the
append shape a changed row is one missing and one different);
``processed_at`` differs between the runs (found and left out). Two shapes, timed
separately: append (multisets of rows) and keyed (the final state per order id, each id
updated three times in the faulted output).

    .venv/bin/python benchmarks/reference_bench.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import time

import pyarrow as pa
import pyarrow.compute as pc

from verifier.judge.reference import ORDER, compare


def orders(n: int, at: int, updates: int = 1) -> pa.Table:
    """``n`` orders, each written ``updates`` times (its amount growing): the last is final."""
    ids = pa.array([i for _ in range(updates) for i in range(n)], pa.int64())
    step = pa.array([u for u in range(updates) for _ in range(n)], pa.int64())
    return pa.table({
        "order_id": ids,
        "customer": pc.binary_join_element_wise("c-", pc.cast(pc.bit_wise_and(ids, 4095),
                                                              pa.string()), ""),
        "amount": pc.add(pc.multiply(pc.cast(ids, pa.float64()), 0.25),
                         pc.cast(step, pa.float64())),
        "status": pc.if_else(pc.equal(pc.bit_wise_and(ids, 1), 0), "paid", "open"),
        "processed_at": pa.array([at] * len(ids), pa.int64()),
        ORDER: pa.array(range(len(ids)), pa.int64()),
    })


def faulted_from(ref: pa.Table) -> pa.Table:
    n = ref.num_rows
    keep = ref.slice(10, n - 10)  # 10 missing
    replay = ref.slice(n - 1000, 1000)  # a replayed batch: 1,000 rows again
    out = pa.concat_tables([keep, replay]).combine_chunks()
    at = keep.num_rows - 1010  # 10 changed: final rows, not the replayed ones
    bump = pa.array([0.0] * at + [1.0] * 10 + [0.0] * (out.num_rows - at - 10))
    out = out.set_column(out.schema.get_field_index("amount"), "amount",
                         pc.add(out["amount"], bump))
    out = out.set_column(out.schema.get_field_index("processed_at"), "processed_at",
                         pa.array([3] * out.num_rows, pa.int64()))
    return out.set_column(out.schema.get_field_index(ORDER), ORDER,
                          pa.array(range(out.num_rows), pa.int64()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.rows
    ref, sec = orders(n, 1), orders(n, 2)
    faulted = faulted_from(ref)
    t0 = time.perf_counter()
    c = compare(faulted, ref, second=sec)
    t1 = time.perf_counter()
    print(f"append, {faulted.num_rows:,} rows against {ref.num_rows:,} (and a second run): "
          f"{t1 - t0:.2f} s; {c.counts}, varying {c.varying}")
    k = n // 3
    ref_k, sec_k = orders(k, 1, updates=3), orders(k, 2, updates=3)
    fk = faulted_from(ref_k)
    t0 = time.perf_counter()
    c = compare(fk, ref_k, keys=["order_id"], second=sec_k)
    t1 = time.perf_counter()
    print(f"keyed, {fk.num_rows:,} update rows ({k:,} keys) against {ref_k.num_rows:,}: "
          f"{t1 - t0:.2f} s; {c.counts}, varying {c.varying}")


if __name__ == "__main__":
    main()
