"""Per-instance tables spilled to disk as they are made (long recordings, issue 18).

A recording analyzed in chunks (``analyzers.campaign.chunked``) can have tens of millions of
instances: one Arrow table of them (~90 B per row, and a copy when the analyzers' tables are
stacked) is most of ``analyze``'s peak memory. Given a :class:`Spill` (the storage object the driver
makes for one source and passes explicitly: ``store=``), ``make_table``
(``analyzers.metrics.base``) writes each series to a Parquet file in the spill folder as soon as
it is made and returns a :class:`SpilledTable` in place of the in-memory table: the rows, columns
and order of the in-memory table, read back in batches (:meth:`SpilledTable.batches`) by whoever
needs them — the capture's ``instances.parquet`` (``campaign.instances.InstanceSink``) and the
site-based rows the cross-validation keeps. The per-core distributions
(``campaign.tables``) come from the values seen while spilling, written per metric and core to
scratch files beside the tables and summarized from there a block at a time
(:meth:`SpilledTable.core_stats`, only for a recording of several cores), so nothing reads the
whole table back at once and nothing of the instances stays in memory between the analyzers'
finishing and the capture's tables.

Without a store (``store=None``, the default) nothing changes: ordinary tables and arrays in memory.
The store reaches every table and :class:`Parts` of a source through the reducers' constructors and
the analyzers' ``store`` argument (``analyzers.run.analyze_chunks``), never through global state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .table_schema import arrow_schema

#: rows buffered before a spill file gets a row group (many series are a few rows long)
FLUSH_ROWS = 1 << 16
#: rows per batch read back (``campaign.instances.ROW_GROUP``: the file's row groups follow them)
BATCH_ROWS = 1 << 18
#: flushes between two ``release_memory`` calls while a series is written: the Arrow tables and
#: NumPy slices of each flush are freed, but the allocators keep them (measured: 0.59 GB resident
#: writing a 1 GB stream's kernel series, 0.14 GB live) until told to give them back
RELEASE_FLUSHES = 16


@dataclass
class SpilledTable:
    """A per-instance table kept on disk: its parts (Parquet files, in table order)."""

    schema: Any
    parts: list[Path] = field(default_factory=list)
    num_rows: int = 0
    #: (metric, core) -> the values of the instances on that core, in table order, on disk
    #: (:class:`Parts`; series with a core column only)
    core_values: dict[tuple[str, int], list[Any]] = field(default_factory=dict)
    #: times in ticks: ``unit`` "ns" reads as "ticks" (``analyzers.run._times_in_ticks``)
    ticks: bool = False

    @property
    def column_names(self) -> list[str]:
        return list(self.schema.names)

    def batches(self, rows: int = BATCH_ROWS, columns: Sequence[str] | None = None) -> Iterator[Any]:
        """The table's rows in order, as pyarrow Tables of ``rows`` rows (the last one shorter)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        for t in _cut(self.parts, rows, list(columns) if columns else None):
            if self.ticks and "unit" in t.column_names:
                i = t.schema.get_field_index("unit")
                col = pc.if_else(pc.equal(t["unit"], "ns"), pa.scalar("ticks"), t["unit"])
                t = t.set_column(i, t.schema.field(i), col)
            yield t

    def core_array(self, metric: str, core: int) -> np.ndarray:
        """The values of ``metric``'s instances on ``core``, in table order (read back now)."""
        got = [p.concat() for p in self.core_values.get((metric, core), [])]
        return np.concatenate(got) if got else np.zeros(0, np.float64)

    def core_stats(self, metric: str, core: int) -> Any:
        """``summarize(self.core_array(metric, core))``, reading the values a block at a time
        (:mod:`.disk_stats`)."""
        from .disk_stats import summarize_files
        from .stats import summarize

        parts = self.core_values.get((metric, core), [])
        files = [p.path for p in parts]
        if not parts or any(f is None or p.patched for f, p in zip(files, parts)):  # in memory
            return summarize(self.core_array(metric, core))
        return summarize_files(files, files[0].with_suffix(".finite"))

    def read(self, columns: Sequence[str] | None = None) -> Any:
        """The whole table in memory (small tables, tests)."""
        import pyarrow as pa

        got = list(self.batches(columns=columns))
        schema = self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        return pa.concat_tables(got) if got else schema.empty_table()

    @classmethod
    def concat(cls, tables: Sequence[SpilledTable]) -> SpilledTable:
        """The tables stacked (their files, not copies)."""
        out = cls(tables[0].schema)
        for t in tables:
            out.parts += t.parts
            out.num_rows += t.num_rows
            for k, v in t.core_values.items():
                out.core_values.setdefault(k, []).extend(v)
            out.ticks = out.ticks or t.ticks
        return out


