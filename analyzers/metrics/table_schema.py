"""The columns of every per-instance table (``instances.parquet``, spilled tables): one definition
for the tables made in memory (``base.make_table``) and those written to disk (``spill``)."""

from __future__ import annotations

from typing import Any

#: (name, arrow type, unit, meaning) of the per-instance table.
INSTANCE_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("metric", "string", "-", "stable dotted metric id"),
    ("source", "string", "-", "'trace' or 'logic'"),
    ("instance", "int64", "-", "index of the instance within its metric and source"),
    ("start_ts", "int64", "ns", "start of the instance in the source's clock"),
    ("end_ts", "int64", "ns", "end of the instance in the source's clock"),
    ("value", "float64", "unit column", "the measured value"),
    ("unit", "string", "-", "unit of value: ns, pct, count"),
    ("start_site", "string", "-", "site the instance starts at ('' for kernel events)"),
    ("start_idx", "int64", "-", "occurrence index of start_site in this source (-1 if none)"),
    ("end_site", "string", "-", "site the instance ends at ('' for kernel events)"),
    ("end_idx", "int64", "-", "occurrence index of end_site in this source (-1 if none)"),
    ("core", "int64", "-", "CPU core of the instance on multi-core traces (-1: not per core)"),
)


def arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [pa.field(n, getattr(pa, t)(), metadata={"unit": u, "doc": d}) for n, t, u, d in INSTANCE_COLUMNS]
    )
