"""``user_config`` intervals (``analyzers.user_config``) of a recording read in chunks.

A trace's mark and user-event selectors (``mark:``, ``mark_start:``, ``mark_stop:``,
``marker:<name>``, ``user:``) read only rows of those kinds, and the OVERFLOW gaps read the
OVERFLOW rows and the row before each (which may be the previous chunk's last row: carried).
Those rows are kept and the selectors run on a trace made of them alone; a logic capture's pins
read edges, which the site accumulator keeps already. Task and ISR selectors (``task:``, ``isr:``)
follow the scheduling state: with one of them the switch-in, idle, ISR and restart rows are kept
too. What grows: one event row per kept row of the recording (every scheduling event when a task
or ISR selector is configured: that memory is not bounded by the chunk).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace, empty_events

from .. import user_config as user_metrics
from ..sites import (
    is_logic,
)
from .base import (
    as_rows,
)
from .occurrences import SiteAccumulator

K = EventKind
_KINDS = (K.MARK, K.MARK_START, K.MARK_STOP, K.USER, K.OVERFLOW)


#: the rows task and ISR selectors read besides
_SCHED_KINDS = (K.TASK_SWITCH_IN, K.IDLE, K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED, K.TRACE_START)


def user_config(options: dict[str, Any]) -> Any:
    """The user config of ``options`` with intervals, or None."""
    cfg = user_metrics.config_from_options(options)
    if cfg is None or not cfg.intervals:
        return None
    return cfg


class UserStream:
    def __init__(self, options: dict[str, Any]) -> None:
        self.cfg = user_config(options)
        sched = self.cfg is not None and any(
            user_metrics.check_selector(s)[0] in ("task", "isr") for s in self.cfg.selectors())
        self.kinds = _KINDS + (_SCHED_KINDS if sched else ())
        self.rows: list[np.ndarray] = []
        self.last_row: np.ndarray | None = None  #: the previous chunk's last row, if not kept
        self.logic = False

    def feed(self, trace: Trace) -> None:
        ev = trace.held()  # rows or columns, whichever the chunk holds
        self.logic = is_logic(trace)
        if self.cfg is None or self.logic or not len(ev):
            return
        kind = ev["kind"]
        keep = np.isin(kind, self.kinds)
        before = np.flatnonzero(kind == K.OVERFLOW) - 1
        keep[before[before >= 0]] = True
        if before.size and before[0] < 0 and self.last_row is not None:
            self.rows.append(self.last_row)
        self.rows.append(as_rows(ev[keep]))
        self.last_row = None if keep[-1] else as_rows(ev[-1:]).copy()

    def events(self, occ: SiteAccumulator, last: Trace) -> np.ndarray:
        """The rows the in-memory analyzer reads, in recording order (none without user
        intervals: the analyzer then reads nothing)."""
        if self.cfg is None:
            return empty_events(0)
        if is_logic(last):
            ts, key, kind = occ.columns()
            ev = empty_events(ts.size)
            ev["ts"], ev["kind"], ev["marker"] = ts, kind, key
            return ev
        return np.concatenate(self.rows) if self.rows else empty_events(0)

    def finish(self, stub: Trace, sites: Any, options: dict[str, Any], store: Any = None) -> Any:
        """``store``: the source's spill the table goes to, or None (in memory)."""
        return user_metrics.analyze(stub, sites, options, store)
