"""Scheduling facts from kernel events, shared by the metrics that need them.

The one question here: which ``TASK_SWITCH_IN`` did an interrupt's exit into the scheduler cause?
The switch-in must be the scheduler's *next* decision on the same core. When the next thing that
core does is go idle, or run the interrupted task on (an event recorded in task context), the
interrupt caused no switch, and a switch-in that comes later (after that task blocked, say) is
not its consequence. Pairing "the next TASK_SWITCH_IN anywhere" got exactly this wrong on the
ESP32 recordings (an ISR_TO_SCHED paired with a switch 27 ms later, after an IDLE).

:class:`CausedSwitchIn` answers it over a recording's chunks (a whole recording is one chunk). On one
core the answer for an ``ISR_TO_SCHED`` row is decided by the core's next row that is either decisive
(a switch-in, idle, a data loss, an event of the running task other than scheduler bookkeeping) or
another ``ISR_TO_SCHED``: a switch-in there is the caused one, anything else means none. Carried per
core: the one ``ISR_TO_SCHED`` still waiting for that next row. What grows: per ``ISR_TO_SCHED`` row
its global row number, its time and the caused switch-in's time (3 int64, 24 bytes), on disk while
spilling (:mod:`.spill`), in row order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind

from .spill import Parts, SortedLookup, append_before

#: task-context kinds that are the scheduler's own bookkeeping, recorded between an interrupt's
#: exit and the switch it causes: they do not show the interrupted task running on
_BOOKKEEPING = (
    EventKind.TASK_READY,
    EventKind.TASK_BLOCK,
    EventKind.TASK_SWITCH_OUT,
    EventKind.TASK_CREATE,
    EventKind.TASK_TERMINATE,
)
K = EventKind
NONE = -(2**62)  #: no caused switch-in
_BOOK = np.zeros(256, dtype=bool)  # kind -> bookkeeping (a lookup beats np.isin)
_BOOK[list(_BOOKKEEPING)] = True
#: kinds always of interest: switch-ins, idles, data losses, exits into the scheduler
_ALWAYS = np.zeros(256, dtype=bool)
_ALWAYS[[K.TASK_SWITCH_IN, K.IDLE, K.OVERFLOW, K.ISR_TO_SCHED]] = True


class CausedSwitchIn:
    """Fed a recording's chunks (rows numbered across them from ``row0``), answers for each
    ``ISR_TO_SCHED`` the switch-in it caused (:data:`NONE`: none).

    >>> from trace_parsers.model import empty_events
    >>> ev = empty_events(6)
    >>> ev["kind"] = [K.TASK_SWITCH_IN, K.ISR_TO_SCHED, K.TASK_READY, K.TASK_SWITCH_IN,
    ...               K.ISR_TO_SCHED, K.IDLE]
    >>> T, I = CtxType.TASK, CtxType.ISR
    >>> ev["ctx_type"] = [T, I, T, T, I, CtxType.IDLE]
    >>> ev["ts"] = [0, 10, 11, 12, 20, 25]
    >>> c = CausedSwitchIn()
    >>> c.feed(ev[:3], 0); c.feed(ev[3:], 3)  # the first exit's answer is in the next chunk
    >>> [(int(r), int(hit)) for r, _, hit in next(c.batches()).T]  # the second exit: the core idles
    [(1, 12), (4, -4611686018427387904)]
    """

    def __init__(self, store: Any = None) -> None:
        self.pending: dict[int, tuple[int, int]] = {}  #: core -> (global row, ts) waiting
        self.parts = Parts(width=3, store=store)  #: rows: global row, ts, switch-in ts or NONE; in row order
        self.held = np.zeros((3, 0), np.int64)  #: answered rows after a waiting one (row order)
        self.closed = False
        self.switch_ins = 0
        self.to_sched = 0

    def feed(self, ev: np.ndarray, row0: int) -> None:
        kind, core, ts = ev["kind"], ev["core"], ev["ts"].astype(np.int64, copy=False)
        sched = kind == K.ISR_TO_SCHED
        sw = kind == K.TASK_SWITCH_IN
        self.switch_ins += int(np.count_nonzero(sw))
        self.to_sched += int(np.count_nonzero(sched))
        interesting = _ALWAYS[kind] | ((ev["ctx_type"] == CtxType.TASK) & ~_BOOK[kind])
        found = [self.held]
        single = not core.any()  # every row on core 0: no per-core split
        here = ([0] if interesting.any() else []) if single else np.unique(core[interesting]).tolist()
        for c in sorted(set(here) | set(self.pending)):
            # one core's rows (single: core 0 has them all, another core's pending row none)
            rows = np.flatnonzero(interesting & ((core == c) if not single else (c == 0)))
            p = self.pending.pop(c, None)
            g = rows + row0
            t = ts[rows]
            is_s, is_sw = sched[rows], sw[rows]
            if p is not None:
                g, t = np.concatenate(([p[0]], g)), np.concatenate(([p[1]], t))
                is_s, is_sw = np.concatenate(([True], is_s)), np.concatenate(([False], is_sw))
            at = np.flatnonzero(is_s)
            if at.size and at[-1] == g.size - 1:  # the last one waits for the next chunk
                self.pending[c] = (int(g[at[-1]]), int(t[at[-1]]))
                at = at[:-1]
            nxt = at + 1
            hit = np.where(is_sw[nxt], t[nxt], NONE)
            found.append(np.stack([g[at], t[at], hit]).astype(np.int64))
        self._write(np.concatenate(found, axis=1))

    def _write(self, rows: np.ndarray) -> None:
        """Append ``rows`` that no waiting row precedes, sorted by row; hold the rest."""
        wait = min((r for r, _ in self.pending.values()), default=None)
        self.held = append_before(self.parts, rows, wait)

    def _close(self) -> None:
        """At the end: the rows still waiting have no caused switch-in."""
        if not self.closed:
            left = [np.array([[r], [t], [NONE]], np.int64) for r, t in self.pending.values()]
            self.pending = {}
            self._write(np.concatenate([self.held, *left], axis=1))
            self.closed = True

    def lookup(self) -> SortedLookup:
        """Caused switch-in ts by global row of the ``ISR_TO_SCHED`` (:class:`.spill.SortedLookup`)."""
        self._close()
        return SortedLookup(self.parts, key=0, value=2)

    def batches(self) -> Iterator[np.ndarray]:
        """Rows: global row, ts, caused switch-in ts (NONE: none), in row order, a batch of
        columns at a time (:meth:`.spill.Parts.batches`)."""
        self._close()
        yield from self.parts.batches()
