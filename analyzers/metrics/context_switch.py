"""Context-switch time: a task's yield call until the next task runs.

Metrics (ids used in every output):

- ``ctx_switch.yield`` — site ``ctx.yield`` to the next site ``ctx.switch_in`` (the first
  instruction of the task that runs next). Measured on both sources; cross-validated.
- ``ctx_switch.yield.to_switch_in`` — trace only: site ``ctx.yield`` to the kernel's next
  ``TASK_SWITCH_IN`` event (SystemView TASK_START_EXEC); in a trace without switch events
  (TraceX), to the first event recorded by another task ("next context").
- ``ctx_switch.preempt.isr_to_task`` — trace only: ``ISR_TO_SCHED`` (an interrupt exits into the
  scheduler) to the ``TASK_SWITCH_IN`` it caused on the same core — a preemptive switch, where the
  trace records one (an exit after which the core idles or the interrupted task runs on is none).

One reducer (:class:`ContextSwitchStream`) over a recording's chunks, a whole recording being one chunk
(:func:`context_switch_times`). Per candidate site row (``SiteAccumulator.candidates``, the rows a
``ctx.yield`` can be) two times are kept, aligned with the site accumulator's rows: the first
``TASK_SWITCH_IN`` at or after it, and, for a row recorded in task context, the first later
task-context row whose task differs from the task row before it (TraceX's "next context"). Carried:
the rows still waiting for either (patched in when a later chunk has the answer) and the task of the
last task-context row; the preemptions come from :class:`.sched.CausedSwitchIn`. What grows: 16 bytes
per candidate row, on disk while spilling (:mod:`.spill`). A logic capture has only its site
intervals (:func:`analyze`).

``n_tasks`` (run.json ``options.CT_NTASKS``) is carried in the summary so a campaign can tabulate
the switch time per number of tasks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from ..sites import TRACEX_USER_BASE, SiteEvents, is_logic, load_sites, site_by_name, site_events
from .base import (
    Result,
    Series,
    Summary,
    TableParts,
    make_table,
    pair_next,
    site_interval,
    site_interval_batches,
    summary_fields,
    with_next,
)
from .occurrences import GapTracker, SiteAccumulator
from .sched import NONE, CausedSwitchIn
from .spill import Parts
from .stats import DropLog, GapDrops, drop_gap_instances

YIELD = "ctx_switch.yield"
YIELD_TO_SWITCH_IN = "ctx_switch.yield.to_switch_in"
PREEMPT = "ctx_switch.preempt.isr_to_task"
METRICS = (YIELD, YIELD_TO_SWITCH_IN, PREEMPT)
K = EventKind


@dataclass(frozen=True)
class ContextSwitchSummary(Summary):
    n_tasks: int | None = None


def context_switch_times(
    trace: Trace, *, sites: Sequence[Any] | None = None, n_tasks: int | None = None
) -> Result:
    """Context-switch instances of a whole trace or logic capture: per-instance rows
    (``analyzers.metrics.table_schema.INSTANCE_COLUMNS``) and a :class:`ContextSwitchSummary`."""
    sites = tuple(sites) if sites is not None else load_sites()
    if is_logic(trace):
        return analyze(trace, sites, {"CT_NTASKS": n_tasks})
    gaps = GapTracker()
    occ, sched = SiteAccumulator(gaps), CausedSwitchIn()
    ctx = ContextSwitchStream(sched)
    gaps.feed(trace)
    occ.feed(trace)
    sched.feed(trace.held(), 0)
    ctx.feed(trace)
    return ctx.finish(trace, sites, occ, occ.finish(trace, sites), n_tasks)


def analyze(trace: Trace, sites: Sequence[Any], options: dict[str, Any], store: Any = None) -> Result:
    """A logic capture's context switches: its site intervals (a trace's: :class:`ContextSwitchStream`);
    ``store``: the source's spill, or None (in memory)."""
    if not is_logic(trace):
        raise ValueError("a trace's context switches come from ContextSwitchStream (context_switch_times)")
    drop_log = DropLog()
    s, _ = site_interval(YIELD, site_events(trace, sites), "ctx.yield", "ctx.switch_in", drop_log)
    series = [s] if len(s) else []
    n = options.get("CT_NTASKS")
    summary = ContextSwitchSummary(source="logic", n_tasks=int(n) if n is not None else None,
                                   **summary_fields(series, drop_log))
    return Result(make_table(series, "logic", store), summary)


