"""CPU load (``analyzers.metrics.cpu_load``) of a recording read in chunks, equal to the whole-trace result.

Each core carries across chunk borders: the time accounted up to, the running task (unknown, idle
or a task id) and its ISR stack (one IRQ number per nesting level). A chunk is charged by the
in-memory code itself (``_owners`` + ``_charge``): the carried state is replayed as zero-length
events in front of the chunk (a switch-in of the running task, one ISR entry per level), so the
time from the previous chunk's last event goes to the right owner. Contexts are charged by id and
named with the final side tables at the end (a chunk reader may name a task after it ran), so the
names, idle tasks included, are the whole trace's. Memory: a few ints per core and context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trace_parsers.model import EventKind, Trace, TraceMeta, empty_events

from .metrics import (
    CoreTimeline,
    CpuLoadSummary,
    Result,
    _charge,
    _owners,
    assemble_load,
    is_idle_name,
    is_logic,
    is_loss,
    isr_walk,
    make_table,
    state_events,
)

K = EventKind


@dataclass
class ChunkTimeline:
    """One core over one chunk: running time of a context (id-only label) up to a time ``t``
    inside the chunk is ``before[label] + timeline.running(label, t)``."""

    timeline: CoreTimeline | None
    before: dict[str, int]

    def running(self, label: str, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.int64)
        part = self.timeline.running(label, t) if self.timeline is not None else np.zeros(t.size, np.int64)
        return part + self.before.get(label, 0)


class _Core:
    """One core's carried state and busy time per context (by id)."""

    def __init__(self, t0: int) -> None:
        self.last_ts = t0  #: time accounted up to
        self.task: tuple[str, int] | None = None  #: ("task", id), ("idle", -1) or None (unknown)
        self.stack: list[int] = []  #: IRQ number per nesting level
        self.busy: dict[str, int] = {}  #: label of the id-only naming -> ns
        self.has_context = False  #: a switch-in, ISR entry or IDLE was seen (else: no load)

    def feed(self, kind: np.ndarray, ctx: np.ndarray, ts: np.ndarray) -> ChunkTimeline:
        """Charge one chunk's scheduling events of this core; returns the chunk's timeline (for
        running-time queries at times inside the chunk)."""
        before = dict(self.busy)
        pk = ([] if self.task is None else [K.IDLE if self.task[0] == "idle" else K.TASK_SWITCH_IN])
        pc = ([] if self.task is None else [self.task[1]])
        pk += [K.ISR_ENTER] * len(self.stack)
        pc += self.stack
        if not kind.size:  # nothing happened on this core: its state runs on
            if not pk:
                return ChunkTimeline(None, before)
            kp = np.array(pk, np.uint8)
            labels, owner = _owners(_NAMELESS, kp, np.array(pc, np.int64))
            return ChunkTimeline(CoreTimeline(0, np.full(kp.size, self.last_ts, np.int64), owner, labels, {}),
                                 before)
        ctx_kinds = (kind == K.TASK_SWITCH_IN) | (kind == K.ISR_ENTER) | (kind == K.IDLE)
        self.has_context |= bool(ctx_kinds.any())
        kind = np.concatenate((np.array(pk, np.uint8), kind))
        ctx = np.concatenate((np.array(pc, np.int64), ctx.astype(np.int64)))
        ts = np.concatenate((np.full(len(pk), self.last_ts, np.int64), ts.astype(np.int64)))
        labels, owner = _owners(_NAMELESS, kind, ctx)
        for label, b in _charge(labels, owner, ts, self.last_ts, int(ts[-1])).items():
            self.busy[label] = self.busy.get(label, 0) + b
        self._carry(kind, ctx)
        self.last_ts = int(ts[-1])
        return ChunkTimeline(CoreTimeline(0, ts, owner, labels, {}), before)

    def _carry(self, kind: np.ndarray, ctx: np.ndarray) -> None:
        depth, before, _ = isr_walk(kind)
        setter = (kind == K.TASK_SWITCH_IN) | (kind == K.IDLE) | is_loss(kind)
        setter |= (kind == K.TASK_SWITCH_OUT) & (before == 0)
        rows = np.flatnonzero(setter)
        if rows.size:
            i = int(rows[-1])
            k = int(kind[i])
            self.task = (("task", int(ctx[i])) if k == K.TASK_SWITCH_IN else None if is_loss(kind[i:i + 1])[0]
                         else ("idle", -1))
        ent = np.flatnonzero(kind == K.ISR_ENTER)
        d_end = int(depth[-1])
        self.stack = []
        for d in range(1, d_end + 1):  # the last entry that reached each level still open
            at = ent[depth[ent] == d]
            self.stack.append(int(ctx[at[-1]]))

    def finish(self, t1: int) -> None:
        """Charge the time from the last event to the recording's end ``t1``."""
        owner = (f"isr.irq{self.stack[-1]}" if self.stack else "unknown" if self.task is None
                 else "idle" if self.task[0] == "idle" else f"task.task#{self.task[1]}")
        if t1 > self.last_ts:
            self.busy[owner] = self.busy.get(owner, 0) + t1 - self.last_ts
            self.last_ts = t1


