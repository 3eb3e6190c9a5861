"""``isr_latency`` (``analyzers.metrics.isr_latency``) of a recording read in chunks.

The test IRQ is known only at the end (the IRQ most often running when the ``isr.enter`` site
fired, else the recording's only IRQ), so every ISR entry is paired with its exit: the first exit
after it that brings the recording-wide nesting count (entries minus exits, all cores, not
floored: the in-memory walk) back to its depth before the entry. Carried: that count, and the
entries still waiting for their exit (at most one per depth level), filled in place when their
exit comes. The switch-in an exit into the scheduler caused comes from
:class:`.sched.CausedSwitchIn`. What grows: per ISR entry 6 int64 (48 bytes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind

from .isr import _lookup
from .metrics import (
    DropLog,
    Result,
    Series,
    SiteEvents,
    _first_exit_at_depth,
    drop_gap_instances,
    make_table,
    site_by_name,
    site_interval,
    summary_fields,
)
from .metrics import isr_metrics as M
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
        self.parts: list[np.ndarray] = []
        self.pending: list[tuple[np.ndarray, int, int]] = []  #: (part, column, outer depth)
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
        outer = np.concatenate((np.array([p[2] for p in self.pending], np.int64), depth[a] - 1))
        hit = _first_exit_at_depth(ents, outer, ex, depth) if rows.size else np.full(ents.size, -1)
        r = rows + row0
        ts = ev["ts"].astype(np.int64)
        part = np.full((_W, a.size), -1, np.int64)
        part[0], part[1], part[2] = r[a], ts[rows[a]], ev["ctx_id"][rows[a]]
        self.parts.append(part)
        new = []
        for (arr, col, o), h in zip(self.pending, hit[:len(self.pending)].tolist()):  # carried entries
            if h < 0:
                new.append((arr, col, o))
            else:
                arr[3, col], arr[4, col] = r[h], ts[rows[h]]
                arr[5, col] = int(kind[rows[h]] == K.ISR_TO_SCHED)
        h = hit[len(self.pending):]
        ok = h >= 0
        part[3, ok], part[4, ok] = r[h[ok]], ts[rows[h[ok]]]
        part[5, ok] = kind[rows[h[ok]]] == K.ISR_TO_SCHED
        new += [(part, int(i), int(outer[len(self.pending) + i])) for i in np.flatnonzero(~ok).tolist()]
        self.pending = new
        if rows.size:
            self.depth = int(depth[-1])

    def _irq(self, irq: int | None) -> int | None:
        if irq is None and self.running_at_site:
            vals = sorted(self.running_at_site)
            cnt = [self.running_at_site[v] for v in vals]
            irq = int(vals[int(np.argmax(cnt))])
        if irq is None and len(self.irqs) == 1:
            irq = int(next(iter(self.irqs)))
        return irq

    def finish(self, se: SiteEvents, irq: int | None) -> Result:
        """``isr_to_task_latency``'s result, step for step."""
        drop_log = DropLog()
        series: list[Series] = []
        s, _ = site_interval(M.LATENCY, se, "isr.enter", "isr.task_wake", drop_log)
        series.append(s)
        if self.events:
            irq = self._irq(irq)
            cols = np.concatenate(self.parts, axis=1) if self.parts else np.zeros((_W, 0), np.int64)
            self.parts = []  # finished: the parts go (memory of long recordings)
            mine = cols[:, cols[2] == irq] if irq is not None else cols[:, :0]
            del cols
            if mine.shape[1] and self.exits:
                found = mine[3] >= 0
                for t in mine[1][~found].tolist():
                    drop_log.add(M.DURATION, "no_end_event", int(t), -1)
                st, en, xr, sched = mine[1][found], mine[4][found], mine[3][found], mine[5][found] == 1
                keep = drop_gap_instances(M.DURATION, st, en, se.gaps, drop_log)
                dur = (en - st)[keep].astype(np.float64)
                series.append(Series(M.DURATION, "ns", st[keep], en[keep], dur))
                if sched.any():
                    row, _, hit = self.sched.table()
                    sw = _lookup(xr[sched], np.stack([row, hit]), default=NONE)
                    ok = sw != NONE
                    drop_log.add(M.SWITCH_IN, "no_end_event", count=int(np.count_nonzero(~ok)))
                    s0, s1 = st[sched][ok], sw[ok]
                    keep = drop_gap_instances(M.SWITCH_IN, s0, s1, se.gaps, drop_log)
                    series.append(Series(M.SWITCH_IN, "ns", s0[keep], s1[keep],
                                         (s1 - s0)[keep].astype(np.float64)))
        series = [s for s in series if len(s)]
        summary = M.IsrSummary(source="trace", irq=irq, **summary_fields(series, drop_log))
        return Result(make_table(series, "trace"), summary)
