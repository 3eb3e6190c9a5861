"""The whole-trace events table (``crosstrace events`` for a trace held in memory).

:func:`write_events` writes a :class:`~trace_parsers.model.Trace` as Parquet or CSV with kind and
context names; :func:`with_names` adds per-row task/ISR names and the ``crosstrace`` schema metadata
(tick rate, time unit, RTOS, side tables: :func:`crosstrace_json`). The chunked export
(:mod:`analyzers.export.events_chunked`) produces the same content and takes its metadata from
:func:`crosstrace_json` (NumPy and Arrow only: ``pa.array`` on a list, as here, imports pandas).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["crosstrace_json", "with_names", "write_events"]


def write_events(trace: Any, out: Path) -> None:
    """Write events (with kind names) to Parquet or CSV, chosen by the suffix."""
    import pyarrow as pa

    from trace_parsers.model import CtxType, EventKind

    table = trace.to_arrow()
    kinds = [EventKind(k).name for k in range(len(EventKind))]
    ctxs = [CtxType(k).name for k in range(len(CtxType))]
    # typed: a trace without events gives string columns too (an empty list would infer null)
    table = table.append_column("kind_name", pa.array([kinds[k] for k in trace.columns["kind"].tolist()],
                                                      pa.string()))
    table = table.append_column("ctx_type_name",
                                pa.array([ctxs[k] for k in trace.columns["ctx_type"].tolist()], pa.string()))
    table = with_names(trace, table)
    suffix = out.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    elif suffix == ".csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, out)
    else:
        raise SystemExit(f"crosstrace: unsupported output {out} (expected .parquet or .csv)")


def with_names(trace: Any, table: Any) -> Any:
    """Task/ISR names per row (``ctx_name``, ``target_name``) and, in the Parquet schema metadata
    ``crosstrace``, the tick rate, time unit, RTOS and side tables (tasks, ISRs, markers)."""
    import pyarrow as pa

    from trace_parsers.model import CtxType

    tasks = {t.ctx_id: t.name for t in trace.tasks}
    isrs = {i.number: i.name for i in trace.isrs}
    ev = trace.columns
    ct, cid, tgt = ev["ctx_type"].tolist(), ev["ctx_id"].tolist(), ev["target_id"].tolist()

    def ctx_name(t: int, c: int) -> str | None:
        if t == CtxType.TASK:
            return tasks.get(c)
        if t == CtxType.ISR:
            return isrs.get(c)
        return "idle" if t == CtxType.IDLE else None

    table = table.append_column("ctx_name", pa.array([ctx_name(t, c) for t, c in zip(ct, cid)], pa.string()))
    table = table.append_column("target_name", pa.array([tasks.get(t) for t in tgt], pa.string()))
    old = table.schema.metadata or {}
    return table.replace_schema_metadata({**old, b"crosstrace": crosstrace_json(trace)})


def crosstrace_json(trace: Any) -> str:
    """The ``crosstrace`` schema metadata (JSON): tick rate, time unit, RTOS and side tables (tasks,
    ISRs, markers) of ``trace``. Imports nothing (no Arrow, no pandas)."""
    m = trace.meta
    meta = {
        "source_format": m.source_format, "source_kind": m.source_kind, "tick_hz": m.tick_hz,
        "ts_unit": m.ts_unit, "rtos": m.rtos,
        "cores": m.cores, "tasks": [{"ctx_id": t.ctx_id, "name": t.name, "priority": t.priority}
                                    for t in trace.tasks],
        "isrs": [{"number": i.number, "name": i.name} for i in trace.isrs],
        "markers": [{"id": k.id, "name": k.name} for k in trace.markers],
    }
    return json.dumps(meta, default=lambda o: o.item() if hasattr(o, "item") else str(o))
