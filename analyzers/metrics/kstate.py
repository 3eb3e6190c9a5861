"""The kernel-state rules, written once: ISR nesting per core, and what resets it.

Every analyzer that needs to know which context ran (CPU load, per-ISR durations and nesting, the
per-task running time, in memory or over chunks) reads the ISR nesting depth from :func:`isr_walk`
and nothing else. The rules (docs/methodology.md, "Kernel state"):

- ``ISR_ENTER`` pushes an interrupt, ``ISR_EXIT``/``ISR_TO_SCHED`` pops one; never below empty
  (an exit whose entry the recording does not hold is ignored);
- a **data-loss marker** (``OVERFLOW``) empties the ISR stack and makes the running task unknown
  from the last event before it until a switch-in re-establishes it;
- a **switch-in** (``TASK_SWITCH_IN``) on a core with ISRs open closes them there (their exit
  records were lost): they are reported and their instances excluded, never measured to a later exit;
- a **restart** (``TRACE_START`` after the first event) resets the state like a data-loss marker.

The depth walk is vectorised: each reset starts a segment, and the running minimum of the
cumulative steps within a segment is the floor.

>>> from trace_parsers.model import EventKind as K
>>> k = np.array([K.ISR_ENTER, K.ISR_ENTER, K.TASK_SWITCH_IN, K.ISR_EXIT, K.ISR_ENTER, K.ISR_EXIT])
>>> w = isr_walk(k)
>>> w.depth.tolist(), w.before.tolist(), w.seg.tolist()
([1, 2, 0, 0, 1, 0], [0, 1, 2, 0, 0, 1], [0, 0, 1, 1, 1, 1])
>>> isr_walk(np.array([K.ISR_EXIT, K.ISR_ENTER]), depth0=2).depth.tolist()
[1, 2]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from trace_parsers.model import EventKind

K = EventKind

#: kinds that end the known state: the ISR stack is emptied at them
RESETS = (K.OVERFLOW, K.TASK_SWITCH_IN, K.TRACE_START)
#: kinds after which the running task is unknown until the next switch-in (data loss, restart)
LOSSES = (K.OVERFLOW, K.TRACE_START)

_STEP = np.zeros(256, dtype=np.int64)
_STEP[K.ISR_ENTER] = 1
_STEP[K.ISR_EXIT] = -1
_STEP[K.ISR_TO_SCHED] = -1
_RESET = np.zeros(256, dtype=bool)
_RESET[list(RESETS)] = True
_LOSS = np.zeros(256, dtype=bool)
_LOSS[list(LOSSES)] = True


class Walk(NamedTuple):
    """ISR nesting depth after (``depth``) and before (``before``) each event, and the segment
    (``seg``: resets so far) each event is in."""

    depth: np.ndarray
    before: np.ndarray
    seg: np.ndarray


def is_reset(kind: np.ndarray) -> np.ndarray:
    """Mask of the events that empty the ISR stack (:data:`RESETS`)."""
    return _RESET[np.asarray(kind)]


def is_loss(kind: np.ndarray) -> np.ndarray:
    """Mask of the events after which the running task is unknown (:data:`LOSSES`)."""
    return _LOSS[np.asarray(kind)]


def isr_walk(kind: np.ndarray, depth0: int = 0) -> Walk:
    """The ISR nesting depth of one core's events ``kind`` (any kinds; others leave it as it is),
    starting at ``depth0`` (the depth carried from an earlier chunk)."""
    kind = np.asarray(kind)
    n = kind.size
    reset = _RESET[kind]
    y = np.empty(n + 1, dtype=np.int64)
    y[0] = -int(depth0)  # the floor of the first segment: depth0 below its start
    np.cumsum(_STEP[kind], out=y[1:])
    seg = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(reset, out=seg[1:])
    big = 2 * (n + int(depth0) + 1)
    floor = np.minimum.accumulate(y - seg * big) + seg * big
    depth_all = y - floor
    depth = depth_all[1:]
    before = np.empty(n, dtype=np.int64)
    if n:
        before[0] = depth0
        before[1:] = depth[:-1]
    return Walk(depth, before, seg[1:])


def first_exit_at_depth(entries: np.ndarray, walk: Walk, exits: np.ndarray) -> np.ndarray:
    """For each entry index, the index of its own exit: the first exit after it that brings the
    depth back to the entry's outer level, in the same segment (no reset between); -1 where the
    recording holds none (the entry was closed by a reset, or the recording ended).

    >>> from trace_parsers.model import EventKind as K
    >>> k = np.array([K.ISR_ENTER, K.ISR_ENTER, K.ISR_EXIT, K.ISR_EXIT, K.ISR_ENTER, K.OVERFLOW,
    ...               K.ISR_EXIT])
    >>> w = isr_walk(k)
    >>> first_exit_at_depth(np.array([0, 1, 4]), w, np.array([2, 3, 6])).tolist()
    [3, 2, -1]
    """
    entries = np.asarray(entries, dtype=np.int64)
    exits = np.asarray(exits, dtype=np.int64)
    out = np.full(entries.size, -1, dtype=np.int64)
    if entries.size == 0 or exits.size == 0:
        return out
    depth, seg = walk.depth, walk.seg
    outer = depth[entries] - 1
    lo = int(min(depth[exits].min(), outer.min()))
    span = int(max(depth.size, entries.max() + 1, exits.max() + 1)) + 1
    d_ex = depth[exits].astype(np.int64) - lo
    order = np.lexsort((exits, d_ex))  # by depth, then position
    ex_sorted, d_sorted = exits[order], d_ex[order]
    key = d_sorted * span + ex_sorted
    pos = np.searchsorted(key, (outer - lo) * span + entries, side="right")
    ok = pos < key.size
    p = np.minimum(pos, key.size - 1)
    ok &= d_sorted[p] == outer - lo
    ok &= seg[ex_sorted[p]] == seg[entries]
    out[ok] = ex_sorted[p[ok]]
    return out


def closed_by(kind: np.ndarray, walk: Walk, entries: np.ndarray, exit_idx: np.ndarray) -> np.ndarray:
    """For each entry without an exit (``exit_idx`` -1), the index of the reset that closed it (the
    first reset after it), or -1 when none did (the recording, or the chunk, ended first)."""
    resets = np.flatnonzero(_RESET[np.asarray(kind)])
    out = np.full(np.asarray(entries).size, -1, dtype=np.int64)
    if not resets.size:
        return out
    j = np.searchsorted(resets, entries, side="right")
    hit = (np.asarray(exit_idx) < 0) & (j < resets.size)
    out[hit] = resets[j[hit]]
    return out


#: why an ISR entry has no exit (``IsrEntries.end`` below 0)
OPEN, BY_SWITCH_IN, BY_LOSS = -1, -2, -3
#: the drop-log reasons of entries closed without their exit
CLOSED_REASONS = {BY_SWITCH_IN: "isr_closed_by_switch_in", BY_LOSS: "isr_closed_by_data_loss"}

_ISR = np.zeros(256, dtype=bool)
_ISR[[K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED]] = True
_EXIT = np.zeros(256, dtype=bool)
_EXIT[[K.ISR_EXIT, K.ISR_TO_SCHED]] = True


def isr_rows(kind: np.ndarray, core: np.ndarray, c: int) -> np.ndarray:
    """The rows the ISR state of core ``c`` follows: its ISR events and switch-ins, and every
    core's data-loss markers."""
    kind = np.asarray(kind)
    return np.flatnonzero(((np.asarray(core) == c) & (_ISR[kind] | (kind == K.TASK_SWITCH_IN))) | _LOSS[kind])