#: a trace without names: ``_owners`` then labels contexts by id (``task.task#<id>``, ``isr.irq<n>``)
_NAMELESS = Trace(empty_events(0), TraceMeta("chunks"))


def _named(busy: dict[str, int], last: Trace) -> dict[str, int]:
    """Busy time per context label of the whole-trace naming (final side tables)."""
    names = {t.ctx_id: t.name for t in last.tasks}
    isr_names = {i.number: i.name for i in last.isrs}
    out: dict[str, int] = {}
    for label, b in busy.items():
        if label.startswith("task.task#"):
            c = int(label[len("task.task#"):])
            label = "idle" if c in names and is_idle_name(names[c]) else f"task.{names.get(c, f'task#{c}')}"
        elif label.startswith("isr.irq"):
            n = int(label[len("isr.irq"):])
            label = f"isr.{isr_names.get(n, f'irq{n}')}"
        out[label] = out.get(label, 0) + b
    return out


class CpuLoadStream:
    """``cpu_load(trace)`` over chunks: :meth:`feed` each chunk, then :meth:`finish`. With
    ``cores``, the per-core state another stream feeds (``KernelStream.cores``: one state pass per
    chunk for both); without, its own."""

    def __init__(self, cores: dict[int, _Core] | None = None) -> None:
        self.shared = cores is not None
        self.cores: dict[int, _Core] = cores if cores is not None else {}
        self.seen_cores: set[int] = set()
        self.t0: int | None = None
        self.t1: int | None = None
        self.multi = False

    def feed(self, trace: Trace) -> None:
        ev = trace.held()  # rows or columns, whichever the chunk holds
        if not len(ev) or is_logic(trace):
            return
        if self.t0 is None:
            self.t0 = int(ev["ts"][0])
        self.t1 = int(ev["ts"][-1])
        self.multi = trace.meta.cores > 1
        cores = np.unique(ev["core"]).tolist() if self.multi else [0]
        self.seen_cores.update(cores)
        if self.shared:  # fed by the kernel stream
            return
        for c in sorted(set(cores) | set(self.cores)):  # a data-loss marker reaches every core
            core = self.cores.setdefault(c, _Core(self.t0))
            core.feed(*state_events(ev, c if self.multi else None))

    def finish(self, last: Trace, gaps: list[tuple[int, int]]) -> Result:
        """The whole trace's ``cpu_load`` result (``last`` = the last chunk, ``gaps`` = the
        recording's OVERFLOW gaps)."""
        source = "logic" if is_logic(last) else "trace"
        if source == "logic" or self.t0 is None or self.t1 is None:
            return Result(make_table([], source), CpuLoadSummary(source=source))
        w0, w1 = self.t0, self.t1
        cores = sorted(self.seen_cores) if self.multi else [0]
        per_core: dict[int, dict[str, int]] = {}
        for c in cores:
            core = self.cores.get(c)
            if core is not None and core.has_context:
                core.finish(w1)
                per_core[c] = _named(core.busy, last)
        if not per_core:
            return Result(make_table([], "trace"), CpuLoadSummary(source="trace"))
        return assemble_load(per_core, len(cores) > 1, w0, w1, gaps)
