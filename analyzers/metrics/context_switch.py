"""Context-switch time: a task's yield call until the next task runs.

Metrics (ids used in every output):

- ``ctx_switch.yield`` — site ``ctx.yield`` to the next site ``ctx.switch_in`` (the first
  instruction of the task that runs next). Measured on both sources; cross-validated.
- ``ctx_switch.yield.to_switch_in`` — trace only: site ``ctx.yield`` to the kernel's next
  ``TASK_SWITCH_IN`` event (SystemView TASK_START_EXEC); in a trace without switch events
  (TraceX), to the first event recorded by another task ("next context",
  :func:`next_context_times`).
- ``ctx_switch.preempt.isr_to_task`` — trace only: ``ISR_TO_SCHED`` (an interrupt exits into the
  scheduler) to the ``TASK_SWITCH_IN`` it caused on the same core — a preemptive switch, where the
  trace records one (an exit after which the core idles or the interrupted task runs on is none).

``n_tasks`` (run.json ``options.CT_NTASKS``) is carried in the summary so a campaign can tabulate
the switch time per number of tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from ..sites import TRACEX_USER_BASE, Site, is_logic, load_sites, site_events
from .base import (
    Result,
    Series,
    Summary,
    make_table,
    pair_next,
    site_interval,
    summary_fields,
)
from .sched import caused_switch_in
from .stats import DropLog, drop_gap_instances

YIELD = "ctx_switch.yield"
YIELD_TO_SWITCH_IN = "ctx_switch.yield.to_switch_in"
PREEMPT = "ctx_switch.preempt.isr_to_task"
METRICS = (YIELD, YIELD_TO_SWITCH_IN, PREEMPT)


@dataclass(frozen=True)
class ContextSwitchSummary(Summary):
    n_tasks: int | None = None


def next_context_times(trace: Trace, sites: Sequence[Site]) -> np.ndarray:
    """For each ``ctx.yield`` site event: the time of the first later event recorded in a task
    context other than the yielding task's (TraceX has no switch event; its records carry the
    running thread). Returns sorted times, one per yield that has such an event."""
    from ..sites import site_by_name

    s = site_by_name(sites, "ctx.yield")
    ev = trace.columns
    task = ev["ctx_type"] == CtxType.TASK
    if s is None or not task.any():
        return np.zeros(0, np.int64)
    idx = np.flatnonzero(task)
    cid = ev["ctx_id"][idx]
    # position of the next change of task context within the task-event subsequence
    change = np.flatnonzero(cid[1:] != cid[:-1]) + 1
    is_y = (ev["kind"][idx] == EventKind.MARK) & (ev["marker"][idx] == s.id)
    is_y |= (ev["kind"][idx] == EventKind.USER) & (ev["src_id"][idx] == TRACEX_USER_BASE + s.id)
    pos = np.flatnonzero(is_y)
    k = np.searchsorted(change, pos, side="right")
    ok = k < change.size
    return np.unique(ev["ts"][idx[change[k[ok]]]].astype(np.int64))


def context_switch_times(
    trace: Trace, *, sites: Sequence[Site] | None = None, n_tasks: int | None = None
) -> Result:
    """Context-switch instances of a trace or a logic capture.

    Returns ``(table, summary)``: per-instance rows (``analyzers.metrics.table_schema.INSTANCE_COLUMNS``)
    and a :class:`ContextSwitchSummary`.
    """
    sites = tuple(sites) if sites is not None else load_sites()
    se = site_events(trace, sites)
    drop_log = DropLog()
    series: list[Series] = []
    s, _ = site_interval(YIELD, se, "ctx.yield", "ctx.switch_in", drop_log)
    series.append(s)
    if not is_logic(trace):
        ev = trace.columns
        kind = ev["kind"]
        ts = ev["ts"]
        switch_in = kind == EventKind.TASK_SWITCH_IN
        yld = se.times("ctx.yield")
        b = ts[switch_in].astype(np.int64) if switch_in.any() else next_context_times(trace, sites)
        if b.size and yld.size:
            ia, jb, unmatched = pair_next(yld, b)
            drop_log.add(YIELD_TO_SWITCH_IN, "no_end_event", count=unmatched)
            start, end = yld[ia], b[jb]
            keep = drop_gap_instances(YIELD_TO_SWITCH_IN, start, end, se.gaps, drop_log)
            dur = (end[keep] - start[keep]).astype(np.float64)
            series.append(
                Series(YIELD_TO_SWITCH_IN, "ns", start[keep], end[keep], dur, "ctx.yield", ia[keep])
            )
        to_sched = kind == EventKind.ISR_TO_SCHED
        if to_sched.any() and switch_in.any():
            series.append(_preemptions(ev, to_sched, se.gaps, drop_log))
    series = [s for s in series if len(s)]
    source = "logic" if is_logic(trace) else "trace"
    summary = ContextSwitchSummary(source=source, n_tasks=n_tasks, **summary_fields(series, drop_log))
    return Result(make_table(series, source), summary)


def _preemptions(ev: np.ndarray, to_sched: np.ndarray, gaps: Any, drop_log: DropLog) -> Series:
    """``ISR_TO_SCHED`` to the switch-in it caused on the same core (:func:`caused_switch_in`);
    an exit after which the core idles or the interrupted task runs on caused no switch."""
    rows = np.flatnonzero(to_sched)
    hit = caused_switch_in(ev, rows)
    ok = hit >= 0
    drop_log.add(PREEMPT, "no_end_event", count=int(np.count_nonzero(~ok)))
    ts = ev["ts"]
    start, end = ts[rows[ok]].astype(np.int64), ts[hit[ok]].astype(np.int64)
    keep = drop_gap_instances(PREEMPT, start, end, gaps, drop_log)
    start, end = start[keep], end[keep]
    return Series(PREEMPT, "ns", start, end, (end - start).astype(np.float64))


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any]) -> Result:
    """Batch entry point (same signature in every analyzer module)."""
    n = options.get("CT_NTASKS")
    return context_switch_times(trace, sites=sites, n_tasks=int(n) if n is not None else None)
