"""``crosstrace events`` in chunks: Parquet row groups or CSV appends, memory bounded by a chunk.

The output has the content of the whole-trace export
(``analyzers.export.events_table.write_events``): the event
columns, ``kind_name``, ``ctx_type_name``, ``ctx_name``, ``target_name``, and in the Parquet
schema metadata ``crosstrace`` the tick rate, time unit and final side tables. Two things are only
known at the end of a chunked read, and are handled so:

- the schema metadata (final tasks, ISRs, markers) is written at close, into the file footer
  (``ARROW:schema`` included, so readers see the same schema as for a whole write);
- the per-row names come from the tables known when each chunk was read. Every name used is
  remembered; if one differs from the final tables (a task named after it first ran), the
  recording is read a second time with the final tables (rare: only for chunk readers whose
  tables grow, never for the slicing fallback).
"""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

#: output suffix -> format
SUFFIXES = {".parquet": "parquet", ".csv": "csv"}
_KINDS = [EventKind(k).name for k in range(len(EventKind))]
_CTXS = [CtxType(k).name for k in range(len(CtxType))]


class _Names:
    """Per-row ``ctx_name``/``target_name`` from a chunk's tables, remembering each name used."""

    def __init__(self, tasks: dict[int, str] | None = None, isrs: dict[int, str] | None = None) -> None:
        self.fixed = (tasks, isrs) if tasks is not None and isrs is not None else None
        self.used: dict[tuple[str, int], str | None] = {}
        self.stale = False  #: a name used for one chunk differs from one used for another

    def _lookup(self, table: str, ids: np.ndarray, names: dict[int, str]) -> tuple[list[str | None], Any]:
        uniq, inv = np.unique(ids, return_inverse=True)
        out = []
        for i in uniq.tolist():
            name = names.get(i)
            if self.used.setdefault((table, i), name) != name:
                self.stale = True
            out.append(name)
        return out, inv.ravel()

    def columns(self, trace: Trace) -> tuple[Any, Any]:
        import pyarrow as pa

        tasks, isrs = self.fixed or ({t.ctx_id: t.name for t in trace.tasks},
                                     {i.number: i.name for i in trace.isrs})
        ev = trace.events
        ct, cid = ev["ctx_type"], ev["ctx_id"]
        labels: list[str | None] = [None, "idle"]
        code = np.where(ct == CtxType.IDLE, 1, 0).astype(np.int64)
        for kind, table, names in ((CtxType.TASK, "task", tasks), (CtxType.ISR, "isr", isrs)):
            rows = np.flatnonzero(ct == kind)
            if rows.size:
                got, inv = self._lookup(table, cid[rows], names)
                code[rows] = len(labels) + inv
                labels += got
        ctx = pa.array(labels, pa.string()).take(pa.array(code))
        got, inv = self._lookup("task", ev["target_id"], tasks)
        target = pa.array(got, pa.string()).take(pa.array(inv.astype(np.int64)))
        return ctx, target

    def agree_with(self, trace: Trace) -> bool:
        """Whether every name used is the final tables' (``trace`` = the last chunk)."""
        final = {"task": {t.ctx_id: t.name for t in trace.tasks},
                 "isr": {i.number: i.name for i in trace.isrs}}
        return not self.stale and all(final[t].get(i) == n for (t, i), n in self.used.items())


def chunk_table(trace: Trace, names: _Names) -> Any:
    """One chunk as the export's Arrow table (no ``crosstrace`` metadata)."""
    import pyarrow as pa

    table = trace.to_arrow()
    kinds = pa.array(_KINDS, pa.string()).take(pa.array(np.ascontiguousarray(trace.events["kind"])))
    ctxs = pa.array(_CTXS, pa.string()).take(pa.array(np.ascontiguousarray(trace.events["ctx_type"])))
    ctx_name, target_name = names.columns(trace)
    for name, col in (("kind_name", kinds), ("ctx_type_name", ctxs), ("ctx_name", ctx_name),
                      ("target_name", target_name)):
        table = table.append_column(name, col)
    return table


