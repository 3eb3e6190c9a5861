"""Kernel-event timing of any recording: per task, per ISR and per core, no markers needed.

Everything here comes from the RTOS's own events (SystemView ``TASK_START_READY``/``TASK_STOP_READY``/
``TASK_START_EXEC``/ISR events, TraceX thread resume/suspend and its derived switches), so it works
on third-party firmware. Definitions follow Percepio Tracealyzer's "actor instances" where it has
them (docs/your-firmware.md, "Kernel metrics"):

- a **task instance** runs from the task becoming ready (``TASK_READY``) to it blocking, suspending
  or terminating (``TASK_BLOCK``/``TASK_TERMINATE``); an instance whose ready event the trace does
  not hold (the recording started while it was ready) starts at its first switch-in, and has no
  ready latency;
- ``task.<name>.exec_time`` — CPU time the instance ran (on any core), interrupts excluded;
- ``task.<name>.response_time`` — ready to done; ``task.<name>.ready_latency`` — ready to the
  first switch-in; ``task.<name>.wait_time`` — response minus execution (ready but not running,
  or preempted by tasks and interrupts); ``task.<name>.preemptions`` — switch-ins after the first
  within the instance (count);
- ``task.<name>.period.ready`` / ``task.<name>.period.start`` — from one instance's ready (first
  switch-in) to the next's (Tracealyzer "periodicity"); ``task.<name>.separation`` — from one
  instance's end to the next one's ready;
- ``task.<name>.load`` — the task's share of one core (pct) per window (``CT_LOAD_WINDOW_NS``,
  default 1/50 of the recording), one instance per window and core;
- ``isr.<name>.duration`` — ISR_ENTER to its own exit (same core, same nesting depth);
  ``isr.<name>.to_task`` — ISR entry to the first switch-in of a task the ISR readied
  (``TASK_READY`` recorded inside it), with or without ``ISR_TO_SCHED``;
  ``isr.<name>.rate`` (per s), ``isr.<name>.nested`` (entries while another ISR ran) scalars;
- ``ctx_switch.count`` — switches from a *known* context to a different one (task or idle): the
  recording's first switch-in and the first after a data loss only establish the running context
  (``kstate.count_switches``), per core ``ctx_switch.count.core<N>`` on multi-core traces;
  ``ctx_switch.switch_time`` — ``TASK_SWITCH_OUT`` to the next switch-in on its core, where the
  trace records switch-outs;
- TraceX's own statistics (``tracex.context_switches``, ``tracex.thread_preemptions``, ...) as
  scalars for TraceX recordings (trace_parsers.tracex.stats, TraceX's "Performance Statistics").

Multi-core traces (SystemView multi-core files, ESP32 pairs, TraceX SMP) are charged per core (each
core its own running task and ISR stack) on one time axis: every instance has a ``core`` column.
Times are in the trace's clock (``ticks`` when the recording states no tick rate).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from ..sites import Site, is_logic
from .base import Result, Series, Summary, make_table, summary_fields
from .cpu_load import core_state, is_idle_name
from .kstate import (
    BY_LOSS,
    BY_SWITCH_IN,
    CLOSED_REASONS,
    OPEN,
    count_switches,
    is_loss,
    isr_entries,
    isr_rows,
)
from .stats import DropLog, drop_gap_instances, overflow_gaps

#: windows of the per-task load over time when CT_LOAD_WINDOW_NS is not given
DEFAULT_WINDOWS = 50


@dataclass(frozen=True)
class KernelSummary(Summary):
    cores: int = 1


@dataclass
class CoreTimeline:
    """Who owns one core from each scheduling event to the next (cpu_load's model)."""

    core: int
    ts: np.ndarray  #: event times
    owner: np.ndarray  #: label index per interval [ts[n], ts[n+1])
    labels: list[str]
    cum: dict[int, np.ndarray]  #: label index -> running time up to ts[n]

    def running(self, label: str, t: np.ndarray) -> np.ndarray:
        """Time ``label`` owned this core from the first event up to each time ``t``."""
        if label not in self.labels or self.ts.size == 0:
            return np.zeros(np.asarray(t).size, np.int64)
        code = self.labels.index(label)
        if code not in self.cum:
            dur = np.diff(self.ts, append=self.ts[-1])
            self.cum[code] = np.concatenate(([0], np.cumsum(np.where(self.owner == code, dur, 0))))
        t = np.asarray(t, dtype=np.int64)
        k = np.searchsorted(self.ts, t, side="right") - 1
        kk = np.maximum(k, 0)
        part = np.where(self.owner[kk] == code, t - self.ts[kk], 0)
        return np.where(k >= 0, self.cum[code][kk] + part, 0)


def timelines(trace: Trace) -> list[CoreTimeline]:
    """One :class:`CoreTimeline` per core that has scheduling events."""
    ev = trace.columns
    cores = sorted(np.unique(ev["core"]).tolist()) if trace.meta.cores > 1 else [0]
    out = []
    for c in cores:
        st = core_state(trace, None if len(cores) == 1 else c)
        if not st.kind.size:
            continue
        out.append(CoreTimeline(c, st.ts, st.owner, st.labels, {}))
    return out


def _task_label(trace: Trace, ctx_id: int) -> str:
    names = {t.ctx_id: t.name for t in trace.tasks}
    return f"task.{names.get(ctx_id, f'task#{ctx_id}')}"


def _instances(ready: np.ndarray, done: np.ndarray, sw: np.ndarray) -> tuple[np.ndarray, ...]:
    """Task instances from its ready, done (block/terminate) and switch-in times (sorted):
    ``(start, end, from_ready)``. Ready while an instance is open is ignored; a done with no open
    instance closes one started at the first switch-in since the previous done, if any."""
    t = np.concatenate((ready, done))
    what = np.concatenate((np.zeros(ready.size, np.int8), np.ones(done.size, np.int8)))
    order = np.lexsort((what, t))
    starts, ends, from_ready = [], [], []
    open_at: int | None = None
    last_end = None
    for tt, w in zip(t[order].tolist(), what[order].tolist()):
        if w == 0:
            if open_at is None:
                open_at, opened_by_ready = tt, True
            continue
        if open_at is None:  # done without a recorded ready: started at its first switch-in
            lo = np.searchsorted(sw, last_end if last_end is not None else -(2**62), side="right")
            if lo < sw.size and sw[lo] <= tt:
                open_at, opened_by_ready = int(sw[lo]), False
            else:
                last_end = tt
                continue
        starts.append(open_at)
        ends.append(tt)
        from_ready.append(opened_by_ready)
        open_at, last_end = None, tt
    return (np.array(starts, np.int64), np.array(ends, np.int64), np.array(from_ready, bool))


def _task_series(
    trace: Trace, tls: list[CoreTimeline], ctx_id: int, gaps: Any, drop_log: DropLog
) -> list[Series]:
    """The per-instance metrics of one task."""
    ev = trace.columns
    kind, ts = ev["kind"], ev["ts"].astype(np.int64)
    label = _task_label(trace, ctx_id)
    name = label[len("task.") :]
    sw_rows = np.flatnonzero((kind == EventKind.TASK_SWITCH_IN) & (ev["ctx_id"] == ctx_id))
    sw = ts[sw_rows]
    ready = ts[(kind == EventKind.TASK_READY) & (ev["target_id"] == ctx_id)]
    done_mask = (kind == EventKind.TASK_BLOCK) | (kind == EventKind.TASK_TERMINATE)
    done = ts[done_mask & (ev["target_id"] == ctx_id)]
    start, end, from_ready = _instances(ready, done, sw)
    if not start.size:
        return []
    k0 = np.searchsorted(sw, start, side="left")
    k1 = np.searchsorted(sw, end, side="right")
    ran = k1 > k0
    m = f"task.{name}"
    drop_log.add(f"{m}.exec_time", "never_ran", count=int(np.count_nonzero(~ran)))
    start, end, r, k0, k1 = start[ran], end[ran], from_ready[ran], k0[ran], k1[ran]
    if not start.size:
        return []
    first = sw[k0]
    core = ev["core"][sw_rows[k0]].astype(np.int64)
    execution = sum((tl.running(label, end) - tl.running(label, start) for tl in tls), np.zeros(start.size))
    out = instance_series(m, start, end, first, core, execution, k1 - k0 - 1, r)
    return [_without_gaps(x, gaps, drop_log) for x in out]


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


def instance_series(m: str, start: np.ndarray, end: np.ndarray, first: np.ndarray, core: np.ndarray,
                    execution: np.ndarray, preemptions: np.ndarray, from_ready: np.ndarray) -> list[Series]:
    """One task's instance series from its instances (ready or first start → done), the first
    switch-in of each, its core, its running time and its number of preemptions."""
    i = Instances(start, end, first, core, execution, preemptions, from_ready)
    kinds = INSTANCE_SERIES + (PAIR_SERIES if start.size > 1 else ())
    out = []
    for name, unit, make in kinds:
        s, e, v, c = make(i)
        out.append(Series(f"{m}.{name}", unit, s, e, v, core=c))
    return out


def _without_gaps(s: Series, gaps: Any, drop_log: DropLog) -> Series:
    """``s`` without the instances whose own interval touches a data-loss gap (logged)."""
    if not gaps:
        return s
    keep = drop_gap_instances(s.metric, s.start_ts, s.end_ts, gaps, drop_log)
    core = s.core[keep] if s.core is not None else None
    return Series(s.metric, s.unit, s.start_ts[keep], s.end_ts[keep], s.value[keep], core=core)


def _load_series(trace: Trace, tls: list[CoreTimeline], window_ns: int | None) -> list[Series]:
    """Per task and core: share of the core (pct) in consecutive windows."""
    ts = trace.columns["ts"]
    t0, t1 = int(ts[0]), int(ts[-1])
    w = int(window_ns) if window_ns else max((t1 - t0) // DEFAULT_WINDOWS, 1)
    edges = np.arange(t0, t1 + 1, w, dtype=np.int64)
    if edges.size < 2:
        return []
    out = []
    for tl in tls:
        for label in sorted(lb for lb in tl.labels if lb.startswith("task.")):
            busy = np.diff(tl.running(label, edges)).astype(np.float64)
            if not busy.any():
                continue
            core = np.full(busy.size, tl.core if trace.meta.cores > 1 else -1, np.int64)
            out.append(Series(f"{label}.load", "pct", edges[:-1], edges[1:], 100.0 * busy / w, core=core))
    return out


def log_closed(m: str, end: np.ndarray, st: np.ndarray, closed_ts: np.ndarray, core: np.ndarray,
               drop_log: DropLog) -> None:
    """Log the entries closed without their exit (:mod:`.kstate`): one row per entry a switch-in
    closed (the ISR, its entry and the switch-in's time, the core), a count of those a data loss
    closed."""
    why = CLOSED_REASONS[BY_SWITCH_IN]
    for i in np.flatnonzero(end == BY_SWITCH_IN).tolist():
        drop_log.add(f"{m}.duration", why, int(st[i]), int(closed_ts[i]), 1, int(core[i]))
    drop_log.add(f"{m}.duration", CLOSED_REASONS[BY_LOSS], count=int(np.count_nonzero(end == BY_LOSS)))


def _isr_series(trace: Trace, gaps: Any, drop_log: DropLog) -> tuple[list[Series], dict[str, Any]]:
    """Per IRQ: duration and ISR-to-task latency instances; rate and nesting scalars."""
    ev = trace.columns
    kind, ts, cid = ev["kind"], ev["ts"].astype(np.int64), ev["ctx_id"]
    names = {i.number: i.name for i in trace.isrs}
    span = (int(ts[-1]) - int(ts[0])) if len(ts) else 0
    entries, exits, depth_at, closed = [], [], [], []
    for c in np.unique(ev["core"]).tolist():
        rows = isr_rows(kind, ev["core"], c)
        got = isr_entries(kind[rows])
        if not got.idx.size:
            continue
        entries.append(rows[got.idx])
        exits.append(np.where(got.end >= 0, rows[np.maximum(got.end, 0)], got.end))
        depth_at.append(got.depth)
        closed.append(np.where(got.closer >= 0, rows[np.maximum(got.closer, 0)], -1))
    if not entries:
        return [], {}
    ent, ex, dep = np.concatenate(entries), np.concatenate(exits), np.concatenate(depth_at)
    shut = np.concatenate(closed)
    order = np.argsort(ent, kind="stable")
    ent, ex, dep, shut = ent[order], ex[order], dep[order], shut[order]
    ready_rows = np.flatnonzero((kind == EventKind.TASK_READY) & (ev["ctx_type"] == CtxType.ISR))
    sw_rows = np.flatnonzero(kind == EventKind.TASK_SWITCH_IN)
    series: list[Series] = []
    scalars: dict[str, tuple[float, str]] = {}
    for irq in np.unique(cid[ent]).tolist():
        name = names.get(irq, f"irq{irq}")
        sel = cid[ent] == irq
        e, x, d = ent[sel], ex[sel], dep[sel]
        m = f"isr.{name}"
        if span > 0:
            scale = 1e9 if trace.meta.tick_hz else 1.0
            scalars[f"{m}.rate"] = (e.size * scale / span, "per_s" if trace.meta.tick_hz else "per_tick")
        scalars[f"{m}.nested"] = (float(np.count_nonzero(d > 1)), "count")
        log_closed(m, x, ts[e], ts[np.maximum(shut[sel], 0)], ev["core"][e].astype(np.int64), drop_log)
        ok = x >= 0
        drop_log.add(f"{m}.duration", "no_end_event", count=int(np.count_nonzero(x == OPEN)))
        st, en = ts[e[ok]], ts[x[ok]]
        keep = drop_gap_instances(f"{m}.duration", st, en, gaps, drop_log)
        core = ev["core"][e[ok]].astype(np.int64)[keep]
        dur = (en - st)[keep].astype(float)
        series.append(Series(f"{m}.duration", "ns", st[keep], en[keep], dur, core=core))
        series += _isr_to_task(ev, m, e[ok], x[ok], ready_rows, sw_rows, gaps, drop_log)
    return series, scalars


def _isr_to_task(
    ev: np.ndarray, m: str, ent: np.ndarray, ex: np.ndarray, ready_rows: np.ndarray, sw_rows: np.ndarray,
    gaps: Any, drop_log: DropLog,
) -> list[Series]:
    """ISR entry to the first switch-in of a task it readied (its first TASK_READY inside it)."""
    if not ready_rows.size or not sw_rows.size:
        return []
    k = np.searchsorted(ready_rows, ent, side="right")
    has = k < ready_rows.size
    r = ready_rows[np.minimum(k, ready_rows.size - 1)]
    has &= (r < ex) & (ev["core"][r] == ev["core"][ent])
    if not has.any():
        return []
    e, r = ent[has], r[has]
    target = ev["target_id"][r]
    ts = ev["ts"].astype(np.int64)
    sw_ctx = ev["ctx_id"][sw_rows]
    end = np.full(e.size, -1, np.int64)
    for t in np.unique(target).tolist():
        own = sw_rows[sw_ctx == t]
        sel = np.flatnonzero(target == t)
        j = np.searchsorted(own, r[sel], side="right")
        ok = j < own.size
        end[sel[ok]] = own[j[ok]]
    ok = end >= 0
    drop_log.add(f"{m}.to_task", "no_end_event", count=int(np.count_nonzero(~ok)))
    st, en = ts[e[ok]], ts[end[ok]]
    keep = drop_gap_instances(f"{m}.to_task", st, en, gaps, drop_log)
    core = ev["core"][e[ok]].astype(np.int64)[keep]
    return [Series(f"{m}.to_task", "ns", st[keep], en[keep], (en - st)[keep].astype(float), core=core)]


def _switch_counts(trace: Trace, tls: list[CoreTimeline]) -> dict[str, tuple[float, str]]:
    """Switches from a known context to a different one (idle counts as a context), per core and
    in total (:func:`.kstate.count_switches`)."""
    ev = trace.columns
    out: dict[str, tuple[float, str]] = {}
    total = 0
    for tl in tls:
        rows = np.flatnonzero((ev["core"] == tl.core) | is_loss(ev["kind"])) if len(tls) > 1 else slice(None)
        n, _ = count_switches(np.asarray(ev["kind"])[rows], np.asarray(ev["ctx_id"])[rows])
        total += n
        if trace.meta.cores > 1:
            out[f"ctx_switch.count.core{tl.core}"] = (float(n), "count")
    out["ctx_switch.count"] = (float(total), "count")
    return out


def _switch_time(trace: Trace, gaps: Any, drop_log: DropLog) -> list[Series]:
    """TASK_SWITCH_OUT to the next switch-in (or idle) on the same core, where recorded."""
    ev = trace.columns
    out_rows = np.flatnonzero(ev["kind"] == EventKind.TASK_SWITCH_OUT)
    if not out_rows.size:
        return []
    ts = ev["ts"].astype(np.int64)
    st, en, cores = [], [], []
    for c in np.unique(ev["core"][out_rows]).tolist():
        on = ev["core"] == c
        nxt = np.flatnonzero(on & ((ev["kind"] == EventKind.TASK_SWITCH_IN) | (ev["kind"] == EventKind.IDLE)))
        o = out_rows[ev["core"][out_rows] == c]
        j = np.searchsorted(nxt, o, side="right")
        ok = j < nxt.size
        st.append(ts[o[ok]])
        en.append(ts[nxt[j[ok]]])
        cores.append(np.full(int(ok.sum()), c, np.int64))
    s, e, c = np.concatenate(st), np.concatenate(en), np.concatenate(cores)
    order = np.argsort(s, kind="stable")
    s, e, c = s[order], e[order], c[order]
    keep = drop_gap_instances("ctx_switch.switch_time", s, e, gaps, drop_log)
    dur = (e - s)[keep].astype(float)
    return [Series("ctx_switch.switch_time", "ns", s[keep], e[keep], dur, core=c[keep])]


def tracex_scalars(trace: Trace) -> dict[str, tuple[float, str]]:
    """TraceX's own "Performance Statistics" of a TraceX recording (empty for other formats)."""
    if trace.meta.source_format != "tracex":
        return {}
    from trace_parsers.tracex.decode import RawTrace
    from trace_parsers.tracex.stats import tracex_statistics

    src: Any = trace
    if not isinstance(trace.meta.extra.get("tracex_raw"), RawTrace):
        # loaded from an events file (which keeps no raw records): read the buffer again
        from pathlib import Path

        from trace_parsers.tracex import read_raw

        if not trace.meta.source_path or not Path(trace.meta.source_path).is_file():
            return {}
        src = read_raw(trace.meta.source_path, on_corrupt="skip")
    st = tracex_statistics(src)
    keys = (
        "context_switches", "thread_preemptions", "time_slices", "thread_suspensions",
        "thread_resumptions", "interrupts", "nested_interrupts", "priority_inversions",
        "bad_priority_inversions",
    )
    return {f"tracex.{k}": (float(getattr(st, k)), "count") for k in keys}


def _one_per_metric(series: list[Series]) -> list[Series]:
    """One series per metric id: a task that ran on several cores has a load series per core, and
    its statistics are over all of them (instances in time order, each keeping its core)."""
    by: dict[str, list[Series]] = {}
    for s in series:
        by.setdefault(s.metric, []).append(s)
    out = []
    for group in by.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        start = np.concatenate([s.start_ts for s in group])
        order = np.argsort(start, kind="stable")
        cores = [np.full(len(s), -1, np.int64) if s.core is None else s.core for s in group]
        out.append(Series(group[0].metric, group[0].unit, start[order],
                          np.concatenate([s.end_ts for s in group])[order],
                          np.concatenate([s.value for s in group])[order],
                          core=np.concatenate(cores)[order]))
    return out


def kernel_metrics(trace: Trace, *, window_ns: int | None = None) -> Result:
    """Every kernel metric of one trace (none for a logic capture or a trace without tasks)."""
    source = "logic" if is_logic(trace) else "trace"
    ev = trace.columns
    if is_logic(trace) or not len(trace) or not (ev["kind"] == EventKind.TASK_SWITCH_IN).any():
        return Result(make_table([], source), KernelSummary(source=source))
    drop_log = DropLog()
    gaps = overflow_gaps(trace)
    tls = timelines(trace)
    idle = {t.ctx_id for t in trace.tasks if is_idle_name(t.name)}
    series: list[Series] = []
    running = set(np.unique(ev["ctx_id"][ev["kind"] == EventKind.TASK_SWITCH_IN]).tolist())
    for ctx_id in sorted(running - idle):
        series += _task_series(trace, tls, int(ctx_id), gaps, drop_log)
    series += _load_series(trace, tls, window_ns)
    isr_series, scalars = _isr_series(trace, gaps, drop_log)
    series += isr_series + _switch_time(trace, gaps, drop_log)
    scalars.update(_switch_counts(trace, tls))
    scalars.update(tracex_scalars(trace))
    series = _one_per_metric([s for s in series if len(s)])
    fields = summary_fields(series, drop_log)
    summary = KernelSummary(source=source, scalars=scalars, cores=max(trace.meta.cores, 1), **fields)
    return Result(make_table(series, source), summary)


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any]) -> Result:
    w = options.get("CT_LOAD_WINDOW_NS")
    return kernel_metrics(trace, window_ns=int(w) if w else None)
