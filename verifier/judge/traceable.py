"""Does a pipeline's output carry the tool's identities at all (issue 46)?

The identity oracle follows each input record to the output by the identity its trace
column holds. An output whose column holds something else (every aggregation written to
Spark's Kafka sink has a ``value``: a count, a sum) would be judged "every input lost,
every row foreign": a false alarm. Such an output is detected here, from the read-back
rows (none of them decodes as an identity of any run), and never judged by identity.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

#: the decoder's error for a value of another run: that value is an identity (foreign)
_ANOTHER_RUN = "another run"


def no_identity(rows: pa.Table, trace_column: str = "value") -> str | None:
    """Why the output carries no identity (every row fails to decode as one, of this run
    or another), or None when at least one row does or there are none."""
    if rows.num_rows == 0:
        return None
    decoded = pc.invert(pc.fill_null(rows["foreign"], False))
    other_run = pc.fill_null(pc.starts_with(rows["error"], _ANOTHER_RUN), False)
    if pc.any(pc.or_(decoded, other_run)).as_py():
        return None
    first = rows["error"][0].as_py()
    return (f"its output carries no identity: none of its {rows.num_rows} rows' "
            f"{trace_column!r} decodes as a record of the tool ({first}), so it cannot be "
            "judged record by record (an aggregation's output has no input record per "
            "row); set ORACLE = \"reference\" in the pipeline file (with KEY_COLUMNS for "
            "update output) to compare it with a fault-free run instead")


__all__ = ["no_identity"]
