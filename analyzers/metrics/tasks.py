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

    def __init__(self, store: Any = None) -> None:
        self.open: list[int] | None = None  #: [start, from_ready, run_at_start, first, core, n_sw]
        self.last_end = _NONE
        self.after: list[int] | None = None  #: first switch-in since last_end: [ts, core, run_at, n_sw]
        self.parts = Parts(width=_COLS, store=store)  #: one column per instance (on disk while spilling)

    def feed(self, ready: np.ndarray, done: np.ndarray, sw: np.ndarray, sw_core: np.ndarray,
             running: Callable[[np.ndarray], np.ndarray]) -> None:
        """One chunk's ready, done and switch-in times of this task (sorted); ``running(t)`` = the
        task's running time since the recording's start at times ``t`` inside the chunk.

        Column-wise over the chunk's events (a ready before a done at the same time): a done closes
        the open instance, which starts at the first ready after the previous done (the carried one
        for the chunk's first done); a done with nothing open closes the instance from the first
        switch-in since the previous done, if that came before it."""

        def run_at(t: int) -> int:
            return int(running(np.array([t], np.int64))[0])

        t = np.concatenate((ready, done)).astype(np.int64, copy=False)
        what = np.concatenate((np.zeros(ready.size, np.int8), np.ones(done.size, np.int8)))
        order = np.lexsort((what, t))
        tt, is_done = t[order], what[order] == 1
        d = np.flatnonzero(is_done)  # the dones, in order; segment k: the events after done k-1, to done k
        # the first ready at or after each position (len: none)
        pos = np.where(is_done, tt.size, np.arange(tt.size))
        nxt = np.minimum.accumulate(np.append(pos, tt.size)[::-1])[::-1]
        carried = self.open is not None
        if d.size:
            self._close(tt, d, nxt, carried, sw, sw_core, running)
        # the segment after the last done (all of them when there is none) opens an instance with a ready
        first_ready = int(nxt[int(d[-1]) + 1 if d.size else 0])
        if d.size or not carried:
            self.open = None
            if first_ready < tt.size:
                self.open = [int(tt[first_ready]), 1, None, _NONE, -1, 0]  # type: ignore[list-item]
        carried = carried and not d.size
        if self.open is not None and self.open[2] is None:
            self.open[2] = run_at(self.open[0])  # carried: its start's running time, asked now
        self._carry(sw, sw_core, run_at, carried, bool(d.size))

    def _close(self, tt: np.ndarray, d: np.ndarray, nxt: np.ndarray, carried: bool, sw: np.ndarray,
               sw_core: np.ndarray, running: Callable[[np.ndarray], np.ndarray]) -> None:
        """The instances the dones ``tt[d]`` close (:meth:`feed`), appended; the state after them."""
        end = tt[d]
        n_le = np.searchsorted(sw, end, side="right")  # switch-ins of the chunk up to each done
        seg0 = np.concatenate(([0], d[:-1] + 1))
        fr = nxt[seg0]
        opened = fr < d  # a ready in the segment opened the instance this done closes
        start = np.where(opened, tt[np.minimum(fr, tt.size - 1)], _NONE)
        k0 = np.searchsorted(sw, start, side="left")
        has = k0 < sw.size
        kk = np.minimum(k0, max(sw.size - 1, 0))
        first = np.where(has, sw[kk] if sw.size else _NONE, _NONE)
        core = np.where(has, sw_core[kk] if sw.size else -1, -1)
        by_ready = opened.astype(np.int64)
        n = n_le - k0
        r0 = np.full(d.size, -1, np.int64)
        known = np.zeros(d.size, bool)  # running time at the start known (else asked at `start`)
        # nothing open: from the first switch-in since the previous done, if it came before this one
        prev_end = np.concatenate(([self.last_end], end[:-1]))
        lo = np.searchsorted(sw, prev_end, side="right")
        lo_c = np.minimum(lo, max(sw.size - 1, 0))
        from_sw = ~opened & (lo < sw.size) & (sw[lo_c] <= end if sw.size else False)
        s0 = sw[lo_c] if sw.size else np.zeros(d.size, np.int64)
        start, first = np.where(from_sw, s0, start), np.where(from_sw, s0, first)
        core = np.where(from_sw, sw_core[lo_c] if sw.size else -1, core)
        n = np.where(from_sw, n_le - lo, n)
        valid = opened | from_sw
        if carried:  # the chunk's first done closes the carried instance
            o_start, o_by, o_r0, o_first, o_core, o_n = self.open  # type: ignore[misc]
            if o_first == _NONE and sw.size:
                o_first, o_core = int(sw[0]), int(sw_core[0])
            start[0], by_ready[0], first[0], core[0] = o_start, o_by, o_first, o_core
            n[0], r0[0], known[0], valid[0] = o_n + n_le[0], o_r0, True, True
        elif self.after is not None and not opened[0]:  # its first switch-in came in an earlier chunk
            a_ts, a_core, a_run, a_n = self.after
            start[0], by_ready[0], first[0], core[0] = a_ts, 0, a_ts, a_core
            n[0], r0[0], known[0], valid[0] = a_n + n_le[0], a_run, True, True
        self.open, self.after, self.last_end = None, None, int(end[-1])
        if not valid.any():
            return
        v = np.flatnonzero(valid)
        at_start = r0[v]
        ask = ~known[v]
        if ask.any():
            at_start[ask] = running(start[v][ask])
        # running time over each instance: at its end minus at its start
        cols = np.stack([start[v], end[v], by_ready[v], first[v], core[v], n[v],
                         running(end[v]) - at_start]).astype(np.int64)
        self.parts.append(cols)

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
