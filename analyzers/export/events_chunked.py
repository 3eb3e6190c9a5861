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

Memory: a row group of ``EVENTS_CHUNK`` events (one per ``--chunk-events``) is gathered from
reader chunks of at most ``READ_EVENTS`` events; what is held is the row group's event columns
(51 B/event, buffers reused from one row group to the next) and name columns (~35 B/event), the
Parquet writer's work while it encodes them (~25 B/event: the dictionary it tries on the
timestamp and offset columns), one reader chunk and the reader's block, plus the start-up
(~60 MB). Each row group is written as one table with contiguous event columns, so the file has
the bytes a write of the same rows in one table gives, whatever the reader's chunk size. Freed
memory is handed back around each write (:func:`release_memory`): the Arrow pool (mimalloc) and
the C heap (NumPy, the Rust core) otherwise each keep what the other could use. Nothing is kept
per chunk; per row group only the Parquet footer's entry (~13 KB). Measured (whole process,
``/usr/bin/time``, synthetic SystemView streams of ``bench.systemview.write_synthetic``):
290 MB peak at 1 Mi events per row group for 100 MB (23 M events), 1 GB (225 M) and 4 GB (900 M,
859 row groups) alike; 225 MB at 256 Ki, 405 MB at 2 Mi (~175 MB + ~110 B per row-group event).
"""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from trace_parsers.model import EVENT_COLUMNS, VALUE_NULL, CtxType, EventKind, Trace

from .._memory import release_memory

#: output suffix -> format
SUFFIXES = {".parquet": "parquet", ".csv": "csv"}
_KINDS = [EventKind(k).name for k in range(len(EventKind))]
_CTXS = [CtxType(k).name for k in range(len(CtxType))]
_NAME_COLUMNS = ("kind_name", "ctx_type_name", "ctx_name", "target_name")
#: events per chunk asked of the reader: a row group is gathered from chunks of this size, so
#: the reader's structured chunk (51 B/event) stays small next to the row group's columns
READ_EVENTS = 1 << 18
#: rows per piece of the name columns: a multiple of Parquet's write batch (1024 rows), so the
#: pages are cut where a one-piece column cuts them (same file bytes)
PIECE = 1 << 16

#: recordings at least this large (bytes) without a chunk reader get a "memory not bounded" note
AUTO_CHUNK_BYTES = 256 << 20
#: events per Parquet row group (CSV append) of ``crosstrace events``, gathered from reader chunks
#: of at most ``events.READ_EVENTS``; peak ~175 MB + ~110 B per row-group event, the same for any
#: recording length (measured: 290 MB at 1 Mi for 100 MB, 1 GB and 4 GB SystemView streams)
EVENTS_CHUNK = 1 << 20


class _Names:
    """Per-row ``ctx_name``/``target_name`` from a chunk's tables, remembering each name used."""

    def __init__(self, tasks: dict[int, str] | None = None, isrs: dict[int, str] | None = None) -> None:
        self.fixed = (tasks, isrs) if tasks is not None and isrs is not None else None
        self.used: dict[tuple[str, int], str | None] = {}
        self.stale = False  #: a name used for one chunk differs from one used for another

    def _lookup(self, table: str, ids: np.ndarray, names: dict[int, str]) -> tuple[list[str | None], Any]:
        uniq, inv = _unique(ids)
        out = []
        for i in uniq.tolist():
            name = names.get(i)
            if self.used.setdefault((table, i), name) != name:
                self.stale = True
            out.append(name)
        return out, inv.ravel()

    def columns(self, trace: Trace) -> tuple[Any, Any]:
        """``ctx_name`` and ``target_name``, built a piece of rows at a time (module docstring)."""
        import pyarrow as pa

        tasks, isrs = self.fixed or ({t.ctx_id: t.name for t in trace.tasks},
                                     {i.number: i.name for i in trace.isrs})
        ev = trace.events
        ctx, target = [], []
        for a, b in _pieces(len(ev)):
            ct, cid = ev["ctx_type"][a:b], ev["ctx_id"][a:b]
            labels: list[str | None] = [None, "idle"]
            code = (ct == CtxType.IDLE).astype(np.int32)
            for kind, table, names in ((CtxType.TASK, "task", tasks), (CtxType.ISR, "isr", isrs)):
                rows = np.flatnonzero(ct == kind)
                if rows.size:
                    got, inv = self._lookup(table, cid[rows], names)
                    code[rows] = len(labels) + inv
                    labels += got
            ctx.append(_coded(labels, code))
            got, inv = self._lookup("task", ev["target_id"][a:b], tasks)
            target.append(_coded(got, inv))
        return pa.chunked_array(ctx, pa.string()), pa.chunked_array(target, pa.string())

    def agree_with(self, trace: Trace) -> bool:
        """Whether every name used is the final tables' (``trace`` = the last chunk)."""
        final = {"task": {t.ctx_id: t.name for t in trace.tasks},
                 "isr": {i.number: i.name for i in trace.isrs}}
        return not self.stale and all(final[t].get(i) == n for (t, i), n in self.used.items())