class IsrEntries(NamedTuple):
    """The ISR entries of one core's rows (:func:`isr_rows`), in order."""

    idx: np.ndarray  #: index of each ``ISR_ENTER`` in the rows
    depth: np.ndarray  #: nesting depth it opened (1: not nested)
    end: np.ndarray  #: index of its own exit; else OPEN, BY_SWITCH_IN or BY_LOSS
    closer: np.ndarray  #: index of the reset that closed it (-1 if none)
    final_depth: int  #: the depth after the last row (carried to the next chunk)


def isr_entries(kind: np.ndarray) -> IsrEntries:
    """Each ISR entry of one core's rows with its own exit, or what closed it without one.

    >>> from trace_parsers.model import EventKind as K
    >>> k = np.array([K.ISR_ENTER, K.TASK_SWITCH_IN, K.ISR_ENTER, K.ISR_EXIT, K.ISR_ENTER, K.OVERFLOW,
    ...               K.ISR_ENTER])
    >>> e = isr_entries(k)
    >>> e.idx.tolist(), e.depth.tolist(), e.end.tolist(), e.closer.tolist(), e.final_depth
    ([0, 2, 4, 6], [1, 1, 1, 1], [-2, 3, -3, -1], [1, -1, 5, -1], 1)
    """
    kind = np.asarray(kind)
    w = isr_walk(kind)
    a = np.flatnonzero(kind == K.ISR_ENTER)
    hit = first_exit_at_depth(a, w, np.flatnonzero(_EXIT[kind]))
    closer = closed_by(kind, w, a, hit)
    end = hit.copy()
    shut = closer >= 0
    end[shut] = np.where(kind[closer[shut]] == K.TASK_SWITCH_IN, BY_SWITCH_IN, BY_LOSS)
    final = int(w.depth[-1]) if kind.size else 0
    return IsrEntries(a, w.depth[a], end, closer, final)


#: ``count_switches``' mark of an unknown running context (before the first switch-in, after a loss)
UNKNOWN = -3


def count_switches(kind: np.ndarray, ctx_id: np.ndarray, prev: int | None = None) -> tuple[int, int | None]:
    """Context switches in one core's events (a core's switch-ins and idles, every core's losses):
    a switch-in or idle whose context differs from a *known* running one (idle is a context).
    The first switch-in of the recording and the first after a data loss only establish the
    state. ``prev``: the context running before these events (None: unknown). Returns the count
    and the context running after them.

    >>> from trace_parsers.model import EventKind as K
    >>> k = np.array([K.TASK_SWITCH_IN, K.TASK_SWITCH_IN, K.IDLE, K.OVERFLOW, K.TASK_SWITCH_IN,
    ...               K.TASK_SWITCH_IN])
    >>> count_switches(k, np.array([1, 2, -1, -1, 1, 1]))
    (2, 1)
    """
    kind = np.asarray(kind)
    sel = (kind == K.TASK_SWITCH_IN) | (kind == K.IDLE) | _LOSS[kind]
    k = kind[sel]
    who = np.where(k == K.IDLE, -2, np.where(_LOSS[k], UNKNOWN, np.asarray(ctx_id)[sel].astype(np.int64)))
    if not who.size:
        return 0, prev
    before = np.concatenate(([UNKNOWN if prev is None else prev], who[:-1]))
    n = int(np.count_nonzero((before != UNKNOWN) & (who != UNKNOWN) & (who != before)))
    last = int(who[-1])
    return n, None if last == UNKNOWN else last
