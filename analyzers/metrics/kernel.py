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
  ``isr.<name>.to_task.<task>`` — ISR entry to the first switch-in of the task the ISR readied
  (its first ``TASK_READY`` recorded inside it), with or without ``ISR_TO_SCHED``, one series per
  task woken;
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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace

from ..sites import is_logic
from .base import Result, Series, Summary, TableParts, join_series, make_table
from .cpu_load import ChunkTimeline, CoreTimeline, _Core, is_idle_name, small_ids, state_events
from .isr import IsrStream
from .kstate import count_switches
from .spill import Parts, append_before
from .stats import DropLog, GapDrops, overflow_gaps
from .tasks import TaskState

#: windows of the per-task load over time when CT_LOAD_WINDOW_NS is not given
DEFAULT_WINDOWS = 50


@dataclass(frozen=True)
class KernelSummary(Summary):
    cores: int = 1


K = EventKind


class _Joined:
    """Collects the series of tasks sharing a name (``TaskState.add_series`` hands each over in
    batches), to be joined per metric."""

    def __init__(self) -> None:
        self.series: list[Series] = []

    def add_batches(self, batches: Iterable[Series]) -> None:
        got = [b for b in batches if len(b)]
        if got:
            self.series.append(join_series(got))


def _by_id(ids: np.ndarray, rows: np.ndarray) -> dict[int, np.ndarray]:
    """``rows`` grouped by their ``ids`` (each group in the order of ``rows``).

    >>> {k: v.tolist() for k, v in _by_id(np.array([7, 3, 7]), np.array([10, 11, 12])).items()}
    {3: [11], 7: [10, 12]}
    """
    if not ids.size:
        return {}
    uniq, code = small_ids(ids)  # the ids' codes 0..k-1 (a table lookup when they span a small range)
    # a stable sort of small codes is a radix sort: one pass
    order = np.argsort(code.astype(np.int16) if uniq.size < 2**15 else code, kind="stable")
    cut = np.concatenate(([0], np.cumsum(np.bincount(code, minlength=uniq.size)))).tolist()
    return {int(u): rows[order[cut[j]:cut[j + 1]]] for j, u in enumerate(uniq.tolist())}


