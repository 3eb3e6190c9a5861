"""Read and write decoded traces as Parquet (``*.ctev.parquet``): events plus side tables and meta.

Batch analysis writes every decoded source this way (``events-<source>.ctev.parquet``) and can
read such files back as inputs, e.g. synthetic campaigns made without an encoder.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from trace_parsers.model import (
    EVENT_COLUMNS,
    EVENT_DTYPE,
    VALUE_NULL,
    Channel,
    Diagnostic,
    Isr,
    Marker,
    Severity,
    Task,
    Trace,
    TraceMeta,
)

SUFFIX = ".ctev.parquet"
_STAMP = b"crosstrace.stamp"
_SIDE = {"tasks": Task, "isrs": Isr, "markers": Marker, "channels": Channel, "diagnostics": Diagnostic}


#: ``source_format`` of the logic-capture readers, for event files written before
#: ``TraceMeta.source_kind`` existed
LEGACY_LOGIC_FORMATS = frozenset({"sigrok", "vcd", "saleae_csv", "saleae_binary", "dsl", "synthetic_logic"})


def legacy_source_kind(meta: dict[str, Any]) -> str:
    """``source_kind`` of an event file that does not record it, from the reader that wrote it."""
    return "logic" if meta.get("source_format") in LEGACY_LOGIC_FORMATS else "trace"


def save_trace(trace: Trace, path: str | Path, *, stamp: dict[str, Any] | None = None) -> None:
    """Write ``trace`` to ``path``; ``stamp`` (JSON) records what the events were decoded from, so a
    later run can reuse the file instead of decoding again (:func:`read_stamp`)."""
    import pyarrow.parquet as pq

    table = trace.to_arrow()
    meta = dataclasses.asdict(trace.meta)
    side = {name: [dataclasses.asdict(r) for r in getattr(trace, name)] for name in _SIDE}
    md = dict(table.schema.metadata or {})
    md[b"crosstrace.meta"] = json.dumps(meta, default=str).encode()
    md[b"crosstrace.side"] = json.dumps(side, default=int).encode()
    md[b"crosstrace.strings"] = json.dumps(trace.strings).encode()
    if stamp is not None:
        md[_STAMP] = json.dumps(stamp, sort_keys=True).encode()
    # zstd level 1 without dictionary pages: faster to write than the default (snappy with
    # dictionaries) and under half the size; read back identically
    pq.write_table(
        table.replace_schema_metadata(md),
        str(path),
        compression="zstd",
        compression_level=1,
        use_dictionary=False,
    )


def read_stamp(path: str | Path) -> dict[str, Any] | None:
    """The stamp :func:`save_trace` wrote into ``path`` (None when absent or unreadable)."""
    import pyarrow.parquet as pq

    try:
        md = pq.read_schema(str(path)).metadata or {}
        raw = md.get(_STAMP)
        return json.loads(raw) if raw else None
    except (OSError, ValueError):
        return None


def load_trace(path: str | Path) -> Trace:
    import pyarrow.parquet as pq

    from trace_parsers.errors import TraceFormatError

    try:
        table = pq.read_table(str(path))
        md = table.schema.metadata or {}
        meta_d: dict[str, Any] = json.loads(md[b"crosstrace.meta"])
        side = json.loads(md[b"crosstrace.side"])
        strings = json.loads(md.get(b"crosstrace.strings", b"[]"))
    except (OSError, KeyError, ValueError) as e:
        raise TraceFormatError(
            f"not a crosstrace event file: {e}", code="FMT_UNKNOWN", path=str(path), offset=0
        ) from None
    ev = np.zeros(table.num_rows, dtype=EVENT_DTYPE)
    for c in EVENT_COLUMNS:
        col = table.column(c.name)
        if c.nullable:
            ev[c.name] = col.fill_null(VALUE_NULL).to_numpy()
        else:
            ev[c.name] = col.to_numpy()
    rows: dict[str, list[Any]] = {}
    for name, cls in _SIDE.items():
        items = []
        for r in side.get(name, []):
            if cls is Diagnostic:
                r = {**r, "severity": Severity(int(r["severity"]))}
            items.append(cls(**r))
        rows[name] = items
    fields = {f.name for f in dataclasses.fields(TraceMeta)}
    meta_d.setdefault("source_kind", legacy_source_kind(meta_d))
    meta = TraceMeta(**{k: v for k, v in meta_d.items() if k in fields})
    return Trace(ev, meta, strings=strings, **rows)
