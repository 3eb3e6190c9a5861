"""Site occurrences and OVERFLOW gaps of a recording read in chunks.

What grows with the recording is only what the result holds: per site occurrence 21 bytes while
reading (``ts`` int64, ``value`` int64, the marker/source id uint32, the kind uint8; edges of a
logic capture 13 bytes: ``ts``, channel uint32, direction uint8; on disk while spilling:
:mod:`.spill`), 16 bytes in the final :class:`~analyzers.sites.SiteEvents` (gathered from the
rows a batch at a time; while spilling, into one file per site and array that is read back when
an analyzer asks for that site: :mod:`analyzers.site_arrays`); per gap two Python ints. The site
table is applied at the end, with the final marker and channel tables (a chunk reader may name a
marker late).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from analyzers.site_arrays import Appender, ScratchFolder, SiteArrays
from trace_parsers.model import VALUE_NULL, EventKind, Trace

from ..sites import (
    TRACEX_USER_BASE,
    SiteEvents,
    _norm,
    is_logic,
    tick_ns,
)
from .spill import Parts

#: a site table applied to a batch of candidate rows: ``(key, kind)`` -> site name -> row mask
Choose = Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]]


class GapTracker:
    """``overflow_gaps`` across chunks: the gap before an OVERFLOW row starts at the row before
    it, which may be the previous chunk's last row."""

    def __init__(self) -> None:
        self.gaps: list[tuple[int, int]] = []
        self.prev_ts: int | None = None  #: ts of the last row seen
        self.first_ts: int | None = None
        self.last_ts: int | None = None

    def feed(self, trace: Trace) -> None:
        ev = trace.held()  # rows or columns, whichever the chunk holds
        if not len(ev):
            return
        ts = ev["ts"]
        if self.first_ts is None:
            self.first_ts = int(ts[0])
        for i in np.flatnonzero(ev["kind"] == EventKind.OVERFLOW).tolist():
            if i > 0:
                start = int(ts[i - 1])
            else:
                start = self.prev_ts if self.prev_ts is not None else int(ts[0])
            self.gaps.append((start, int(ts[i])))
        self.prev_ts = self.last_ts = int(ts[-1])


