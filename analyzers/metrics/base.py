"""Shared shape of every analyzer's output: per-instance rows and per-metric summaries.

Each analyzer returns :class:`Result` ``(table, summary)``: ``table`` is a pyarrow Table with the
columns of ``table_schema.INSTANCE_COLUMNS`` (one row per measured instance, every metric of the analyzer
stacked, ``metric`` holding the stable dotted id), ``summary`` a frozen dataclass deriving from
:class:`Summary`.  Site-based instances remember which site occurrences they span
(``start_site``/``start_idx``, ``end_site``/``end_idx``), which is how cross-validation pairs a
trace instance with the same instance seen on the pins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..sites import SiteEvents
from .stats import Drop, DropLog, GapDrops, Stats, drop_gap_instances, summarize
from .table_schema import arrow_schema

_NONE = np.iinfo(np.int64).max

@dataclass(frozen=True)
class Series:
    """The instances of one metric from one source."""

    metric: str
    unit: str
    start_ts: np.ndarray
    end_ts: np.ndarray
    value: np.ndarray
    start_site: str = ""
    start_idx: np.ndarray | None = None
    end_site: str = ""
    end_idx: np.ndarray | None = None
    core: np.ndarray | None = None  #: per instance, multi-core kernel metrics only

    def __len__(self) -> int:
        return int(np.asarray(self.value).size)


def make_table(series: Sequence[Series], source: str, store: Any = None) -> Any:
    """Stack ``series`` into one per-instance Arrow table (given a ``store``, a
    :class:`~analyzers.metrics.spill.Spill`: written to disk series by series, a
    :class:`~analyzers.metrics.spill.SpilledTable`)."""
    if store is not None:
        return store.table(series, source, _stack)
    return _stack(series, source)


def _stack(series: Sequence[Series], source: str) -> Any:
    import pyarrow as pa

    series = [s for s in series if len(s)]
    n = np.array([len(s) for s in series], dtype=np.int64)
    # string columns are constant per series: one value per series, repeated by `take`
    rep = pa.array(np.repeat(np.arange(n.size, dtype=np.int64), n))

    def strings(values: list[str]) -> Any:
        return pa.array(values, pa.string()).take(rep)

    def ints(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def site_idx(idx: np.ndarray | None, k: int) -> np.ndarray:
        return np.full(k, -1, np.int64) if idx is None else np.asarray(idx, dtype=np.int64)

    cols: dict[str, Any] = {
        "metric": strings([s.metric for s in series]),
        "source": strings([source] * n.size),
        "instance": ints([np.arange(k, dtype=np.int64) for k in n.tolist()]),
        "start_ts": ints([np.asarray(s.start_ts, dtype=np.int64) for s in series]),
        "end_ts": ints([np.asarray(s.end_ts, dtype=np.int64) for s in series]),
        "value": (
            np.concatenate([np.asarray(s.value, dtype=np.float64) for s in series])
            if series
            else np.zeros(0, np.float64)
        ),
        "unit": strings([s.unit for s in series]),
        "start_site": strings([s.start_site for s in series]),
        "start_idx": ints([site_idx(s.start_idx, k) for s, k in zip(series, n.tolist())]),
        "end_site": strings([s.end_site for s in series]),
        "end_idx": ints([site_idx(s.end_idx, k) for s, k in zip(series, n.tolist())]),
        "core": ints([site_idx(s.core, k) for s, k in zip(series, n.tolist())]),
    }
    schema = arrow_schema()
    arrays = []
    for f in schema:
        c = cols[f.name]
        arrays.append(c if isinstance(c, pa.Array) else pa.array(c, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class Summary:
    """What every analyzer summary holds: statistics per metric id, scalar facts, exclusions."""

    source: str
    stats: dict[str, Stats] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    scalars: dict[str, tuple[float, str]] = field(default_factory=dict)  #: metric id -> (value, unit)
    excluded: int = 0  #: instances excluded (OVERFLOW gaps, missed activations, ...)
    unmatched: int = 0  #: start events without their end event
    drop_log: tuple[Drop, ...] = ()


class Result(NamedTuple):
    table: Any  #: pyarrow.Table with the columns of table_schema.INSTANCE_COLUMNS
    summary: Any  #: a frozen Summary subclass


def pair_next(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Pair each ``a[i]`` with the first ``b[j] >= a[i]`` that comes before ``a[i+1]``.

    Returns ``(ia, jb, unmatched)``: indices of the pairs and the number of ``a`` without a ``b``.

    >>> ia, jb, u = pair_next(np.array([0, 10, 20]), np.array([3, 25]))
    >>> ia.tolist(), jb.tolist(), u
    ([0, 2], [0, 1], 1)
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.size == 0 or b.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), int(a.size)
    j = np.searchsorted(b, a, side="left")
    ok = j < b.size
    nxt = np.append(a[1:], np.iinfo(np.int64).max)
    jj = np.minimum(j, b.size - 1)
    ok &= b[jj] < nxt
    ia = np.flatnonzero(ok)
    return ia.astype(np.int64), j[ok].astype(np.int64), int(a.size - ia.size)


def site_interval(metric: str, se: SiteEvents, a: str, b: str, drop_log: DropLog) -> tuple[Series, int]:
    """Intervals from each occurrence of site ``a`` to the next occurrence of site ``b``.

    Instances across a data-loss gap are dropped (and logged); returns the series and the number
    of ``a`` occurrences without a ``b``.
    """
    ta, tb = se.times(a), se.times(b)
    ia, jb, unmatched = pair_next(ta, tb)
    drop_log.add(metric, "no_end_event", count=unmatched)
    start, end = ta[ia], tb[jb]
    keep = drop_gap_instances(metric, start, end, se.gaps, drop_log)
    ia, jb = ia[keep], jb[keep]
    start, end = start[keep], end[keep]
    return Series(metric, "ns", start, end, (end - start).astype(np.float64), a, ia, b, jb), unmatched


def site_interval_batches(metric: str, se: SiteEvents, a: str, b: str, drop_log: DropLog) -> Iterator[Series]:
    """:func:`site_interval` a block of ``a`` occurrences at a time (:func:`pair_next_blocks`):
    consecutive batches of the same series, logging the same drops, never reading either site
    whole (:meth:`SiteEvents.time_blocks`)."""
    drops, seen, matched = GapDrops(metric, se.gaps), 0, 0
    for ia, jb, start, end, n_a in pair_next_blocks(se.time_blocks(a), se.time_blocks(b)):
        keep = drops.keep(start, end)
        start, end = start[keep], end[keep]
        yield Series(metric, "ns", start, end, (end - start).astype(np.float64), a, ia[keep], b, jb[keep])
        seen, matched = seen + n_a, matched + ia.size
    drop_log.add(metric, "no_end_event", count=seen - matched)
    drops.log(drop_log)


def pair_next_blocks(a_blocks: Iterable[np.ndarray], b_blocks: Iterable[np.ndarray]
                     ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]]:
    """:func:`pair_next` of two sorted arrays given as consecutive blocks, one block of ``a`` at
    a time: per block, ``(ia, jb, a[ia], b[jb], block size)`` with ``ia``/``jb`` indices into the
    whole arrays. Holds one block of each (and the block of ``a`` after it).

    >>> got = list(pair_next_blocks([np.array([0, 10]), np.array([20])], [np.array([3]), np.array([25])]))
    >>> [(ia.tolist(), jb.tolist(), n) for ia, jb, _, _, n in got]
    [([0], [0], 2), ([2], [1], 1)]
    """
    first, seen = _FirstAtOrAfter(iter(b_blocks)), 0
    for a, nxt in with_next(a_blocks):
        a = np.asarray(a, dtype=np.int64)
        j, bv = first(a)
        ok = bv < nxt  # bv is int64 max where no b is at or after
        ia = np.flatnonzero(ok)
        yield ia + seen, j[ok], a[ok], bv[ok], int(a.size)
        seen += a.size


def with_next(blocks: Iterable[Any], key: Callable[[Any], np.ndarray] | None = None
              ) -> Iterator[tuple[Any, np.ndarray]]:
    """Each block whose times (``key(block)``, the block itself by default) are not empty, with
    each time's next time: of this block, or the next block's first (int64 max after the last).

    >>> [nxt.tolist() for _, nxt in with_next([np.array([1, 2]), np.array([], np.int64), np.array([5])])]
    [[2, 5], [9223372036854775807]]
    """
    times = key or (lambda block: block)
    prev = None
    for cur in blocks:
        if not len(times(cur)):
            continue
        if prev is not None:
            yield prev, np.append(times(prev)[1:], times(cur)[0])
        prev = cur
    if prev is not None:
        yield prev, np.append(times(prev)[1:], _NONE)


class _FirstAtOrAfter:
    """For ascending keys asked in ascending order across calls, the first value ``>=`` each in a
    sorted array read block by block: its index in the whole array and the value (-1 and int64
    max when none). Holds one block: a block is let go once a key is past its last value."""

    def __init__(self, blocks: Iterator[np.ndarray]) -> None:
        self.blocks, self.buf, self.off = blocks, np.zeros(0, np.int64), 0

    def __call__(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        j = np.full(keys.size, -1, np.int64)
        val = np.full(keys.size, _NONE, np.int64)
        i = 0
        while i < keys.size:
            if not self.buf.size or self.buf[-1] < keys[i]:
                if not self._advance():
                    break
                continue
            k = int(np.searchsorted(keys, self.buf[-1], side="right"))
            pos = np.searchsorted(self.buf, keys[i:k], side="left")
            j[i:k], val[i:k] = pos + self.off, self.buf[pos]
            i = k
        return j, val

    def _advance(self) -> bool:
        self.off += self.buf.size
        for b in self.blocks:
            if len(b):
                self.buf = np.asarray(b, dtype=np.int64)
                return True
        self.buf = np.zeros(0, np.int64)
        return False


def summary_fields(series: Sequence[Series], drop_log: DropLog) -> dict[str, Any]:
    """The common Summary keyword arguments for a list of series."""
    return {
        "stats": {s.metric: summarize(s.value) for s in series},
        "units": {s.metric: s.unit for s in series},
        "excluded": sum(e.count for e in drop_log.entries if e.reason != "no_end_event"),
        "unmatched": drop_log.count(reason="no_end_event"),
        "drop_log": tuple(drop_log.entries),
    }


def join_series(batches: Sequence[Series]) -> Series:
    """Consecutive batches of one series, joined (``start_idx``/``end_idx``/``core``: all or none)."""

    def cat(name: str) -> np.ndarray | None:
        got = [getattr(b, name) for b in batches]
        return None if got[0] is None else np.concatenate([np.asarray(g) for g in got])

    b = batches[0]
    return Series(b.metric, b.unit, cat("start_ts"), cat("end_ts"), cat("value"),  # type: ignore[arg-type]
                  b.start_site, cat("start_idx"), b.end_site, cat("end_idx"), cat("core"))


class TableParts:
    """Series made into table parts and statistics as they come, so the caller can let go of each
    series' arrays before making the next (the chunked analyzers' finishing steps): the same
    table, rows in the order added, and the same :func:`summary_fields` as one ``make_table``
    and one ``summary_fields`` of all of them."""

    def __init__(self, source: str, store: Any = None) -> None:
        self.source = source
        self.store = store  #: the source's :class:`~analyzers.metrics.spill.Spill`, or None (in memory)
        self.tables: list[Any] = []
        self.stats: dict[str, Stats] = {}
        self.units: dict[str, str] = {}

    def add(self, series: Sequence[Series]) -> None:
        series = [s for s in series if len(s)]
        for s in series:
            self.stats[s.metric] = summarize(s.value)
            self.units[s.metric] = s.unit
        if series:
            self.tables.append(make_table(series, self.source, self.store))

    def add_batches(self, batches: Iterable[Series]) -> None:
        """One series given as consecutive batches (each a ``Series`` of the same metric and
        unit, a slice of it): inside a spill written and summarized batch by batch, never whole
        in memory (``metrics.spill.Spill.batched``); else joined and :meth:`add`-ed. The same
        table and statistics as :meth:`add` of the joined series."""
        spill = self.store
        if spill is None:
            got = [b for b in batches if len(b)]
            if got:
                self.add([join_series(got)])
            return
        first: list[Series] = []

        def seen(it: Iterable[Series]) -> Iterator[Series]:
            for b in it:
                if len(b) and not first:
                    first.append(b)
                yield b

        table, stats = spill.batched(seen(batches), self.source, _stack)
        if first:
            self.stats[first[0].metric] = stats
            self.units[first[0].metric] = first[0].unit
            self.tables.append(table)

    def table(self) -> Any:
        import pyarrow as pa

        from .spill import SpilledTable, is_spilled

        if not self.tables:
            return make_table([], self.source, self.store)
        if is_spilled(self.tables[0]):
            return SpilledTable.concat(self.tables)
        return pa.concat_tables(self.tables)

    def summary_fields(self, drop_log: DropLog) -> dict[str, Any]:
        return {**summary_fields([], drop_log), "stats": dict(self.stats), "units": dict(self.units)}


def kernel_interval(
    metric: str,
    ts: np.ndarray,
    start_mask: np.ndarray,
    end_mask: np.ndarray,
    gaps: Sequence[tuple[int, int]],
    drop_log: DropLog,
) -> tuple[Series, int]:
    """Intervals between kernel events of a trace: each start row to the next end row."""
    a = ts[start_mask].astype(np.int64)
    b = ts[end_mask].astype(np.int64)
    ia, jb, unmatched = pair_next(a, b)
    drop_log.add(metric, "no_end_event", count=unmatched)
    start, end = a[ia], b[jb]
    keep = drop_gap_instances(metric, start, end, gaps, drop_log)
    start, end = start[keep], end[keep]
    return Series(metric, "ns", start, end, (end - start).astype(np.float64)), unmatched


def as_rows(events: Any) -> np.ndarray:
    """A few kept events as a row table (a chunk holds rows or columns: ``Trace.held()``)."""
    return events if isinstance(events, np.ndarray) else events.to_records()