class Spill:
    """The spill folder of one source; :meth:`table` is ``make_table`` writing to it."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._n = itertools.count()

    def scratch(self, prefix: str, suffix: str) -> Path:
        """A new file name in the spill folder (:class:`Parts`)."""
        return self.folder / f"{prefix}-{next(self._n):05d}{suffix}"

    def table(self, series: Sequence[Any], source: str, in_memory: Any) -> SpilledTable:
        """``in_memory(series, source)`` (``make_table``) one series at a time, into one file."""
        out = SpilledTable(arrow_schema())
        return self._write(_series_tables(series, source, in_memory, out, self), out)

    def batched(self, batches: Iterable[Any], source: str, in_memory: Any) -> tuple[SpilledTable, Any]:
        """One series given as consecutive batches (``Series`` of the same metric, each a slice
        of it): its table, written batch by batch, and ``summarize`` of its values, computed
        from a scratch file of them (:mod:`.disk_stats`); the series is never whole in memory.
        Equal to :meth:`table` and ``summarize`` of the batches joined."""
        from .disk_stats import summarize_files

        out = SpilledTable(arrow_schema())
        values = self.scratch("values", ".f64")
        values.touch()
        try:
            self._write(_batch_tables(batches, source, in_memory, out, values, self), out)
            return out, summarize_files([values], values.with_suffix(".finite"))
        finally:
            values.unlink(missing_ok=True)

    def _write(self, tables: Iterator[Any], out: SpilledTable) -> SpilledTable:
        import pyarrow.parquet as pq

        from .._memory import release_memory

        schema = out.schema
        path = self.folder / f"part-{next(self._n):05d}.parquet"
        writer = None
        pending: list[Any] = []
        rows = flushed = 0
        try:
            for t in tables:
                pending.append(t)
                rows += t.num_rows
                if rows >= FLUSH_ROWS:
                    writer = _flush(writer, path, schema, pending)
                    pending, rows, flushed = [], 0, flushed + 1
                    if flushed % RELEASE_FLUSHES == 0:
                        release_memory()
            if pending or writer is None:
                writer = _flush(writer, path, schema, pending)
        finally:
            if writer is not None:
                writer.close()
        out.parts.append(path)
        out.num_rows = pq.ParquetFile(path).metadata.num_rows
        return out


def _cut(paths: Sequence[Path], rows: int, columns: list[str] | None) -> Iterator[Any]:
    """The rows of the spill files, in order, in tables of ``rows`` rows (the last one shorter),
    whatever the files' boundaries: ``instances.parquet``'s row groups do not depend on how the
    analyzers grouped their series into files. Read row group by row group:
    ``ParquetFile.iter_batches`` keeps what it has read until the file is done (~45 B per row of a
    20 M-row file)."""
    import pyarrow as pa

    have: list[Any] = []
    n = 0
    for t in _row_groups(paths, columns):
        have.append(t)
        n += t.num_rows
        while n >= rows:
            whole = pa.concat_tables(have)
            yield whole.slice(0, rows)
            rest = whole.slice(rows)
            have, n = ([rest] if rest.num_rows else []), rest.num_rows
    if n:
        yield pa.concat_tables(have)


def _row_groups(paths: Sequence[Path], columns: list[str] | None) -> Iterator[Any]:
    import pyarrow.parquet as pq

    for path in paths:
        f = pq.ParquetFile(path)
        try:
            for g in range(f.num_row_groups):
                yield f.read_row_group(g, columns=columns)
        finally:
            f.close()


def _series_tables(series: Sequence[Any], source: str, in_memory: Any, out: SpilledTable, store: Spill,
                   first: int = 0) -> Iterator[Any]:
    """Each series' rows as tables of at most :data:`FLUSH_ROWS` rows (the Arrow copy of a
    series of millions of instances is made a slice at a time), ``instance`` counted on (from
    ``first``: a batch of a longer series)."""
    import pyarrow as pa

    for s in series:
        n = len(s)
        if not n:
            continue
        _core_values(out, s, store)
        for lo in range(0, n, FLUSH_ROWS):
            t = in_memory([_slice(s, lo, lo + FLUSH_ROWS)], source)
            if lo or first:
                i = t.schema.get_field_index("instance")
                count = pa.array(np.arange(first + lo, first + lo + t.num_rows, dtype=np.int64))
                t = t.set_column(i, t.schema.field(i), count)
            yield t


def _batch_tables(batches: Iterable[Any], source: str, in_memory: Any, out: SpilledTable,
                  values: Path, store: Spill) -> Iterator[Any]:
    """:func:`_series_tables` of the batches of one series, numbered on across them; their
    values appended to ``values``."""
    at = 0
    for s in batches:
        if not len(s):
            continue
        with open(values, "ab") as f:
            f.write(np.ascontiguousarray(s.value, dtype=np.float64).tobytes())
        yield from _series_tables([s], source, in_memory, out, store, first=at)
        at += len(s)


def _slice(s: Any, lo: int, hi: int) -> Any:
    """Series ``s`` with rows ``lo:hi`` (the whole series when it has no more)."""
    if lo == 0 and len(s) <= hi:
        return s
    cut = {k: np.asarray(getattr(s, k))[lo:hi] for k in _ROW_FIELDS if getattr(s, k) is not None}
    return dataclasses.replace(s, **cut)


#: the per-instance fields of ``Series``
_ROW_FIELDS = ("start_ts", "end_ts", "value", "start_idx", "end_idx", "core")


def _flush(writer: Any, path: Path, schema: Any, tables: list[Any]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if writer is None:  # a scratch file read once: no compression, no statistics
        writer = pq.ParquetWriter(path, schema, compression="none", write_statistics=False)
    t = pa.concat_tables(tables) if tables else schema.empty_table()
    writer.write_table(t, row_group_size=max(t.num_rows, 1))
    return writer


def _core_values(out: SpilledTable, s: Any, store: Spill) -> None:
    """The values of series ``s`` per core, each core's to its own scratch file (8 bytes per
    instance on disk, none in memory)."""
    if s.core is None:
        return
    core = np.asarray(s.core, dtype=np.int64)
    value = np.asarray(s.value, dtype=np.float64)
    for c in np.unique(core[core >= 0]).tolist():
        have = out.core_values.setdefault((s.metric, int(c)), [])
        if not have:  # one file per metric and core of a table: its series come in table order
            have.append(Parts(dtype=np.float64, store=store))
        have[-1].append(value[core == c])


@contextlib.contextmanager
def spill_folder(parent: Path | None = None) -> Iterator[Path]:
    """A temporary folder for spilled tables under ``parent`` (the system's temporary folder when
    None), removed on the way out: whatever reads the tables spilled there must do so inside."""
    folder = Path(tempfile.mkdtemp(prefix=".crosstrace-spill-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def is_spilled(table: Any) -> bool:
    return isinstance(table, SpilledTable)


#: columns read back at a time by :meth:`Parts.batches` (an ISR entry's 10 int64: 20 MB a batch; a
#: finishing step makes a few copies of a batch: at 1 Mi columns the kernel series peaked at 0.51 GB)
BATCH = 1 << 18


class Parts:
    """Arrays stacked along their last axis: 1-D arrays of ``dtype`` (``width`` None) or
    ``(width, n)`` arrays. ``len()`` is the number of columns (elements) appended so far."""

    def __init__(self, width: int | None = None, dtype: Any = np.int64, store: Spill | None = None) -> None:
        self.width = width
        self.dtype = np.dtype(dtype)
        self.n = 0
        self._mem: list[np.ndarray] = []
        self._sizes: list[int] = []  #: columns of each block written to the file
        self._patches: list[tuple[np.ndarray, Any, int | None]] = []
        self._path: Path | None = store.scratch("parts", ".bin") if store is not None else None

    def __len__(self) -> int:
        return self.n

    @property
    def on_disk(self) -> bool:
        return self._path is not None

    @property
    def path(self) -> Path | None:
        """The scratch file (the blocks end to end, patches not applied), None in memory."""
        return self._path

    @property
    def patched(self) -> bool:
        """Some patch waits to be applied on read-back (the scratch file alone is not the array)."""
        return bool(self._patches)

    def append(self, a: np.ndarray) -> int:
        """Add ``a`` (a copy is kept, never ``a`` itself); returns the index of its first column."""
        a = np.asarray(a, dtype=self.dtype)
        want = 1 if self.width is None else 2
        if a.ndim != want or (self.width is not None and a.shape[0] != self.width):
            raise ValueError(f"Parts(width={self.width}) cannot take an array of shape {a.shape}")
        first, m = self.n, a.shape[-1]
        if not m:
            return first
        if self._path is None:
            self._mem.append(a.copy())
        else:
            with open(self._path, "ab") as f:
                f.write(np.ascontiguousarray(a).tobytes())
            self._sizes.append(m)
        self.n += m
        return first

    def patch(self, cols: np.ndarray, value: Any, row: int | None = None) -> None:
        """Set ``value`` at columns ``cols`` (indices among all appended so far) of ``row`` (all
        of a 1-D array), once the array is read back."""
        cols = np.asarray(cols, dtype=np.int64)
        if cols.size:
            if cols.min() < 0 or cols.max() >= self.n:
                raise IndexError(f"patch outside the {self.n} columns appended")
            self._patches.append((cols.copy(), np.array(value, dtype=self.dtype).copy(), row))

    def concat(self, rows: list[int] | None = None, cols: tuple[int, int] | None = None) -> np.ndarray:
        """Everything appended, patched: a new array (``(width, n)`` or ``(n,)``); of a
        ``(width, n)`` array only ``rows`` when given (``(len(rows), n)``), and only the columns
        ``cols = (lo, hi)`` when given: what is not needed is not read into memory."""
        if rows is not None and self.width is None:
            raise ValueError("rows= selects rows of a (width, n) Parts")
        pick = list(range(self.width)) if rows is None and self.width is not None else rows
        lo, hi = (0, self.n) if cols is None else (max(0, cols[0]), min(self.n, cols[1]))
        hi = max(lo, hi)
        shape = (hi - lo,) if pick is None else (len(pick), hi - lo)
        if self._path is None:
            mem = self._mem if pick is None else [a[pick] for a in self._mem]
            out = np.concatenate(mem, axis=-1)[..., lo:hi] if mem else np.zeros(shape, self.dtype)
            out = out.copy() if cols is not None else out
        else:
            out = self._read(shape, pick, lo, hi)
        for at, value, row in self._patches:
            if cols is not None:
                sel = (at >= lo) & (at < hi)
                at, value = at[sel] - lo, (value[sel] if value.ndim else value)
            if row is None:
                out[at] = value
            elif row in pick:  # type: ignore[operator]
                out[pick.index(row), at] = value  # type: ignore[union-attr]
        return out

    def batches(self, rows: list[int] | None = None) -> Iterator[np.ndarray]:
        """:meth:`concat` (``rows``) :data:`BATCH` columns at a time: what a finishing step reads
        instead of the whole array (in memory: the whole array, one batch)."""
        step = BATCH if self._path is not None else max(self.n, 1)
        for lo in range(0, self.n, step):
            yield self.concat(rows=rows, cols=(lo, lo + step))

    def _read(self, shape: tuple[int, ...], pick: list[int] | None, lo: int, hi: int) -> np.ndarray:
        out = np.empty(shape, self.dtype)
        if hi <= lo:
            return out
        w, size = self.width or 1, self.dtype.itemsize
        start = offset = 0  # first column and byte offset of each block
        path = self._path
        assert path is not None
        with open(path, "rb") as f:
            for m in self._sizes:
                a, b = max(lo, start), min(hi, start + m)
                if a < b:
                    for i, r in enumerate([0] if pick is None else pick):
                        f.seek(offset + (r * m + a - start) * size)
                        dst = out[a - lo: b - lo] if pick is None else out[i, a - lo: b - lo]
                        if f.readinto(dst.view(np.uint8)) != dst.nbytes:  # type: ignore[arg-type]
                            raise OSError(f"{self._path}: the scratch file is shorter than was written")
                start, offset = start + m, offset + w * m * size
                if start >= hi:
                    break
        return out

    def clear(self) -> None:
        """Let go of everything (memory and scratch file)."""
        self._mem, self._sizes, self._patches, self.n = [], [], [], 0
        if self._path is not None:
            self._path.unlink(missing_ok=True)


# -- lookups over appended parts (chunked analyzers) ----------------------------------------
def append_before(parts: Parts, rows: np.ndarray, before: int | None,
                  keys: tuple[int, ...] = (0,)) -> np.ndarray:
    """Append to ``parts`` the columns of ``rows`` whose row 0 is below ``before`` (all when
    None), sorted by the rows ``keys`` (the first is the primary key); return the other columns,
    held back while a row that must come before them may still be found. Rows written this way
    chunk after chunk come back from ``parts`` in order."""
    done = np.ones(rows.shape[1], bool) if before is None else rows[0] < before
    out = rows[:, done]
    parts.append(out[:, np.lexsort(tuple(out[k] for k in reversed(keys)))])
    return rows[:, ~done]


def lookup_sorted(keys: np.ndarray, pairs: np.ndarray, default: int = -1) -> np.ndarray:
    """``pairs[1]`` where ``pairs[0] == keys`` (unique keys, ``pairs`` sorted by them),
    ``default`` where absent."""
    keys = np.asarray(keys, dtype=np.int64)
    if not pairs.shape[1]:
        return np.full(keys.size, default, np.int64)
    k, v = pairs[0], pairs[1]
    i = np.minimum(np.searchsorted(k, keys), k.size - 1)
    return np.where(k[i] == keys, v[i], default)


class SortedLookup:
    """:func:`lookup_sorted` in a ``(width, n)`` :class:`Parts` whose row ``key`` holds unique keys
    in ascending order: the Parts is read back :data:`BATCH` columns at a time, only the batches
    the keys asked fall in (in memory: the whole array, one batch)."""

    def __init__(self, parts: Parts, key: int = 0, value: int = 1) -> None:
        self.parts, self.key, self.value = parts, key, value
        self.step = BATCH if parts.on_disk else max(len(parts), 1)
        firsts = [parts.concat(rows=[key], cols=(lo, lo + 1))[0] for lo in range(0, len(parts), self.step)]
        self.firsts = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)

    def __call__(self, keys: np.ndarray, default: int = -1) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(keys.size, default, np.int64)
        at = np.searchsorted(self.firsts, keys, side="right") - 1  # the batch each key falls in
        for b in np.unique(at[at >= 0]).tolist():
            sel = np.flatnonzero(at == b)
            pairs = self.parts.concat(rows=[self.key, self.value], cols=(b * self.step, (b + 1) * self.step))
            out[sel] = lookup_sorted(keys[sel], pairs, default)
        return out
