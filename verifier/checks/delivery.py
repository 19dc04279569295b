"""Lost and unseen: records that had to be visible and that a reader did not deliver."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from verifier.checks.derive import Derived, combo_col
from verifier.checks.model import LOST, UNSEEN, anomaly_frame


def check_lost(d: Derived) -> DataFrame:
    """An identity that must be visible (ok, or in a committed transaction) that some
    reader did not deliver at an isolation level, one row per (identity, isolation).

    ``info`` sends are never in the must-see set: they count as written only if a reader
    saw them. When the drain did not complete (for that partition) the row is ``unseen``
    (lost or late), not ``lost``. Evidence says whether another reader saw it, i.e.
    whether it was in the log but not delivered.
    """
    i = d.ident.where(F.col("must_see"))
    drain = d.run.drain
    behind = [F.lit(f"{t}\x00{p}") for t, p in drain.behind_keys()]
    key = F.concat_ws("\x00", F.col("topic"), F.col("p").cast("string"))
    late = F.lit(not drain.completed)
    if behind:
        late = late | key.isin(*behind)
    seen_cols = {combo_col(r, iso): r for r, iso in d.run.combos}
    seen_any = [F.coalesce(F.col("seen_" + c), F.lit(False)) for c in seen_cols]
    in_log = reduce(lambda a, b: a | b, seen_any)
    seen_by = F.concat_ws(
        ",", *[F.when(s, F.lit(c)) for s, c in zip(seen_any, seen_cols, strict=True)]
    )
    out = []
    for iso in sorted({iso for _, iso in d.run.combos}):
        here = [(r, F.coalesce(F.col("seen_" + combo_col(r, i2)), F.lit(False)))
                for r, i2 in d.run.combos if i2 == iso]  # fmt: skip
        missing = F.concat_ws(",", *[F.when(~s, F.lit(r)) for r, s in here])
        absent = reduce(lambda a, b: a | b, [~s for _, s in here])
        out.append(anomaly_frame(
            i.where(absent), F.when(late, UNSEEN).otherwise(LOST),
            {"in_log": in_log, "seen_by": seen_by, "acknowledged": F.col("ok"),
             "transactional": F.col("transactional")},
            topic=F.col("topic"), partition=F.col("p"), isolation=F.lit(iso), reader=missing,
            pid=F.col("pid"), seq=F.col("seq"), t=F.col("t_send"),
        ))  # fmt: skip
    return reduce(DataFrame.unionByName, out)
