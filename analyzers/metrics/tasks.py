"""One task's instances over ts-aligned chunks (the definitions: :mod:`.kernel`), with the open
instance and the first switch-in since the last end carried."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from .base import (
    Series,
    TableParts,
)
from .spill import Parts
from .stats import GapDrops


class Instances(NamedTuple):
    """One task's instances that ran, in order: start (ready, or first switch-in), end (done),
    first switch-in, its core, running time (float64), preemptions, started by a ready (bool)."""

    start: np.ndarray
    end: np.ndarray
    first: np.ndarray
    core: np.ndarray
    execution: np.ndarray
    preemptions: np.ndarray
    from_ready: np.ndarray


def _exec_time(i: Instances) -> tuple[np.ndarray, ...]:
    return i.start, i.end, i.execution.astype(np.float64), i.core


def _response_time(i: Instances) -> tuple[np.ndarray, ...]:
    return i.start, i.end, (i.end - i.start).astype(np.float64), i.core


def _wait_time(i: Instances) -> tuple[np.ndarray, ...]:
    return i.start, i.end, ((i.end - i.start) - i.execution).astype(np.float64), i.core


def _preemptions(i: Instances) -> tuple[np.ndarray, ...]:
    return i.start, i.end, i.preemptions.astype(np.float64), i.core


def _ready_latency(i: Instances) -> tuple[np.ndarray, ...]:
    r = i.from_ready
    return i.start[r], i.first[r], (i.first - i.start)[r].astype(float), i.core[r]


def _period_ready(i: Instances) -> tuple[np.ndarray, ...]:
    both = i.from_ready[1:] & i.from_ready[:-1]
    s0, s1 = i.start[:-1][both], i.start[1:][both]
    return s0, s1, (s1 - s0).astype(float), i.core[1:][both]


def _period_start(i: Instances) -> tuple[np.ndarray, ...]:
    return i.first[:-1], i.first[1:], np.diff(i.first).astype(float), i.core[1:]


def _separation(i: Instances) -> tuple[np.ndarray, ...]:
    return i.end[:-1], i.start[1:], (i.start[1:] - i.end[:-1]).astype(float), i.core[1:]


#: a task's per-instance series: name suffix, unit, (start, end, value, core) of the instances
INSTANCE_SERIES: tuple[tuple[str, str, Callable[[Instances], tuple[np.ndarray, ...]]], ...] = (
    ("exec_time", "ns", _exec_time),
    ("response_time", "ns", _response_time),
    ("wait_time", "ns", _wait_time),
    ("preemptions", "count", _preemptions),
    ("ready_latency", "ns", _ready_latency),
)
#: the series of consecutive instances (made when a task has two instances or more): the same shape
PAIR_SERIES: tuple[tuple[str, str, Callable[[Instances], tuple[np.ndarray, ...]]], ...] = (
    ("period.ready", "ns", _period_ready),
    ("period.start", "ns", _period_start),
    ("separation", "ns", _separation),
)


_NONE = -(2**62)
#: per-instance columns: start, end, from_ready, first switch-in, its core, switch-ins, running time
_COLS = 7


class TaskState:
    """Carried state of one task, and its instances so far (int64 columns, 56 bytes each)."""

    def __init__(self) -> None:
        self.open: list[int] | None = None  #: [start, from_ready, run_at_start, first, core, n_sw]
        self.last_end = _NONE
        self.after: list[int] | None = None  #: first switch-in since last_end: [ts, core, run_at, n_sw]
        self.parts = Parts(width=_COLS)  #: one column per instance (on disk while spilling)

    def feed(self, ready: np.ndarray, done: np.ndarray, sw: np.ndarray, sw_core: np.ndarray,
             running: Callable[[np.ndarray], np.ndarray]) -> None:
        """One chunk's ready, done and switch-in times of this task (sorted); ``running(t)`` = the
        task's running time since the recording's start at times ``t`` inside the chunk."""

        def run_at(t: int) -> int:
            return int(running(np.array([t], np.int64))[0])

        t = np.concatenate((ready, done))
        what = np.concatenate((np.zeros(ready.size, np.int8), np.ones(done.size, np.int8)))
        order = np.lexsort((what, t))
        rows: list[list[int]] = []  # the 7 columns; running time at the start, or None: ask at `ask`
        ask: list[int] = []
        carried = self.open is not None
        changed = False
        for tt, w in zip(t[order].tolist(), what[order].tolist()):
            if w == 0:
                if self.open is None:
                    self.open = [tt, 1, None, _NONE, -1, 0]  # type: ignore[list-item]
                    carried = False
                continue
            n_le = int(np.searchsorted(sw, tt, side="right"))  # switch-ins of the chunk up to tt
            if self.open is not None:
                start, by_ready, r0, first, core, n = self.open
                if carried:
                    n += n_le
                    if first == _NONE and sw.size:
                        first, core = int(sw[0]), int(sw_core[0])
                else:
                    k0 = int(np.searchsorted(sw, start, side="left"))
                    n = n_le - k0
                    if k0 < sw.size:
                        first, core = int(sw[k0]), int(sw_core[k0])
                rows.append([start, tt, by_ready, first, core, n, r0])
                ask.append(start)
            elif self.after is not None:  # the first switch-in since the last end is in an earlier chunk
                a_ts, a_core, a_run, a_n = self.after
                rows.append([a_ts, tt, 0, a_ts, a_core, a_n + n_le, a_run])
                ask.append(a_ts)
            else:
                lo = int(np.searchsorted(sw, self.last_end, side="right"))
                if lo < sw.size and sw[lo] <= tt:
                    s0 = int(sw[lo])
                    rows.append([s0, tt, 0, s0, int(sw_core[lo]), n_le - lo, None])  # type: ignore[list-item]
                    ask.append(s0)
            self.open, self.after, self.last_end, changed = None, None, tt, True
        if self.open is not None and self.open[2] is None:
            self.open[2] = run_at(self.open[0])  # carried: its start's running time, asked now
        self._carry(sw, sw_core, run_at, carried, changed)
        if rows:
            cols = np.array([r[:6] for r in rows], np.int64)
            # running time over each instance: at its end minus at its start (asked in one call)
            at_end = running(cols[:, 1])
            at_start = np.array([r[6] if r[6] is not None else -1 for r in rows], np.int64)
            unknown = np.array([r[6] is None for r in rows])
            if unknown.any():
                at_start[unknown] = running(np.array(ask, np.int64)[unknown])
            self.parts.append(np.column_stack((cols, at_end - at_start)).T)

    def _carry(self, sw: np.ndarray, sw_core: np.ndarray, run_at: Callable[[int], int], carried: bool,
               changed: bool) -> None:
        if self.open is not None:
            o = self.open
            k0 = 0 if carried else int(np.searchsorted(sw, o[0], side="left"))
            o[5] += sw.size - k0
            if o[3] == _NONE and k0 < sw.size:
                o[3], o[4] = int(sw[k0]), int(sw_core[k0])
        if self.after is not None and not changed:
            self.after[3] += sw.size
        else:
            lo = int(np.searchsorted(sw, self.last_end, side="right"))
            self.after = None if lo >= sw.size else [int(sw[lo]), int(sw_core[lo]), run_at(int(sw[lo])),
                                                      sw.size - lo]

    def add_series(self, label: str, gaps: Any, drop_log: Any, parts: TableParts) -> None:
        """``_task_series``' series, OVERFLOW gaps applied, handed to ``parts`` one at a time in
        their order, each made batch by batch from the instances (:meth:`.spill.Parts.batches`:
        never whole in memory while spilling); the instances are let go of after."""
        never = ran = 0
        for (n,) in self.parts.batches([5]):
            got = int(np.count_nonzero(n > 0))
            ran, never = ran + got, never + n.size - got
        drop_log.add(f"{label}.exec_time", "never_ran", count=never)
        if ran:
            for name, unit, make in INSTANCE_SERIES:
                parts.add_batches(self._pieces(f"{label}.{name}", unit, make, False, gaps, drop_log))
            for name, unit, make in PAIR_SERIES if ran > 1 else ():
                parts.add_batches(self._pieces(f"{label}.{name}", unit, make, True, gaps, drop_log))
        self.parts.clear()

    def _pieces(self, metric: str, unit: str, make: Callable[[Instances], tuple[np.ndarray, ...]],
                pairs: bool, gaps: Any, drop_log: Any) -> Iterator[Series]:
        """One series, a batch of instances at a time; a series of consecutive instances (``pairs``)
        gets the previous batch's last instance in front of each batch."""
        drops, prev = GapDrops(metric, gaps), None
        for batch in self._ran():
            if pairs and prev is not None:
                batch = Instances(*(np.concatenate((a, b)) for a, b in zip(prev, batch)))
            if batch.start.size:
                prev = Instances(*(a[-1:] for a in batch))
            s, e, v, c = make(batch)
            keep = drops.keep(s, e)
            yield Series(metric, unit, s[keep], e[keep], v[keep], core=c[keep])
        drops.log(drop_log)

    def _ran(self) -> Iterator[Instances]:
        """The instances that ran, a batch at a time."""
        for start, end, from_ready, first, core, n, run in self.parts.batches():
            ran = n > 0
            yield Instances(start[ran], end[ran], first[ran], core[ran], run[ran].astype(np.float64),
                            n[ran] - 1, from_ready[ran].astype(bool))