class _Filler:
    """One value per candidate row (:class:`.spill.Parts`); the rows without an answer yet wait
    in ``pending`` (their indices) and are patched when it comes."""

    def __init__(self, store: Any = None) -> None:
        self.parts = Parts(store=store)
        self.pending: list[np.ndarray] = []

    def add(self, values: np.ndarray, waiting: np.ndarray) -> None:
        first = self.parts.append(values)
        if waiting.size:
            self.pending.append(waiting.astype(np.int64) + first)

    def resolve(self, value: int) -> None:
        if self.pending:
            self.parts.patch(np.concatenate(self.pending), value)
        self.pending = []

    def column(self) -> np.ndarray:
        return self.parts.concat()


class ContextSwitchStream:
    def __init__(self, sched: CausedSwitchIn, store: Any = None) -> None:
        self.sched = sched
        self.store = store  #: the source's spill (:class:`.spill.Spill`), or None: in memory
        self.next_sw = _Filler(store)  #: first switch-in ts >= the row's ts
        self.next_ctx = _Filler(store)  #: next task-context change ts (task-context rows only)
        self.prev_task: int | None = None  #: task of the last task-context row
        self.task_rows = 0

    def feed(self, trace: Trace, cand: np.ndarray | None = None) -> None:
        """One chunk; ``cand``: its candidate site rows when already found
        (``SiteAccumulator.last_rows``)."""
        ev = trace.held()  # rows or columns, whichever the chunk holds
        if not len(ev):
            return
        kind, ts = ev["kind"], ev["ts"].astype(np.int64, copy=False)
        cand = SiteAccumulator.candidates(ev) if cand is None else cand
        # first switch-in at or after each candidate
        sw_ts = ts[kind == K.TASK_SWITCH_IN]
        if sw_ts.size:
            self.next_sw.resolve(int(sw_ts[0]))
        j = np.searchsorted(sw_ts, ts[cand], side="left")
        got = j < sw_ts.size
        self.next_sw.add(np.where(got, sw_ts[np.minimum(j, max(sw_ts.size - 1, 0))] if sw_ts.size else NONE,
                                  NONE).astype(np.int64), np.flatnonzero(~got))
        # next change of task context after each task-context candidate
        task = np.flatnonzero(ev["ctx_type"] == CtxType.TASK)
        self.task_rows += task.size
        cid = ev["ctx_id"][task].astype(np.int64)
        prev = np.concatenate(([self.prev_task if self.prev_task is not None else 0], cid[:-1]))
        change = task[cid != prev]
        if self.prev_task is None and task.size:
            change = change[change != task[0]]  # the recording's first task row changes nothing
        if change.size:
            self.next_ctx.resolve(int(ts[change[0]]))
        if task.size:
            self.prev_task = int(cid[-1])
        in_task = ev["ctx_type"][cand] == CtxType.TASK
        k = np.searchsorted(change, cand, side="right")
        got = (k < change.size) & in_task
        val = np.full(cand.size, NONE, np.int64)
        val[got] = ts[change[k[got]]]
        self.next_ctx.add(val, np.flatnonzero(in_task & ~got))

    def _next_context(self, occ: SiteAccumulator, sites: Sequence[Any]) -> np.ndarray:
        """Sorted unique next-context times of the task-context yields (TraceX: no switch events)."""
        s = site_by_name(sites, "ctx.yield")
        if s is None or not self.task_rows:
            return np.zeros(0, np.int64)
        key, kind = occ.key.concat(), occ.kind.concat()
        is_y = ((kind == K.MARK) & (key == s.id)) | ((kind == K.USER) & (key == TRACEX_USER_BASE + s.id))
        nc = self.next_ctx.column()
        return np.unique(nc[is_y & (nc != NONE)])

    def finish(self, last: Trace, sites: Sequence[Any], occ: SiteAccumulator, se: SiteEvents,
               n_tasks: int | None) -> Result:
        """The recording's result (the series from switch-ins made batch by batch: never whole
        in memory while spilling)."""
        drop_log = DropLog()
        parts = TableParts("trace", self.store)
        parts.add_batches(site_interval_batches(YIELD, se, "ctx.yield", "ctx.switch_in", drop_log))
        if self.sched.switch_ins:
            if se.count("ctx.yield"):
                parts.add_batches(self._yield_to_switch_in(last, sites, occ, se.count("ctx.yield"), se.gaps,
                                                           drop_log))
        else:
            b = self._next_context(occ, sites)
            yld = se.times("ctx.yield")
            if b.size and yld.size:
                ia, jb, unmatched = pair_next(yld, b)
                start, end = yld[ia], b[jb]
                drop_log.add(YIELD_TO_SWITCH_IN, "no_end_event", count=unmatched)
                keep = drop_gap_instances(YIELD_TO_SWITCH_IN, start, end, se.gaps, drop_log)
                dur = (end[keep] - start[keep]).astype(np.float64)
                parts.add([Series(YIELD_TO_SWITCH_IN, "ns", start[keep], end[keep], dur, "ctx.yield",
                                  ia[keep])])
        if self.sched.to_sched and self.sched.switch_ins:
            parts.add_batches(self._preemptions(se.gaps, drop_log))
        summary = ContextSwitchSummary(source="trace", n_tasks=n_tasks, **parts.summary_fields(drop_log))
        return Result(parts.table(), summary)

    def _yield_to_switch_in(self, last: Trace, sites: Sequence[Any], occ: SiteAccumulator, n_yields: int,
                            gaps: Any, drop_log: DropLog) -> Iterator[Series]:
        """Each yield to the first switch-in at or after it, when that comes before the next
        yield (``pair_next``), a batch of candidate rows at a time (the yields' times too: those
        of the ``n_yields`` ctx.yield occurrences, never all at once)."""
        if not len(occ.key) == len(occ.kind) == len(occ.ts) == len(self.next_sw.parts):
            raise RuntimeError("the candidate rows of the sites and of the switch-ins differ in number")
        drops, seen, matched = GapDrops(YIELD_TO_SWITCH_IN, gaps), 0, 0
        for (yts, e), nxt in with_next(self._yields(last, sites, occ), key=lambda b: b[0]):
            ia = np.flatnonzero((e != NONE) & (e < nxt)).astype(np.int64)
            start, end = yts[ia], e[ia]
            keep = drops.keep(start, end)
            yield Series(YIELD_TO_SWITCH_IN, "ns", start[keep], end[keep],
                         (end[keep] - start[keep]).astype(np.float64), "ctx.yield", (ia + seen)[keep])
            seen, matched = seen + e.size, matched + ia.size
        if seen != n_yields:
            raise RuntimeError(f"{seen} ctx.yield candidate rows, {n_yields} ctx.yield occurrences")
        drop_log.add(YIELD_TO_SWITCH_IN, "no_end_event", count=seen - matched)
        drops.log(drop_log)

    def _yields(self, last: Trace, sites: Sequence[Any], occ: SiteAccumulator) -> Iterator[tuple[Any, Any]]:
        """Per batch of candidate rows with a ctx.yield: its yields' times and, for each, the
        first switch-in at or after it."""
        for ts, key, kind, e in zip(occ.ts.batches(), occ.key.batches(), occ.kind.batches(),
                                    self.next_sw.parts.batches()):
            sel = occ.select(key, kind, last, sites, "ctx.yield")["ctx.yield"]
            if sel.any():
                yield ts[sel], e[sel]

    def _preemptions(self, gaps: Any, drop_log: DropLog) -> Iterator[Series]:
        """Each ``ISR_TO_SCHED`` to the switch-in it caused, a batch at a time (row order)."""
        no_end, drops = 0, GapDrops(PREEMPT, gaps)
        for _, t, hit in self.sched.batches():
            ok = hit != NONE
            no_end += int(np.count_nonzero(~ok))
            start, end = t[ok], hit[ok]
            keep = drops.keep(start, end)
            start, end = start[keep], end[keep]
            yield Series(PREEMPT, "ns", start, end, (end - start).astype(np.float64))
        drop_log.add(PREEMPT, "no_end_event", count=no_end)
        drops.log(drop_log)