class KernelStream:
    """``kernel_metrics(trace)`` over ts-aligned chunks: :meth:`feed` each, then :meth:`finish`."""

    def __init__(self, store: Any = None) -> None:
        self.store = store  #: the source's spill (:class:`.spill.Spill`), or None: in memory
        self.cores: dict[int, _Core] = {}
        self.tasks: dict[int, TaskState] = {}
        self.isr = IsrStream(store)
        self.sw_count: dict[int, list[int]] = {}  #: core -> [switches, last context or None]
        self.sw_out: dict[int, np.ndarray] = {}  #: core -> switch-out ts waiting for the next switch-in
        self.sw_time = Parts(width=4, store=store)  #: start, end, core, out row, sorted (on disk: store)
        self.sw_held = np.zeros((4, 0), np.int64)  #: switch times that a later one may still precede
        self.switched_in: set[int] = set()
        self.history = _History(store)  #: each chunk's timelines, for the per-task load windows
        self.t0: int | None = None
        self.t1: int | None = None
        self.rows = 0
        self.multi = False

    # -- per chunk --------------------------------------------------------------------------------
    def feed(self, trace: Trace) -> None:
        ev = trace.held()  # rows or columns, whichever the chunk holds
        if not len(ev) or is_logic(trace):
            return
        ts = ev["ts"].astype(np.int64, copy=False)
        if self.t0 is None:
            self.t0 = int(ts[0])
        self.t1 = int(ts[-1])
        self.multi = trace.meta.cores > 1
        parts: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        tls = self._timelines(ev, parts)
        self.history.add(int(ts[-1]), tls)
        kind = ev["kind"]
        self._tasks(ev, kind, ts, tls)
        self.isr.feed(ev, kind, ts, self.rows)
        self._switches(ev, kind, ts, parts)
        self.rows += len(ev)

    def _timelines(self, ev: np.ndarray, parts: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
                   ) -> dict[int, ChunkTimeline]:
        """Each core's timeline of the chunk; its state events (:func:`.cpu_load.state_events`)
        go into ``parts``, for the switch counts."""
        cores = np.unique(ev["core"]).tolist() if self.multi else [0]
        out = {}
        for c in sorted(set(cores) | set(self.cores)):
            part = parts[c] = state_events(ev, c if self.multi else None)
            if c not in self.cores:
                if not part[0].size:
                    continue
                self.cores[c] = _Core(self.t0 or 0)
            out[c] = self.cores[c].feed(*part)
        return out

    def _tasks(self, ev: np.ndarray, kind: np.ndarray, ts: np.ndarray, tls: dict[int, ChunkTimeline]) -> None:
        sw_rows = np.flatnonzero(kind == K.TASK_SWITCH_IN)
        ready_rows = np.flatnonzero(kind == K.TASK_READY)
        done_rows = np.flatnonzero((kind == K.TASK_BLOCK) | (kind == K.TASK_TERMINATE))
        sw_id, ready_id = ev["ctx_id"][sw_rows], ev["target_id"][ready_rows]
        done_id = ev["target_id"][done_rows]
        # each task's rows: the rows grouped by task id once (a stable sort keeps them in time order)
        groups = [_by_id(ids, rows) for ids, rows in ((sw_id, sw_rows), (ready_id, ready_rows),
                                                       (done_id, done_rows))]
        self.switched_in.update(groups[0])
        core = ev["core"]
        empty = np.zeros(0, np.int64)
        for cid in sorted(set().union(*groups)):
            label = f"task.task#{cid}"

            def running(t: np.ndarray, label: str = label) -> np.ndarray:
                t = np.asarray(t, dtype=np.int64)
                return sum((tl.running(label, t) for tl in tls.values()), np.zeros(t.size, np.int64))

            mine, ready, done = (g.get(cid, empty) for g in groups)
            st = self.tasks.get(cid)
            if st is None:
                st = self.tasks[cid] = TaskState(self.store)
            st.feed(ts[ready], ts[done], ts[mine], core[mine].astype(np.int64), running)

    def _switches(self, ev: np.ndarray, kind: np.ndarray, ts: np.ndarray,
                  parts: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Switch counts (per core, over its state events ``parts``: its switch-ins and idles, every
        core's losses) and switch-out to next switch-in times."""
        for c, (k, cid, _) in parts.items():
            state = self.sw_count.setdefault(c, [0, None])
            n, state[1] = count_switches(k, cid, state[1])
            state[0] += n
        cores = ev["core"]
        out_rows = np.flatnonzero(kind == K.TASK_SWITCH_OUT)
        found: list[np.ndarray] = []
        todo = sorted(set(np.unique(cores[out_rows]).tolist()) | set(self.sw_out))
        # the next switch-in or idle: only for a trace that records switch-outs (most record none)
        nxt_mask = ((kind == K.TASK_SWITCH_IN) | (kind == K.IDLE)) if todo else None
        for c in todo:
            on = cores == c
            nxt = np.flatnonzero(on & nxt_mask)
            o = out_rows[cores[out_rows] == c]
            prev = self.sw_out.get(c, np.zeros((2, 0), np.int64))  # (ts, global row) waiting
            if prev.shape[1] and nxt.size:
                t = ts[nxt[0]]
                k = prev.shape[1]
                found.append(np.stack([prev[0], np.full(k, t), np.full(k, c), prev[1]]))
                prev = prev[:, :0]
            j = np.searchsorted(nxt, o, side="right")
            ok = j < nxt.size
            if ok.any():
                k = int(ok.sum())
                found.append(np.stack([ts[o[ok]], ts[nxt[j[ok]]], np.full(k, c), o[ok] + self.rows]))
            wait = np.stack([ts[o[~ok]], o[~ok] + self.rows]).astype(np.int64)
            self.sw_out[c] = np.concatenate((prev, wait), axis=1)
        self._sorted_switch_times(found)

    def _sorted_switch_times(self, found: list[np.ndarray], last: bool = False) -> None:
        """Append to :attr:`sw_time` the switch times no later one can precede, in the in-memory
        order (switch-out time, core, row): those before the earliest switch-out still waiting
        (later chunks' switch-outs are later still). The rest wait in :attr:`sw_held`."""
        held = np.concatenate([self.sw_held, *found], axis=1) if found else self.sw_held
        waiting = [w[0].min() for w in self.sw_out.values() if w.shape[1]]
        before = None if last or not waiting else int(min(waiting))
        self.sw_held = append_before(self.sw_time, held, before, keys=(0, 2, 3))

    # -- at the end -------------------------------------------------------------------------------
    def finish(self, last: Trace, gaps: list[tuple[int, int]], load: list[Series] | None = None) -> Result:
        """The whole trace's ``kernel_metrics`` (``last`` = the last chunk: final tables and
        meta; ``load`` = :meth:`load_series`'s series). Tasks that share a name (two instances of one
        task function) are measured each on its own running time, and their series joined under
        the one name, instances in time order."""
        source = "logic" if is_logic(last) else "trace"
        if source == "logic" or self.t0 is None or not self.switched_in:
            return Result(make_table([], source, self.store), KernelSummary(source=source))
        names = {t.ctx_id: t.name for t in last.tasks}
        idle = {c for c, n in names.items() if is_idle_name(n)}
        run = sorted(self.switched_in - idle)
        label = {c: f"task.{names.get(c, f'task#{c}')}" for c in self.switched_in - idle}
        shared = {lb for lb in label.values() if list(label.values()).count(lb) > 1}
        drop_log = DropLog()
        parts = TableParts(source, self.store)  # each group's arrays go once its table part is made
        joined: dict[str, _Joined] = {}
        for cid in run:
            st = self.tasks.pop(cid, None)
            if st is not None:
                into = joined.setdefault(label[cid], _Joined()) if label[cid] in shared else parts
                st.add_series(label[cid], gaps, drop_log, into)  # type: ignore[arg-type]
        for j in joined.values():
            parts.add(_one_per_metric(j.series))
        parts.add(_one_per_metric(load or []))  # a task on several cores: one load series
        scalars = self.isr.finish(last, gaps, drop_log, self.t1 - self.t0, parts)
        parts.add_batches(self._switch_time(gaps, drop_log))
        scalars.update(self._switch_counts(last))
        scalars.update(tracex_scalars(last))
        fields = parts.summary_fields(drop_log)
        summary = KernelSummary(source=source, scalars=scalars, cores=max(last.meta.cores, 1), **fields)
        return Result(parts.table(), summary)

    def _switch_counts(self, last: Trace) -> dict[str, tuple[float, str]]:
        out: dict[str, tuple[float, str]] = {}
        total = 0
        for c in sorted(self.cores):  # the cores with scheduling events (the timelines')
            n = self.sw_count.get(c, [0, None])[0]
            total += n
            if last.meta.cores > 1:
                out[f"ctx_switch.count.core{c}"] = (float(n), "count")
        out["ctx_switch.count"] = (float(total), "count")
        return out

    def _switch_time(self, gaps: Any, drop_log: Any) -> Iterator[Series]:
        """``ctx_switch.switch_time``, a batch at a time from the sorted switch times."""
        self._sorted_switch_times([], last=True)
        drops = GapDrops("ctx_switch.switch_time", gaps)
        for s, e, c in self.sw_time.batches([0, 1, 2]):
            keep = drops.keep(s, e)
            yield Series("ctx_switch.switch_time", "ns", s[keep], e[keep], (e - s)[keep].astype(float),
                         core=c[keep])
        drops.log(drop_log)
        self.sw_time.clear()

    # -- per-task load windows ----------------------------------------------------------------------
    def load_edges(self, window_ns: int | None) -> np.ndarray:
        t0, t1 = self.t0 or 0, self.t1 or 0
        w = int(window_ns) if window_ns else max((t1 - t0) // DEFAULT_WINDOWS, 1)
        return np.arange(t0, t1 + 1, w, dtype=np.int64)

    def load_series(self, last: Trace, window_ns: int | None) -> list[Series]:
        """``task.<name>.load`` series, now that the windows' edges are known: running time of
        each task at each edge, per core, from the chunks' timelines kept while they were fed
        (:class:`_History`; no second read of the recording). Call it before the cores' state is
        finished (the state after the last event runs on to the last edges)."""
        if self.t0 is None or not self.switched_in:
            self.history.clear()
            return []
        edges = self.load_edges(window_ns)
        if edges.size < 2:
            self.history.clear()
            return []
        at: dict[int, dict[str, np.ndarray]] = {}  # core -> label -> running time at each edge
        for c, chunks in self.history.per_core():
            done = 0
            for t_last, tl in chunks:
                # edges up to the chunk's last time are answered by it (later chunks only add later time)
                hi = int(np.searchsorted(edges, t_last, side="right"))
                for label in _task_labels(tl):
                    col = at.setdefault(c, {}).setdefault(label, np.zeros(edges.size, np.int64))
                    col[done:hi] = tl.running(label, edges[done:hi])
                done = max(done, hi)
        done = int(np.searchsorted(edges, self.history.t_last, side="right"))
        for c, core in self.cores.items():  # edges after the last event: every state runs on
            tl = core.feed(np.zeros(0, np.uint8), np.zeros(0, np.int32), np.zeros(0, np.int64))
            for label in set(_task_labels(tl)) | set(at.get(c, {})):
                col = at.setdefault(c, {}).setdefault(label, np.zeros(edges.size, np.int64))
                col[done:] = tl.running(label, edges[done:])
        self.history.clear()
        return _load_series(at, edges, int(edges[1] - edges[0]), last)


class _History:
    """Each chunk's timeline per core (:class:`ChunkTimeline`): the running-time function the
    per-task load windows are read from at the end. What grows: per scheduling event 16 bytes
    (its time and owner), on disk while spilling (one scratch file per chunk and core)."""

    def __init__(self, store: Any = None) -> None:
        self.store = store
        self.chunks: list[tuple[int, int, dict[str, int], list[str] | None, Parts | None]] = []
        self.t_last = -(2**62)

    def add(self, t_last: int, tls: dict[int, ChunkTimeline]) -> None:
        self.t_last = t_last
        for c, tl in tls.items():
            parts, labels = None, None
            if tl.timeline is not None:
                parts, labels = Parts(width=2, store=self.store), tl.timeline.labels
                parts.append(np.stack([tl.timeline.ts, tl.timeline.owner]))
            self.chunks.append((c, t_last, tl.before, labels, parts))

    def per_core(self) -> Iterator[tuple[int, Iterator[tuple[int, ChunkTimeline]]]]:
        """Per core (in order), its chunks' ``(last time of the chunk, timeline)``, read back one
        at a time."""
        for c in sorted({k[0] for k in self.chunks}):
            yield c, self._of(c)

    def _of(self, c: int) -> Iterator[tuple[int, ChunkTimeline]]:
        for core, t_last, before, labels, parts in self.chunks:
            if core != c:
                continue
            tl = None
            if parts is not None and labels is not None:
                ts, owner = parts.concat()
                tl = CoreTimeline(c, ts, owner, labels, {})
            yield t_last, ChunkTimeline(tl, before)

    def clear(self) -> None:
        for k in self.chunks:
            if k[4] is not None:
                k[4].clear()
        self.chunks = []


def _task_labels(tl: ChunkTimeline) -> list[str]:
    labels = set(tl.before)
    if tl.timeline is not None:
        labels |= set(tl.timeline.labels)
    return sorted(lb for lb in labels if lb.startswith("task.task#"))


def _load_series(at: dict[int, dict[str, np.ndarray]], edges: np.ndarray, w: int,
                 last: Trace) -> list[Series]:
    """``_load_series`` from running times at the edges, per core and id-only label."""
    names = {t.ctx_id: t.name for t in last.tasks}
    out = []
    for c in sorted(at):
        per: dict[str, np.ndarray] = {}
        for label, col in at[c].items():
            cid = int(label[len("task.task#"):])
            if cid in names and is_idle_name(names[cid]):
                continue
            name = f"task.{names.get(cid, f'task#{cid}')}"
            per[name] = per.get(name, 0) + col
        for name in sorted(per):
            busy = np.diff(per[name]).astype(np.float64)
            if not busy.any():
                continue
            core = np.full(busy.size, c if last.meta.cores > 1 else -1, np.int64)
            out.append(Series(f"{name}.load", "pct", edges[:-1], edges[1:], 100.0 * busy / w, core=core))
    return out


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
    """Every kernel metric of a whole recording (none for a logic capture or a trace without
    tasks): :class:`KernelStream` over one chunk."""
    stream = KernelStream()
    stream.feed(trace)
    load = stream.load_series(trace, window_ns)
    gaps = overflow_gaps(trace) if len(trace) and not is_logic(trace) else []
    return stream.finish(trace, gaps, load)
