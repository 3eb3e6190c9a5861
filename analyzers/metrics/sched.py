"""Scheduling facts from kernel events, shared by the metrics that need them.

The one question here: which ``TASK_SWITCH_IN`` did an interrupt's exit into the scheduler cause?
The switch-in must be the scheduler's *next* decision on the same core. When the next thing that
core does is go idle, or run the interrupted task on (an event recorded in task context), the
interrupt caused no switch, and a switch-in that comes later (after that task blocked, say) is
not its consequence. Pairing "the next TASK_SWITCH_IN anywhere" got exactly this wrong on the
ESP32 recordings (an ISR_TO_SCHED paired with a switch 27 ms later, after an IDLE).
"""

from __future__ import annotations

import numpy as np

from trace_parsers.model import CtxType, EventKind

#: task-context kinds that are the scheduler's own bookkeeping, recorded between an interrupt's
#: exit and the switch it causes: they do not show the interrupted task running on
_BOOKKEEPING = (
    EventKind.TASK_READY,
    EventKind.TASK_BLOCK,
    EventKind.TASK_SWITCH_OUT,
    EventKind.TASK_CREATE,
    EventKind.TASK_TERMINATE,
)


def _decisive(ev: np.ndarray) -> np.ndarray:
    """Rows that show what a core runs next: a switch-in, idle, data loss, or any event the
    running task records (other than scheduler bookkeeping)."""
    kind = ev["kind"]
    task_ctx = (ev["ctx_type"] == CtxType.TASK) & ~np.isin(kind, _BOOKKEEPING)
    return (
        (kind == EventKind.TASK_SWITCH_IN)
        | (kind == EventKind.IDLE)
        | (kind == EventKind.OVERFLOW)
        | task_ctx
    )


def caused_switch_in(ev: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each row index in ``rows`` (an ``ISR_TO_SCHED``, or an ISR exit into the scheduler),
    the row of the ``TASK_SWITCH_IN`` the scheduler performed as its result on the same core;
    -1 where the core's next decisive event (:func:`_decisive`) is no switch-in, or where another
    ``ISR_TO_SCHED`` on that core comes first (the switch is then that one's).

    >>> from trace_parsers.model import empty_events
    >>> e = empty_events(6)
    >>> K = EventKind
    >>> e["kind"] = [K.ISR_TO_SCHED, K.TASK_SWITCH_IN, K.ISR_TO_SCHED, K.IDLE, K.TASK_SWITCH_IN,
    ...              K.ISR_TO_SCHED]
    >>> e["ctx_type"] = [CtxType.ISR, CtxType.TASK, CtxType.ISR, CtxType.IDLE, CtxType.TASK, CtxType.ISR]
    >>> caused_switch_in(e, np.array([0, 2, 5])).tolist()
    [1, -1, -1]
    """
    rows = np.asarray(rows, dtype=np.int64)
    out = np.full(rows.size, -1, dtype=np.int64)
    if rows.size == 0 or ev.size == 0:
        return out
    core = ev["core"]
    decisive = _decisive(ev)
    sched = ev["kind"] == EventKind.ISR_TO_SCHED
    for c in np.unique(core[rows]).tolist():
        on = core == c
        dec = np.flatnonzero(decisive & on)
        sch = np.flatnonzero(sched & on)
        sel = np.flatnonzero(core[rows] == c)
        r = rows[sel]
        k = np.searchsorted(dec, r, side="right")
        ok = k < dec.size
        j = np.where(ok, dec[np.minimum(k, dec.size - 1)], -1) if dec.size else np.full(r.size, -1)
        ok &= j >= 0
        ok[ok] &= ev["kind"][j[ok]] == EventKind.TASK_SWITCH_IN
        # another exit into the scheduler on this core before the switch: the switch is its
        ks = np.searchsorted(sch, r, side="right")
        nxt = np.where(ks < sch.size, sch[np.minimum(ks, max(sch.size - 1, 0))], np.iinfo(np.int64).max)
        ok &= nxt > j
        out[sel[ok]] = j[ok]
    return out
