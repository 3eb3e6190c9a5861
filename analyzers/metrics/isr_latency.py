"""Interrupt latency: ISR entry until the woken task runs, and ISR duration.

Metrics:

- ``isr.to_task.latency`` — site ``isr.enter`` (first instruction of the test ISR) to the next site
  ``isr.task_wake`` (the woken task's first instruction after its wait). Both sources;
  cross-validated.
- ``isr.to_task.switch_in`` — trace only: kernel ``ISR_ENTER`` of the test IRQ to the
  ``TASK_SWITCH_IN`` its exit into the scheduler (``ISR_TO_SCHED``) caused on the same core.
- ``isr.duration`` — trace only: ``ISR_ENTER`` to the next ``ISR_EXIT``/``ISR_TO_SCHED`` of the test
  IRQ (``irq``; by default the IRQ that was running when the ``isr.enter`` site fired, or the
  trace's only IRQ). Without a test IRQ there is none: every interrupt's own duration is a kernel metric
  (``isr.<name>.duration``, :mod:`analyzers.metrics.kernel`), never all of them pooled.

One reducer (:class:`IsrLatencyStream`) over a recording's chunks, a whole recording being one chunk
(:func:`isr_to_task_latency`). The test IRQ is known only at the end, so every ISR entry is paired
with its exit: the first exit after it that brings the recording-wide nesting count (entries minus
exits, all cores) back to its depth before the entry. Carried: that count, and the entries still
waiting for their exit (at most one per depth level). What grows: per ISR entry 6 int64 (48 bytes),
on disk while spilling (:mod:`.spill`). A logic capture has only its site intervals (:func:`analyze`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from ..sites import SiteEvents, is_logic, load_sites, site_by_name, site_events
from .base import (
    Result,
    Series,
    Summary,
    TableParts,
    make_table,
    site_interval,
    site_interval_batches,
    summary_fields,
)
from .occurrences import GapTracker, SiteAccumulator
from .sched import NONE, CausedSwitchIn
from .spill import Parts, SortedLookup
from .stats import DropLog, GapDrops

LATENCY = "isr.to_task.latency"
SWITCH_IN = "isr.to_task.switch_in"
DURATION = "isr.duration"
METRICS = (LATENCY, SWITCH_IN, DURATION)


@dataclass(frozen=True)
class IsrSummary(Summary):
    irq: int | None = None


def _first_exit_at_depth(entries: np.ndarray, outer: np.ndarray, exits: np.ndarray,
                         depth: np.ndarray) -> np.ndarray:
    """For each entry index, the first exit index after it whose nesting depth (after the exit)
    is ``outer`` — the exit of that ISR, not of one nested in it; -1 where there is none.

    >>> d = np.array([1, 2, 1, 0])        # enter, nested enter, nested exit, exit
    >>> _first_exit_at_depth(np.array([0, 1]), np.array([0, 1]), np.array([2, 3]), d).tolist()
    [3, 2]
    """
    if entries.size == 0 or exits.size == 0:
        return np.full(entries.size, -1, dtype=np.int64)
    lo = int(min(depth[exits].min(), outer.min()))
    span = int(max(depth.size, entries.max() + 1, exits.max() + 1)) + 1
    d_ex = depth[exits].astype(np.int64) - lo
    order = np.lexsort((exits, d_ex))  # by depth, then position
    ex_sorted, d_sorted = exits[order].astype(np.int64), d_ex[order]
    key = d_sorted * span + ex_sorted
    q = (outer.astype(np.int64) - lo) * span + entries.astype(np.int64)
    pos = np.searchsorted(key, q, side="right")
    ok = pos < key.size
    ok[ok] &= d_sorted[pos[ok]] == outer[ok].astype(np.int64) - lo
    out = np.full(entries.size, -1, dtype=np.int64)
    out[ok] = ex_sorted[pos[ok]]
    return out


def isr_to_task_latency(
    trace: Trace, *, sites: Sequence[Any] | None = None, irq: int | None = None
) -> Result:
    """ISR-to-task latency and ISR duration of a whole trace or logic capture."""
    sites = tuple(sites) if sites is not None else load_sites()
    if is_logic(trace):
        return analyze(trace, sites, {})
    gaps = GapTracker()
    occ, sched = SiteAccumulator(gaps), CausedSwitchIn()
    isr = IsrLatencyStream(sched, sites)
    gaps.feed(trace)
    occ.feed(trace)
    sched.feed(trace.held(), 0)
    isr.feed(trace.held(), 0)
    return isr.finish(occ.finish(trace, sites), irq)


def analyze(trace: Trace, sites: Sequence[Any], options: dict[str, Any]) -> Result:
    """A logic capture's ISR latency: its site intervals (a trace's: :class:`IsrLatencyStream`)."""
    if not is_logic(trace):
        raise ValueError("a trace's ISR latency comes from IsrLatencyStream (isr_to_task_latency)")
    drop_log = DropLog()
    s, _ = site_interval(LATENCY, site_events(trace, sites), "isr.enter", "isr.task_wake", drop_log)
    series = [s] if len(s) else []
    return Result(make_table(series, "logic"), IsrSummary(source="logic", **summary_fields(series, drop_log)))


K = EventKind
_W = 6  #: per entry: global row, ts, irq, exit row (-1: none yet), exit ts, exit is ISR_TO_SCHED


class IsrLatencyStream:
    def __init__(self, sched: CausedSwitchIn, sites: Sequence[Any]) -> None:
        self.sched = sched
        s = site_by_name(sites, "isr.enter")
        self.enter_site = None if s is None else s.id
        self.running_at_site: Counter[int] = Counter()  #: IRQ -> isr.enter marks while it ran
        self.irqs: set[int] = set()  #: every IRQ with an ISR_ENTER
        self.depth = 0
        self.exits = 0
        self.parts = Parts(width=_W)  #: one column per entry (on disk while spilling)
        self.pending: list[tuple[int, int]] = []  #: (column of ``parts``, outer depth)
        self.events = 0

    def feed(self, ev: np.ndarray, row0: int) -> None:
        self.events += len(ev)
        kind = np.ascontiguousarray(ev["kind"])
        if self.enter_site is not None:
            m = (kind == K.MARK) & (ev["marker"] == self.enter_site) & (ev["ctx_type"] == CtxType.ISR)
            self.running_at_site.update(ev["ctx_id"][m].tolist())
        enter = kind == K.ISR_ENTER
        leave = (kind == K.ISR_EXIT) | (kind == K.ISR_TO_SCHED)
        self.irqs.update(np.unique(ev["ctx_id"][enter]).tolist())
        self.exits += int(np.count_nonzero(leave))
        rows = np.flatnonzero(enter | leave)
        if not rows.size and not self.pending:
            return
        is_in = enter[rows]
        depth = self.depth + np.cumsum(np.where(is_in, 1, -1))
        a = np.flatnonzero(is_in)
        ex = np.flatnonzero(~is_in)
        ents = np.concatenate((np.full(len(self.pending), -1, np.int64), a))
        outer = np.concatenate((np.array([p[1] for p in self.pending], np.int64), depth[a] - 1))
        hit = _first_exit_at_depth(ents, outer, ex, depth) if rows.size else np.full(ents.size, -1)
        r = rows + row0
        ts = ev["ts"].astype(np.int64)
        part = np.full((_W, a.size), -1, np.int64)
        part[0], part[1], part[2] = r[a], ts[rows[a]], ev["ctx_id"][rows[a]]
        n_carried = len(self.pending)
        h = hit[n_carried:]
        ok = h >= 0
        part[3, ok], part[4, ok] = r[h[ok]], ts[rows[h[ok]]]
        part[5, ok] = kind[rows[h[ok]]] == K.ISR_TO_SCHED
        self._carried(hit[:n_carried], r, ts[rows], kind[rows])
        first = self.parts.append(part)
        self.pending += [(first + int(i), int(outer[n_carried + i])) for i in np.flatnonzero(~ok).tolist()]
        if rows.size:
            self.depth = int(depth[-1])

    def _carried(self, hit: np.ndarray, r: np.ndarray, ts: np.ndarray, kind: np.ndarray) -> None:
        """The carried entries' exits found in this chunk (``hit``: index into its ISR rows, or
        -1), patched into their columns; the others keep waiting."""
        got = hit >= 0
        if got.any():
            cols = np.array([c for c, _ in self.pending], np.int64)[got]
            h = hit[got]
            self.parts.patch(cols, r[h], row=3)
            self.parts.patch(cols, ts[h], row=4)
            self.parts.patch(cols, (kind[h] == K.ISR_TO_SCHED).astype(np.int64), row=5)
        self.pending = [p for p, g in zip(self.pending, got.tolist()) if not g]

    def _irq(self, irq: int | None) -> int | None:
        if irq is None and self.running_at_site:
            vals = sorted(self.running_at_site)
            cnt = [self.running_at_site[v] for v in vals]
            irq = int(vals[int(np.argmax(cnt))])
        if irq is None and len(self.irqs) == 1:
            irq = int(next(iter(self.irqs)))
        return irq

    def finish(self, se: SiteEvents, irq: int | None) -> Result:
        """The recording's result (each series made into its table part and statistics before
        the next is made)."""
        drop_log = DropLog()
        parts = TableParts("trace")
        parts.add_batches(site_interval_batches(LATENCY, se, "isr.enter", "isr.task_wake", drop_log))
        if self.events:
            irq = self._irq(irq)
            self._durations(parts, se, irq, drop_log)
        summary = IsrSummary(source="trace", irq=irq, **parts.summary_fields(drop_log))
        return Result(parts.table(), summary)

    def _durations(self, parts: TableParts, se: SiteEvents, irq: int | None, drop_log: DropLog) -> None:
        """``.duration`` of the test IRQ's entries, and the switch-in each exit into the
        scheduler caused: each series made batch by batch from the entries (never whole in
        memory while spilling: :meth:`.spill.Parts.batches`)."""
        if irq is not None and self.exits:
            parts.add_batches(self._duration_batches(se, irq, drop_log))
            parts.add_batches(self._switch_in_batches(se, irq, drop_log, self.sched.lookup()))
        self.parts.clear()  # finished: the parts go (memory of long recordings)

    def _mine(self, irq: int, drop_log: DropLog | None = None) -> Iterator[np.ndarray]:
        """ts, exit row, exit ts, exit is to-sched (rows) of the test IRQ's entries with an exit,
        a batch at a time; with ``drop_log``, the entries without one are logged there
        (``no_end_event``, in entry order)."""
        for cols in self.parts.batches(rows=[1, 2, 3, 4, 5]):  # ts, irq, exit row, exit ts, to-sched
            mine = cols if (cols[1] == irq).all() else cols[:, cols[1] == irq]
            found = mine[2] >= 0
            if drop_log is not None:
                for t in mine[0][~found].tolist():
                    drop_log.add(DURATION, "no_end_event", int(t), -1)
            yield mine[[0, 2, 3, 4]] if found.all() else mine[[0, 2, 3, 4]][:, found]

    def _duration_batches(self, se: SiteEvents, irq: int, drop_log: DropLog) -> Iterator[Series]:
        drops = GapDrops(DURATION, se.gaps)
        for st, _xr, en, _sched in self._mine(irq, drop_log):
            keep = drops.keep(st, en)
            yield Series(DURATION, "ns", st[keep], en[keep], (en - st)[keep].astype(np.float64))
        drops.log(drop_log)

    def _switch_in_batches(self, se: SiteEvents, irq: int, drop_log: DropLog,
                           caused: SortedLookup) -> Iterator[Series]:
        no_end, drops = 0, GapDrops(SWITCH_IN, se.gaps)
        for st, xr, _en, sched in self._mine(irq):
            sched = sched == 1
            if not sched.any():
                continue
            s0 = st[sched]
            sw = caused(xr[sched], default=NONE)
            ok = sw != NONE
            no_end += int(np.count_nonzero(~ok))
            s0, s1 = s0[ok], sw[ok]
            keep = drops.keep(s0, s1)
            yield Series(SWITCH_IN, "ns", s0[keep], s1[keep], (s1 - s0)[keep].astype(np.float64))
        drop_log.add(SWITCH_IN, "no_end_event", count=no_end)
        drops.log(drop_log)