def crosstrace_metadata(trace: Trace) -> str:
    """The ``crosstrace`` schema metadata (JSON) of the whole-trace export for ``trace``'s meta and
    side tables: built by that export's own code (``analyzers.export.events_table.with_names``) on no rows, so
    the two cannot drift apart."""
    from analyzers.export.events_table import with_names

    empty = trace.select(np.zeros(len(trace), dtype=bool))
    return with_names(empty, empty.to_arrow()).schema.metadata[b"crosstrace"].decode()


class _Sink:
    """Parquet or CSV writer that opens on the first chunk and finishes with the last one."""

    def __init__(self, path: Path, fmt: str) -> None:
        self.path, self.fmt = path, fmt
        self.writer: Any = None
        self.schema: Any = None

    def write(self, table: Any) -> None:
        if self.writer is None:
            self.schema = table.schema
            if self.fmt == "parquet":
                import pyarrow.parquet as pq

                # the schema goes into the footer at close, with the final side tables
                self.writer = pq.ParquetWriter(self.path, table.schema, store_schema=False)
            else:
                import pyarrow.csv as pcsv

                self.writer = pcsv.CSVWriter(self.path, table.schema)
        self.writer.write_table(table)

    def close(self, last: Trace) -> None:
        if self.fmt == "parquet":
            old = {k.decode(): v.decode() for k, v in (self.schema.metadata or {}).items()}
            meta = {**old, "crosstrace": crosstrace_metadata(last)}
            schema = self.schema.with_metadata(meta)
            arrow = base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")
            self.writer.add_key_value_metadata({"ARROW:schema": arrow, **meta})
        self.writer.close()


def _one_pass(chunks: Iterable[Trace], tmp: Path, fmt: str, names: _Names) -> tuple[int, Trace | None]:
    sink = _Sink(tmp, fmt)
    n, last = 0, None
    try:
        for ch in chunks:
            sink.write(chunk_table(ch, names))
            n += len(ch)
            last = ch
    except BaseException:
        if sink.writer is not None:
            sink.writer.close()
        raise
    if last is not None:
        sink.close(last)
    return n, last


def write_events_chunked(open_chunks: Callable[[], Iterable[Trace]], out: Path) -> int:
    """Write the chunks ``open_chunks()`` yields to ``out`` (``.parquet`` or ``.csv``); returns the
    number of events. ``open_chunks`` is called again for a second pass when a per-row name was
    written before the final tables gave it (module docstring). The file appears complete or
    not at all."""
    fmt = SUFFIXES.get(out.suffix.lower())
    if fmt is None:
        raise SystemExit(f"crosstrace: unsupported output {out} (expected .parquet or .csv)")
    tmp = out.with_name(out.name + ".partial")
    try:
        names = _Names()
        n, last = _one_pass(open_chunks(), tmp, fmt, names)
        if last is not None and not names.agree_with(last):
            final = _Names({t.ctx_id: t.name for t in last.tasks}, {i.number: i.name for i in last.isrs})
            n, last = _one_pass(open_chunks(), tmp, fmt, final)
        if last is None:
            raise ValueError("the chunk reader yielded no chunk")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return n


def export_events(path: Path, out: Path, reader_kwargs: dict[str, Any], *,
                  chunk_events: int | None = None) -> int:
    """``crosstrace events PATH -o OUT``: read ``path`` in chunks and write ``out``."""
    from trace_parsers.chunked import is_bounded, iter_trace_chunks

    from . import AUTO_CHUNK_BYTES, EVENTS_CHUNK

    if out.suffix.lower() not in SUFFIXES:
        raise SystemExit(f"crosstrace: unsupported output {out} (expected .parquet or .csv)")
    if not is_bounded(path) and Path(path).is_file() and Path(path).stat().st_size >= AUTO_CHUNK_BYTES:
        print(f"crosstrace: {path}: no chunked reader for this format: read whole, memory not "
              "bounded", file=sys.stderr)
    size = chunk_events or EVENTS_CHUNK
    return write_events_chunked(lambda: iter_trace_chunks(path, chunk_events=size, **reader_kwargs), out)
