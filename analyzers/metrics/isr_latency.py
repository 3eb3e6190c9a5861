"""Interrupt latency: ISR entry until the woken task runs, and ISR duration.

Metrics:

- ``isr.to_task.latency`` — site ``isr.enter`` (first instruction of the test ISR) to the next site
  ``isr.task_wake`` (the woken task's first instruction after its wait). Both sources;
  cross-validated.
- ``isr.to_task.switch_in`` — trace only: kernel ``ISR_ENTER`` of the test IRQ to the
  ``TASK_SWITCH_IN`` its exit into the scheduler (``ISR_TO_SCHED``) caused on the same core.
- ``isr.duration`` — trace only: ``ISR_ENTER`` to the next ``ISR_EXIT``/``ISR_TO_SCHED`` of the test
  IRQ (``irq``; by default the IRQ that was running when the ``isr.enter`` site fired, or the
  trace's only IRQ). Without a test IRQ there is none: every interrupt's own duration is a kernel metric
  (``isr.<name>.duration``, :mod:`analyzers.metrics.kernel`), never all of them pooled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from ..sites import Site, is_logic, load_sites, site_by_name, site_events
from .base import Result, Series, Summary, make_table, site_interval, summary_fields
from .sched import caused_switch_in
from .stats import DropLog, drop_gap_instances

LATENCY = "isr.to_task.latency"
SWITCH_IN = "isr.to_task.switch_in"
DURATION = "isr.duration"
METRICS = (LATENCY, SWITCH_IN, DURATION)


@dataclass(frozen=True)
class IsrSummary(Summary):
    irq: int | None = None


def test_irq(trace: Trace, sites: Sequence[Site]) -> int | None:
    """The IRQ running when the ``isr.enter`` site fired (most common), if the trace says."""
    s = site_by_name(sites, "isr.enter")
    if s is None:
        return None
    marks = trace.columns.take(np.flatnonzero(trace.columns["kind"] == EventKind.MARK))
    sel = (marks["marker"] == s.id) & (marks["ctx_type"] == CtxType.ISR)
    if not sel.any():
        return None
    vals, cnt = np.unique(marks["ctx_id"][sel], return_counts=True)
    return int(vals[np.argmax(cnt)])


def _first_exit_at_depth(entries: np.ndarray, outer: np.ndarray, exits: np.ndarray,
                         depth: np.ndarray) -> np.ndarray:
    """For each entry index, the first exit index after it whose nesting depth (after the exit)
    is ``outer`` — the exit of that ISR, not of one nested in it; -1 where there is none.

    >>> d = np.array([1, 2, 1, 0])        # enter, nested enter, nested exit, exit
    >>> _first_exit_at_depth(np.array([0, 1]), np.array([0, 1]), np.array([2, 3]), d).tolist()
    [3, 2]
    """
    if entries.size == 0 or exits.size == 0:
        return np.full(entries.size, -1, dtype=np.int64)
    lo = int(min(depth[exits].min(), outer.min()))
    span = int(max(depth.size, entries.max() + 1, exits.max() + 1)) + 1
    d_ex = depth[exits].astype(np.int64) - lo
    order = np.lexsort((exits, d_ex))  # by depth, then position
    ex_sorted, d_sorted = exits[order].astype(np.int64), d_ex[order]
    key = d_sorted * span + ex_sorted
    q = (outer.astype(np.int64) - lo) * span + entries.astype(np.int64)
    pos = np.searchsorted(key, q, side="right")
    ok = pos < key.size
    ok[ok] &= d_sorted[pos[ok]] == outer[ok].astype(np.int64) - lo
    out = np.full(entries.size, -1, dtype=np.int64)
    out[ok] = ex_sorted[pos[ok]]
    return out


def isr_to_task_latency(
    trace: Trace, *, sites: Sequence[Site] | None = None, irq: int | None = None
) -> Result:
    """ISR-to-task latency and ISR duration of a trace or a logic capture."""
    sites = tuple(sites) if sites is not None else load_sites()
    se = site_events(trace, sites)
    drop_log = DropLog()
    series: list[Series] = []
    s, _ = site_interval(LATENCY, se, "isr.enter", "isr.task_wake", drop_log)
    series.append(s)
    if not is_logic(trace) and len(trace):
        ev = trace.columns
        # each column read once: strided reads of the event records are the slow part
        kind, ts = np.ascontiguousarray(ev["kind"]), ev["ts"].astype(np.int64)
        if irq is None:
            irq = test_irq(trace, sites)
        if irq is None:  # a trace with one interrupt only: that is the one
            ids = np.unique(ev["ctx_id"][kind == EventKind.ISR_ENTER])
            irq = int(ids[0]) if ids.size == 1 else None
        # without a test IRQ there is no one ISR to time: per-IRQ durations are kernel metrics
        # (analyzers.metrics.kernel, isr.<name>.duration), never every interrupt pooled
        enter = (kind == EventKind.ISR_ENTER) & (ev["ctx_id"] == irq if irq is not None else False)
        exits = (kind == EventKind.ISR_EXIT) | (kind == EventKind.ISR_TO_SCHED)
        if enter.any() and exits.any():
            # every ISR exit, so a nested ISR's exit does not end the outer one: pair each entry
            # with the first exit at the same nesting depth
            a = np.flatnonzero(enter)
            depth = np.cumsum((kind == EventKind.ISR_ENTER).astype(np.int64) - exits)
            hit = _first_exit_at_depth(a, depth[a] - 1, np.flatnonzero(exits), depth)
            found = hit >= 0
            for i in a[~found].tolist():
                drop_log.add(DURATION, "no_end_event", int(ts[i]), -1)
            st, en = ts[a[found]], ts[hit[found]]
            sched = kind[hit[found]] == EventKind.ISR_TO_SCHED
            keep = drop_gap_instances(DURATION, st, en, se.gaps, drop_log)
            series.append(Series(DURATION, "ns", st[keep], en[keep], (en - st)[keep].astype(np.float64)))
            if sched.any():
                # the switch-in the ISR's exit into the scheduler caused on its core
                sw = caused_switch_in(ev, hit[found][sched])
                ok = sw >= 0
                drop_log.add(SWITCH_IN, "no_end_event", count=int(np.count_nonzero(~ok)))
                s0, s1 = st[sched][ok], ts[sw[ok]]
                keep = drop_gap_instances(SWITCH_IN, s0, s1, se.gaps, drop_log)
                series.append(Series(SWITCH_IN, "ns", s0[keep], s1[keep], (s1 - s0)[keep].astype(np.float64)))
    series = [s for s in series if len(s)]
    source = "logic" if is_logic(trace) else "trace"
    summary = IsrSummary(source=source, irq=irq, **summary_fields(series, drop_log))
    return Result(make_table(series, source), summary)


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any]) -> Result:
    irq = options.get("CT_TEST_IRQ")
    return isr_to_task_latency(trace, sites=sites, irq=int(irq) if irq is not None else None)