def _unique(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` without its sort when the ids span a small range
    (task indices, IRQ numbers: the usual case), in linear time."""
    if not len(ids):
        return np.unique(ids, return_inverse=True)
    lo, hi = int(ids.min()), int(ids.max())
    if hi - lo > 4 * len(ids) + 1024:
        uniq, inv = np.unique(ids, return_inverse=True)
        return uniq, inv.ravel()
    off = ids.astype(np.int64) - lo
    present = np.zeros(hi - lo + 1, dtype=bool)
    present[off] = True
    uniq = np.flatnonzero(present)
    index = np.cumsum(present, dtype=np.int64) - 1
    return (uniq + lo).astype(ids.dtype), index[off]


def _coded(labels: list[str | None], codes: np.ndarray) -> Any:
    """``labels[codes]`` as an Arrow string array. Built from buffers: ``pa.array`` on a list or
    an ndarray imports pandas (~50 MB of memory for nothing)."""
    import pyarrow as pa

    data = [b"" if s is None else s.encode() for s in labels]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum(np.array([len(d) for d in data], dtype=np.int32), out=offsets[1:])
    valid = np.array([s is not None for s in labels], dtype=bool)
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    dictionary = pa.Array.from_buffers(pa.string(), len(data), [validity, pa.py_buffer(offsets),
                                                                pa.py_buffer(b"".join(data))])
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    return dictionary.take(pa.Array.from_buffers(pa.int32(), len(codes), [None, pa.py_buffer(codes)]))


def _pieces(n: int) -> list[tuple[int, int]]:
    """Row ranges of at most ``PIECE`` rows covering ``n`` rows (one empty range for none)."""
    return [(a, min(a + PIECE, n)) for a in range(0, max(n, 1), PIECE)]


def name_columns(trace: Trace, names: _Names) -> dict[str, Any]:
    """The export's name columns of one chunk (``kind_name``, ``ctx_type_name``, ``ctx_name``,
    ``target_name``) as Arrow string columns in pieces of ``PIECE`` rows."""
    import pyarrow as pa

    ev = trace.events
    cols = {}
    for name, field, labels in (("kind_name", "kind", _KINDS), ("ctx_type_name", "ctx_type", _CTXS)):
        cols[name] = pa.chunked_array([_coded(labels, ev[field][a:b]) for a, b in _pieces(len(ev))],
                                      pa.string())
    cols["ctx_name"], cols["target_name"] = names.columns(trace)
    return cols


def _event_dtypes() -> dict[str, np.dtype]:
    """Column -> NumPy dtype of its Arrow type (as ``Trace.to_arrow`` converts it)."""
    import pyarrow as pa

    return {c.name: np.dtype(getattr(pa, c.arrow)().to_pandas_dtype()) for c in EVENT_COLUMNS}


class _RowGroups:
    """The chunks' rows gathered into row groups of ``rows`` events, each written as one table.

    The event columns go into contiguous buffers allocated once (``Trace.to_arrow``'s columns,
    built in place: 51 B/event, reused from one row group to the next), the name columns are
    kept as the chunks' pieces (~35 B/event). A row group's table is what ``Trace.to_arrow``
    plus :func:`name_columns` give for its rows, so the file is the one whole tables write."""

    def __init__(self, sink: _Sink, rows: int) -> None:
        self.sink, self.rows = sink, rows
        self.cols: dict[str, np.ndarray] = {}
        self.names: dict[str, list[Any]] = {}
        self.fill = 0
        self.written = 0  #: row groups written

    def _reserve(self, n: int) -> None:
        """Buffers for at least ``n`` rows (grown up to ``rows``: a small recording with a large
        row group does not allocate the whole row group)."""
        have = len(next(iter(self.cols.values()))) if self.cols else 0
        if n <= have:
            return
        size = min(self.rows, max(n, 2 * have))
        old, fill = self.cols, self.fill
        self.cols = {k: np.empty(size, dtype=t) for k, t in _event_dtypes().items()}
        for k, buf in old.items():
            self.cols[k][:fill] = buf[:fill]

    def add(self, trace: Trace, names: _Names) -> None:
        ev = trace.events
        named = name_columns(trace, names)
        i = 0
        while i < len(ev):
            m = min(self.rows - self.fill, len(ev) - i)
            self._reserve(self.fill + m)
            for k, buf in self.cols.items():
                buf[self.fill:self.fill + m] = ev[k][i:i + m]
            for k, col in named.items():
                self.names.setdefault(k, []).extend(col.slice(i, m).chunks)
            self.fill, i = self.fill + m, i + m
            if self.fill == self.rows:
                self.flush()

    def flush(self) -> None:
        """Write the rows gathered (an empty table if no row was ever written: the schema)."""
        if self.fill or not self.written:
            table = self._table()
            release_memory()
            self.sink.write(table)
            del table
            self.written += 1
            release_memory()
        self.names.clear()
        self.fill = 0

    def _table(self) -> Any:
        import pyarrow as pa

        from trace_parsers.model import arrow_schema

        n = self.fill
        arrays = []
        for c in EVENT_COLUMNS:  # as Trace.to_arrow, on the buffers
            col = self.cols[c.name][:n] if self.cols else np.empty(0, _event_dtypes()[c.name])
            validity = None
            if c.nullable:
                null = col == VALUE_NULL
                if null.any():
                    validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
            arrays.append(pa.Array.from_buffers(getattr(pa, c.arrow)(), n, [validity, pa.py_buffer(col)]))
        table = pa.Table.from_arrays(arrays, schema=arrow_schema())
        for k in _NAME_COLUMNS:
            table = table.append_column(k, pa.chunked_array(self.names.get(k, []), pa.string()))
        return table


def crosstrace_metadata(trace: Trace) -> str:
    """The ``crosstrace`` schema metadata (JSON) of the whole-trace export for ``trace``'s meta and
    side tables: built by that export's own code (``analyzers.export.events_table.crosstrace_json``,
    which ``with_names`` uses), so the two cannot drift apart. It builds no name column (those of
    ``with_names`` come from ``pa.array`` on lists, which imports pandas: ~47 MB)."""
    from .events_table import crosstrace_json

    return crosstrace_json(trace)


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


def _one_pass(chunks: Iterable[Trace], tmp: Path, fmt: str, names: _Names,
              rows: int) -> tuple[int, Trace | None]:
    sink = _Sink(tmp, fmt)
    groups = _RowGroups(sink, rows)
    n, last = 0, None
    try:
        for ch in chunks:
            groups.add(ch, names)
            n += len(ch)
            last = ch.select(np.zeros(len(ch), dtype=bool))  # its tables, not its events
            del ch  # free the chunk's events before the reader builds the next chunk
        if last is not None:
            groups.flush()
    except BaseException:
        if sink.writer is not None:
            sink.writer.close()
        raise
    del groups  # the buffers, before the footer is built
    release_memory()
    if last is not None:
        sink.close(last)
    return n, last


def write_events_chunked(open_chunks: Callable[[], Iterable[Trace]], out: Path, *,
                         rows: int | None = None) -> int:
    """Write the chunks ``open_chunks()`` yields to ``out`` (``.parquet`` or ``.csv``) in row
    groups (CSV appends) of ``rows`` events (default ``EVENTS_CHUNK``; the last one shorter),
    whatever the chunks' sizes; returns the number of events. ``open_chunks`` is called again
    for a second pass when a per-row name was written before the final tables gave it (module
    docstring). The file appears complete or not at all."""
    fmt = SUFFIXES.get(out.suffix.lower())
    if fmt is None:
        raise SystemExit(f"crosstrace: unsupported output {out} (expected .parquet or .csv)")

    size = EVENTS_CHUNK if rows is None else rows
    if size < 1:
        raise ValueError(f"rows must be at least 1, got {rows!r}")
    tmp = out.with_name(out.name + ".partial")
    try:
        names = _Names()
        n, last = _one_pass(open_chunks(), tmp, fmt, names, size)
        if last is not None and not names.agree_with(last):
            final = _Names({t.ctx_id: t.name for t in last.tasks}, {i.number: i.name for i in last.isrs})
            n, last = _one_pass(open_chunks(), tmp, fmt, final, size)
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


    if out.suffix.lower() not in SUFFIXES:
        raise SystemExit(f"crosstrace: unsupported output {out} (expected .parquet or .csv)")
    if not is_bounded(path) and Path(path).is_file() and Path(path).stat().st_size >= AUTO_CHUNK_BYTES:
        print(f"crosstrace: {path}: no chunked reader for this format: read whole, memory not "
              "bounded", file=sys.stderr)
    size = chunk_events or EVENTS_CHUNK
    read = min(size, READ_EVENTS)
    return write_events_chunked(lambda: iter_trace_chunks(path, chunk_events=read, **reader_kwargs), out,
                                rows=size)
