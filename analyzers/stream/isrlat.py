"""``isr_latency`` (``analyzers.metrics.isr_latency``) of a recording read in chunks.

The test IRQ is known only at the end (the IRQ most often running when the ``isr.enter`` site
fired, else the recording's only IRQ), so every ISR entry is paired with its exit: the first exit
after it that brings the recording-wide nesting count (entries minus exits, all cores, not
floored: the in-memory walk) back to its depth before the entry. Carried: that count, and the
entries still waiting for their exit (at most one per depth level), filled in place when their
exit comes. The switch-in an exit into the scheduler caused comes from
:class:`.sched.CausedSwitchIn`. What grows: per ISR entry 6 int64 (48 bytes), on disk while
spilling (:mod:`.parts`; an exit in a later chunk is patched in).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind

from ..metrics.spill import Parts
from .metrics import (
    DropLog,
    GapDrops,
    Result,
    Series,
    SiteEvents,
    TableParts,
    _first_exit_at_depth,
    site_by_name,
    site_interval_batches,
)
from .metrics import isr_metrics as M
from .parts import SortedLookup
from .sched import NONE, CausedSwitchIn

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
        """``isr_to_task_latency``'s result, step for step (each series made into its table part
        and statistics before the next is made)."""
        drop_log = DropLog()
        parts = TableParts("trace")
        parts.add_batches(site_interval_batches(M.LATENCY, se, "isr.enter", "isr.task_wake", drop_log))
        if self.events:
            irq = self._irq(irq)
            self._durations(parts, se, irq, drop_log)
        summary = M.IsrSummary(source="trace", irq=irq, **parts.summary_fields(drop_log))
        return Result(parts.table(), summary)

    def _durations(self, parts: TableParts, se: SiteEvents, irq: int | None, drop_log: DropLog) -> None:
        """``.duration`` of the test IRQ's entries, and the switch-in each exit into the
        scheduler caused: each series made batch by batch from the entries (never whole in
        memory while spilling: :meth:`.parts.Parts.batches`)."""
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
                    drop_log.add(M.DURATION, "no_end_event", int(t), -1)
            yield mine[[0, 2, 3, 4]] if found.all() else mine[[0, 2, 3, 4]][:, found]

    def _duration_batches(self, se: SiteEvents, irq: int, drop_log: DropLog) -> Iterator[Series]:
        drops = GapDrops(M.DURATION, se.gaps)
        for st, _xr, en, _sched in self._mine(irq, drop_log):
            keep = drops.keep(st, en)
            yield Series(M.DURATION, "ns", st[keep], en[keep], (en - st)[keep].astype(np.float64))
        drops.log(drop_log)

    def _switch_in_batches(self, se: SiteEvents, irq: int, drop_log: DropLog,
                           caused: SortedLookup) -> Iterator[Series]:
        no_end, drops = 0, GapDrops(M.SWITCH_IN, se.gaps)
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
            yield Series(M.SWITCH_IN, "ns", s0[keep], s1[keep], (s1 - s0)[keep].astype(np.float64))
        drop_log.add(M.SWITCH_IN, "no_end_event", count=no_end)
        drops.log(drop_log)