class SiteAccumulator:
    """Candidate site rows of each chunk, turned into :class:`SiteEvents` by :meth:`finish`."""

    def __init__(self, gaps: GapTracker | None = None, store: Any = None) -> None:
        self.gaps = gaps
        self.store = store  #: the source's spill (:class:`.spill.Spill`), or None: in memory
        # on disk while spilling (.spill.Parts), read back when the analyzers finish
        self.ts = Parts(dtype=np.int64, store=store)
        self.key = Parts(dtype=np.uint32, store=store)  #: marker (MARK), src_id (USER) or channel (EDGE*)
        self.kind = Parts(dtype=np.uint8, store=store)
        self.value = Parts(dtype=np.int64, store=store)
        self.last_rows = np.zeros(0, np.int64)  #: the last chunk's candidate rows (for the others to reuse)

    def feed(self, trace: Trace) -> None:
        ev = trace.held()  # rows or columns, whichever the chunk holds
        kind = ev["kind"]
        if is_logic(trace):
            rows = np.flatnonzero((kind == EventKind.EDGE_RISE) | (kind == EventKind.EDGE_FALL))
            sub = ev.take(rows)
            self.key.append(sub["marker"].astype(np.uint32))
        else:
            rows = self.last_rows = self.candidates(ev)
            sub = ev.take(rows)
            mark = sub["kind"] == EventKind.MARK
            self.key.append(np.where(mark, sub["marker"], sub["src_id"]).astype(np.uint32))
            self.value.append(sub["value"].astype(np.int64))
        self.ts.append(sub["ts"].astype(np.int64))
        self.kind.append(sub["kind"].astype(np.uint8))

    @staticmethod
    def candidates(ev: np.ndarray) -> np.ndarray:
        """Rows of a trace chunk that may be site occurrences (MARK, TraceX user events)."""
        kind = ev["kind"]
        user = (kind == EventKind.USER) & (ev["src_id"] >= TRACEX_USER_BASE)
        return np.flatnonzero((kind == EventKind.MARK) | user)

    def selection(self, last: Trace, sites: Sequence[Any], only: str | None = None) -> dict[str, np.ndarray]:
        """Per site of a trace (site ``only`` when given), the mask over the candidate rows read so
        far that are its occurrences (``site_events``' rule, with the final marker table)."""
        return self.select(self.key.concat(), self.kind.concat(), last, sites, only)

    @staticmethod
    def select(key: np.ndarray, kind: np.ndarray, last: Trace, sites: Sequence[Any],
                only: str | None = None) -> dict[str, np.ndarray]:
        mark, user = kind == EventKind.MARK, kind == EventKind.USER
        by_name = {_norm(m.name): m.id for m in last.markers}
        out = {}
        for s in sites if only is None else [s for s in sites if s.name == only]:
            sid = by_name.get(_norm(s.name), s.id)
            out[s.name] = (mark & (key == sid)) | (user & (key == TRACEX_USER_BASE + s.id))
        return out

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``ts``, ``key`` and ``kind`` of every candidate row, whole."""
        return self.ts.concat(), self.key.concat(), self.kind.concat()

    def batches_of(self, key: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``ts`` and ``kind`` of the rows of ``key`` (a logic capture's channel), a batch of
        candidate rows at a time."""
        for t, k, d in zip(self.ts.batches(), self.key.batches(), self.kind.batches()):
            yield t[k == key], d[k == key]

    def finish(self, last: Trace, sites: Sequence[Any]) -> SiteEvents:
        """The occurrences, as ``site_events`` finds them on the whole trace (``last`` = the last
        chunk: final side tables and meta), gathered a batch of candidate rows at a time: each
        site's arrays are sized by a first pass, then filled (never the candidate rows whole)."""
        if is_logic(last):
            out = SiteEvents("logic", tick_ns=tick_ns(last))
            chans = {_norm(c.name): c.index for c in last.channels}
            pick = {}
            for s in sites:
                names = (_norm(s.channel_name), _norm(s.name), _norm(s.pin))
                idx = next((chans[n] for n in names if n in chans), None)
                if idx is not None:
                    pick[s.name] = idx
            self._fill(out, lambda key, kind: {n: key == i for n, i in pick.items()}, list(pick),
                       lambda kind, value: (kind == EventKind.EDGE_RISE).astype(np.int64))
            return out
        gaps = list(self.gaps.gaps) if self.gaps is not None else []
        out = SiteEvents("trace", gaps=gaps, tick_ns=tick_ns(last))
        if not sites or self.gaps is None or self.gaps.first_ts is None or not len(self.ts):
            return out
        self._fill(out, lambda key, kind: self.select(key, kind, last, sites), None,
                   lambda kind, value: np.where(value == VALUE_NULL, -1, value).astype(np.int64))
        return out

    def _fill(self, out: SiteEvents, choose: Choose,
              names: list[str] | None, level: Callable[[np.ndarray, Any], np.ndarray]) -> None:
        """``out.ts``/``out.level`` of each site ``choose(key, kind)`` selects: of ``names`` (in
        that order, empty ones too), or of those with occurrences (None). While spilling, each
        site's arrays go to files (:mod:`analyzers.site_arrays`) read back when asked for."""
        spill = self.store
        if spill is not None:
            self._fill_on_disk(out, choose, names, level, ScratchFolder(spill.folder.parent))
            return
        counts: dict[str, int] = {}
        for key, kind in zip(self.key.batches(), self.kind.batches()):
            for n, sel in choose(key, kind).items():
                counts[n] = counts.get(n, 0) + int(np.count_nonzero(sel))
        names = [n for n, c in counts.items() if c] if names is None else names
        ts_out = {n: np.empty(counts.get(n, 0), np.int64) for n in names}
        lv_out = {n: np.empty(counts.get(n, 0), np.int64) for n in names}
        at = dict.fromkeys(names, 0)
        for ts, kind, sels, value in self._selected(choose):
            for n, sel in sels.items():
                if n in at:
                    k = int(np.count_nonzero(sel))
                    ts_out[n][at[n]: at[n] + k] = ts[sel]
                    lv_out[n][at[n]: at[n] + k] = level(kind[sel], None if value is None else value[sel])
                    at[n] += k
        for n in names:
            out.ts[n], out.level[n] = ts_out[n], lv_out[n]

    def _selected(self, choose: Choose) -> Iterator[Any]:
        """Per batch of candidate rows: ``ts``, ``kind``, ``choose``'s masks, ``value`` (or None)."""
        values: Any = self.value.batches() if len(self.value) else itertools.repeat(None)
        for ts, key, kind, value in zip(self.ts.batches(), self.key.batches(), self.kind.batches(), values):
            yield ts, kind, choose(key, kind), value

    def _fill_on_disk(self, out: SiteEvents, choose: Choose,
                      names: list[str] | None, level: Callable[[np.ndarray, Any], np.ndarray],
                      folder: ScratchFolder) -> None:
        """:meth:`_fill` into files of ``folder``, one pass: nothing of a site is whole in memory."""
        files: dict[str, tuple[Appender, Appender]] = {}
        order = list(names or [])
        for ts, kind, sels, value in self._selected(choose):
            for n, sel in sels.items():
                if names is None and n not in order:
                    order.append(n)
                if names is not None and n not in names:
                    continue
                if n not in files:
                    files[n] = (folder.opener(n + ".ts", np.int64), folder.opener(n + ".level", np.int64))
                files[n][0].append(ts[sel])
                files[n][1].append(level(kind[sel], None if value is None else value[sel]))
        got = {n: (t.close(), v.close()) for n, (t, v) in files.items()}
        out.ts, out.level = SiteArrays(), SiteArrays()
        for n in order:
            t, v = got.get(n, (None, None))
            if t is None or not t.size:
                if names is None:
                    continue
                out.ts[n], out.level[n] = np.zeros(0, np.int64), np.zeros(0, np.int64)
            else:
                out.ts[n], out.level[n] = t, v
