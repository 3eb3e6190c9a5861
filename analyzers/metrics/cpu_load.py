"""CPU load per task and per ISR over a window (trace only).

The running context is rebuilt from the kernel events: ``TASK_SWITCH_IN`` sets the running task,
``IDLE`` (or a switch to a task named like the idle task) sets idle, ``ISR_ENTER`` pushes an
interrupt, ``ISR_EXIT``/``ISR_TO_SCHED`` pops it. Time is charged to the innermost ISR, else the
running task. Time inside an OVERFLOW gap, and from a gap until the next switch-in, is charged
to nobody and reported as ``unknown``.

Metrics (scalars, percent of the window): ``cpu.load.task.<name>``, ``cpu.load.isr.<name>``,
``cpu.load.idle``, ``cpu.load.total`` (100 - idle - unknown), ``cpu.load.unknown``. On a
multi-core trace the same per core, ``cpu.load.core<N>.<...>``, and the unprefixed ones over the
whole machine (busy time summed over the cores, as a share of cores x window).
The per-instance table has one row per context, metric ``cpu.busy.<context>`` (``value`` = busy ns
over the window).

Memory and chunks: one reducer (:class:`CpuLoadStream`) fed every chunk of a recording, a whole
recording being one chunk (:func:`cpu_load`). Each core carries across chunk borders the time accounted
up to, the running task (unknown, idle or a task id) and its ISR stack; a chunk is charged by
``_owners`` + ``_charge`` with the carried state replayed as zero-length events in front of it, so the
time from the previous chunk's last event goes to the right owner. Contexts are charged by id and
named with the final side tables at the end (a chunk reader may name a task after it ran).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace, TraceMeta, empty_events

from ..sites import is_logic
from .base import Result, Series, Summary, make_table
from .kstate import OWNER_IDLE, OWNER_ISR, OWNER_TASK, START, State, is_loss, kernel_pass
from .stats import DropLog, overflow_gaps

#: Idle task names (lower case; a trailing core number is allowed: ESP-IDF's ``IDLE0``/``IDLE1``).
#: FreeRTOS's timer task "Tmr Svc" is not idle: it runs timer callbacks, real work.
IDLE_NAMES = ("idle", "tx_idle")


def is_idle_name(name: str) -> bool:
    """Whether a task name is an idle task's.

    >>> [is_idle_name(n) for n in ("IDLE", "IDLE1", "Tmr Svc", "tx_idle", "idler")]
    [True, True, False, True, False]
    """
    n = name.strip().lower()
    return n in IDLE_NAMES or (n.rstrip("0123456789") in IDLE_NAMES and n[-1:].isdigit())


@dataclass(frozen=True)
class CpuLoadSummary(Summary):
    window_ns: int = 0
    busy_ns: dict[str, int] = field(default_factory=dict)


def _owners(trace: Trace, kind: np.ndarray, ctx_id: np.ndarray,
            state: State = START) -> tuple[list[str], np.ndarray, State]:
    """Context charged after each scheduling event: ``(labels, owner, state)``, ``owner[n]``
    indexing ``labels`` for the time from event ``n`` to event ``n + 1``; ``state``: the kernel state
    after the last event (:func:`.kstate.kernel_pass`, whose rules decide the owner: the innermost
    open ISR, else the running task; ``unknown`` after a data loss, from the event before it).

    >>> from trace_parsers.model import Isr, Task, TraceMeta, empty_events
    >>> K = EventKind
    >>> tr = Trace(empty_events(0), TraceMeta("x"), tasks=[Task(0, "a")], isrs=[Isr(3, "T")])
    >>> kind = np.array([K.TASK_SWITCH_IN, K.ISR_ENTER, K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED, K.IDLE])
    >>> labels, owner, _ = _owners(tr, kind, np.array([0, 3, 4, -1, -1, -1]))
    >>> [labels[o] for o in owner]
    ['task.a', 'isr.T', 'isr.irq4', 'isr.T', 'task.a', 'idle']
    """
    p = kernel_pass(kind, ctx_id, state)
    labels = ["unknown", "idle"]  # codes 0 and 1, then one per task / ISR id owning the core
    names = {t.ctx_id: t.name for t in trace.tasks}
    isr_names = {i.number: i.name for i in trace.isrs}
    code = np.zeros(p.owner_kind.size, dtype=np.int64)
    code[p.owner_kind == OWNER_IDLE] = 1
    for who in (OWNER_TASK, OWNER_ISR):
        mask = p.owner_kind == who
        if not mask.any():
            continue
        ids, inv = small_ids(p.owner_id[mask])
        codes = np.empty(ids.size, dtype=np.int64)
        for j, c in enumerate(ids.tolist()):
            if who == OWNER_TASK:
                nm = f"task.{names[c]}" if c in names else f"task.task#{c}"
                nm = "idle" if c in names and is_idle_name(names[c]) else nm
            else:
                nm = f"isr.{isr_names.get(c, f'irq{c}')}"
            if nm not in labels:
                labels.append(nm)
            codes[j] = labels.index(nm)
        code[mask] = codes[inv]
    return labels, code, p.state


def small_ids(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(vals, return_inverse=True)`` of integer ids, by a lookup table when they span
    a small range (task and IRQ ids: one pass instead of a sort).

    >>> ids, inv = small_ids(np.array([7, 3, 7, 5]))
    >>> ids.tolist(), inv.tolist()
    ([3, 5, 7], [2, 0, 2, 1])
    """
    vals = np.asarray(vals).astype(np.int64, copy=False)
    lo, hi = int(vals.min()), int(vals.max())
    if hi - lo >= 1 << 20:
        ids, inv = np.unique(vals, return_inverse=True)
        return ids, inv.ravel()
    present = np.bincount(vals - lo, minlength=hi - lo + 1) > 0
    ids = np.flatnonzero(present) + lo
    lut = np.cumsum(present) - 1
    return ids, lut[vals - lo]


def _charge(labels: list[str], owner: np.ndarray, ts: np.ndarray, w0: int, w1: int) -> dict[str, int]:
    """Busy ns per context label: the time from each event to the next (clamped to the window
    ``[w0, w1]``) goes to the owner after the event; before the first event to ``unknown``.
    Only contexts charged a positive time appear, in the order of ``labels``."""
    t_c = np.minimum(np.maximum(ts, w0), w1)
    # time accounted for up to each event (running maximum), then up to the window's end
    last = np.maximum.accumulate(np.concatenate(([w0], t_c)))
    amount = np.concatenate((t_c, [w1])) - last
    pos = amount > 0
    who = np.concatenate(([0], owner))[pos]
    # float64 sums of integer ns are exact below 2**53 ns (104 days of busy time per context)
    tot = np.bincount(who, weights=amount[pos], minlength=len(labels)).astype(np.int64)
    return {labels[i]: int(tot[i]) for i in np.flatnonzero(tot).tolist()}


_RELEVANT = np.zeros(256, dtype=bool)  # kind -> relevant (a lookup beats np.isin on 1M rows)
_RELEVANT[
    [
        EventKind.TASK_SWITCH_IN,
        EventKind.ISR_ENTER,
        EventKind.ISR_EXIT,
        EventKind.ISR_TO_SCHED,
        EventKind.IDLE,
        EventKind.OVERFLOW,
        EventKind.TRACE_START,
        EventKind.TASK_SWITCH_OUT,
    ]
] = True


def state_events(ev: Any, core: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(kind, ctx_id, ts)`` of the events the running state of one core follows (``core`` None:
    a single-core trace): its scheduling events, every core's data-loss markers (a lost packet
    loses every core's state), and as accounting points with no effect on the state (kind
    ``INVALID``) the event just before each data-loss marker (the unknown time starts there: the
    gap of ``stats.overflow_gaps``) and the last event (time is accounted up to it)."""
    kind = np.asarray(ev["kind"])
    loss = is_loss(kind)
    point = np.zeros(kind.size, dtype=bool)
    point[:-1] = loss[1:]
    point[-1:] = True
    own = _RELEVANT[kind] if core is None else (_RELEVANT[kind] & (np.asarray(ev["core"]) == core)) | loss
    rows = np.flatnonzero(own | point)
    k = kind[rows]
    k = np.where(own[rows], k, np.uint8(EventKind.INVALID)).astype(kind.dtype, copy=False)
    return k, np.asarray(ev["ctx_id"])[rows], np.asarray(ev["ts"])[rows].astype(np.int64, copy=False)


@dataclass
class CoreTimeline:
    """Who owns one core from each scheduling event to the next (cpu_load's model)."""

    core: int
    ts: np.ndarray  #: event times
    owner: np.ndarray  #: label index per interval [ts[n], ts[n+1])
    labels: list[str]
    cum: dict[int, tuple[np.ndarray, np.ndarray]]  #: label index -> its intervals, running time before each
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  #: intervals by owner, their lengths

    def running(self, label: str, t: np.ndarray) -> np.ndarray:
        """Time ``label`` owned this core from the first event up to each time ``t``."""
        if label not in self.labels or self.ts.size == 0:
            return np.zeros(np.asarray(t).size, np.int64)
        code = self.labels.index(label)
        if code not in self.cum:
            self.cum[code] = self._intervals(code)
        own, before = self.cum[code]
        t = np.asarray(t, dtype=np.int64)
        k = np.searchsorted(self.ts, t, side="right") - 1
        kk = np.maximum(k, 0)
        part = np.where(self.owner[kk] == code, t - self.ts[kk], 0)
        return np.where(k >= 0, before[np.searchsorted(own, kk, side="left")] + part, 0)

    def _intervals(self, code: int) -> tuple[np.ndarray, np.ndarray]:
        """The intervals ``code`` owns (indices, ascending) and its running time before each of
        them and after the last. The intervals are grouped by owner once (a radix sort of the
        small label indices), so each label costs its own intervals, not a pass over all."""
        if self.groups is None:
            small = self.owner.astype(np.int16 if len(self.labels) < 2**15 else np.int64)
            order = np.argsort(small, kind="stable")
            bounds = np.searchsorted(small[order], np.arange(len(self.labels) + 1))
            self.groups = (order, bounds, np.diff(self.ts, append=self.ts[-1]))
        order, bounds, dur = self.groups
        own = order[bounds[code]:bounds[code + 1]]
        return own, np.concatenate(([0], np.cumsum(dur[own])))


def _load_scalars(busy: dict[str, int], window_ns: int, prefix: str) -> dict[str, tuple[float, str]]:
    scalars: dict[str, tuple[float, str]] = {}
    for name, b in sorted(busy.items()):
        scalars[f"{prefix}{name}"] = (100.0 * b / window_ns if window_ns else float("nan"), "pct")
    idle = busy.get("idle", 0)
    unknown = busy.get("unknown", 0)
    if window_ns:
        scalars[f"{prefix}total"] = (100.0 * (window_ns - idle - unknown) / window_ns, "pct")
        scalars.setdefault(f"{prefix}unknown", (100.0 * unknown / window_ns, "pct"))
    return scalars


def _series(busy: dict[str, int], w0: int, w1: int, prefix: str) -> list[Series]:
    return [
        Series(
            f"{prefix}{n}",
            "ns",
            np.array([w0], np.int64),
            np.array([w1], np.int64),
            np.array([busy[n]], dtype=np.float64),
        )
        for n in sorted(busy)
    ]


def assemble_load(per_core: dict[int, dict[str, int]], multi: bool, w0: int, w1: int,
                  gaps: Sequence[tuple[int, int]], store: Any = None) -> Result:
    """The result from the busy time per core over ``[w0, w1]``: machine-wide load (busy time summed
    over the cores, as a share of ``cores x window``) and, when ``multi``, per core."""
    drop_log = DropLog()
    drop_log.add_gaps("cpu.load", gaps, np.ones(len(gaps), np.int64))
    window_ns = max(w1 - w0, 0)
    busy: dict[str, int] = {}
    for b in per_core.values():
        for name, v in b.items():
            busy[name] = busy.get(name, 0) + v
    scalars = _load_scalars(busy, window_ns * len(per_core), "cpu.load.")
    series = _series(busy, w0, w1, "cpu.busy.")
    if multi:
        for c, b in per_core.items():
            scalars.update(_load_scalars(b, window_ns, f"cpu.load.core{c}."))
            series += _series(b, w0, w1, f"cpu.busy.core{c}.")
    summary = CpuLoadSummary(source="trace", scalars=scalars, window_ns=window_ns, busy_ns=dict(busy),
                             excluded=drop_log.count(), drop_log=tuple(drop_log.entries))
    return Result(make_table(series, "trace", store), summary)


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


#: no window: the whole recording
_ALL = (-(1 << 62), 1 << 62)


class _Core:
    """One core's carried state and busy time per context (by id), charged inside ``window``."""

    def __init__(self, t0: int, window: tuple[int, int] = _ALL) -> None:
        self.window = window
        self.last_ts = t0  #: time accounted up to
        self.state: State = START  #: the kernel state (:func:`.kstate.kernel_pass`)
        self.busy: dict[str, int] = {}  #: label of the id-only naming -> ns
        self.has_context = False  #: a switch-in, ISR entry or IDLE was seen (else: no load)

    def feed(self, kind: np.ndarray, ctx: np.ndarray, ts: np.ndarray) -> ChunkTimeline:
        """Charge one chunk's scheduling events of this core; returns the chunk's timeline (for
        running-time queries at times inside the chunk). The carried state owns the core from the
        time accounted up to: a point (kind ``INVALID``, no effect on the state) there heads the
        chunk's events."""
        before = dict(self.busy)
        if not kind.size and self.state == START:
            return ChunkTimeline(None, before)
        ctx_kinds = (kind == K.TASK_SWITCH_IN) | (kind == K.ISR_ENTER) | (kind == K.IDLE)
        self.has_context |= bool(ctx_kinds.any())
        kind = np.concatenate((np.array([K.INVALID], np.uint8), kind))
        ctx = np.concatenate((np.zeros(1, np.int64), ctx.astype(np.int64)))
        ts = np.concatenate((np.array([self.last_ts], np.int64), ts.astype(np.int64)))
        labels, owner, state = _owners(_NAMELESS, kind, ctx, self.state)
        w0, w1 = max(self.last_ts, self.window[0]), min(int(ts[-1]), self.window[1])
        for label, b in _charge(labels, owner, ts, w0, w1).items():
            self.busy[label] = self.busy.get(label, 0) + b
        self._carry(state)
        self.last_ts = int(ts[-1])
        return ChunkTimeline(CoreTimeline(0, ts, owner, labels, {}), before)

    def _carry(self, state: State) -> None:
        self.state = state

    def finish(self, t1: int) -> None:
        """Charge the time from the last event to the recording's end ``t1``."""
        kind, tid, stack = self.state
        owner = (f"isr.irq{stack[-1]}" if stack else "idle" if kind == OWNER_IDLE
                 else f"task.task#{tid}" if kind == OWNER_TASK else "unknown")
        w0, w1 = max(self.last_ts, self.window[0]), min(t1, self.window[1])
        if w1 > w0:
            self.busy[owner] = self.busy.get(owner, 0) + w1 - w0
        self.last_ts = max(self.last_ts, t1)


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
    """CPU load over chunks: :meth:`feed` each chunk, then :meth:`finish`. With ``cores``, the
    per-core state another stream feeds (``KernelStream.cores``: one state pass per chunk for
    both); without, its own, charged inside ``window`` (default: the whole recording)."""

    def __init__(self, cores: dict[int, _Core] | None = None, window: tuple[int, int] | None = None,
                 store: Any = None) -> None:
        self.store = store  #: the source's spill (:class:`.spill.Spill`), or None: in memory
        self.shared = cores is not None
        self.window = window
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
            core = self.cores.setdefault(c, _Core(self.t0, self.window or _ALL))
            core.feed(*state_events(ev, c if self.multi else None))

    def finish(self, last: Trace, gaps: list[tuple[int, int]]) -> Result:
        """The whole recording's CPU load (``last`` = the last chunk, ``gaps`` = the recording's
        data-loss gaps)."""
        source = "logic" if is_logic(last) else "trace"
        if source == "logic" or self.t0 is None or self.t1 is None:
            return Result(make_table([], source, self.store), CpuLoadSummary(source=source))
        w0, w1 = self.window or (self.t0, self.t1)
        cores = sorted(self.seen_cores) if self.multi else [0]
        per_core: dict[int, dict[str, int]] = {}
        for c in cores:
            core = self.cores.get(c)
            if core is not None and core.has_context:
                core.finish(w1)
                if w0 < self.t0:  # a window opening before the first event: unknown until it
                    core.busy["unknown"] = core.busy.get("unknown", 0) + min(self.t0, w1) - w0
                per_core[c] = _named(core.busy, last)
        if not per_core:
            return Result(make_table([], "trace", self.store), CpuLoadSummary(source="trace"))
        return assemble_load(per_core, len(cores) > 1, w0, w1, gaps, self.store)


def cpu_load(trace: Trace, *, window: tuple[int, int] | None = None) -> Result:
    """Busy time per task and ISR of a whole recording over ``window`` (default: all of it): the
    reducer above over one chunk.

    On a multi-core trace every core is charged separately (its own ISR stack and running task):
    ``cpu.load.core<N>.<context>`` per core, and ``cpu.load.<context>`` over the whole machine
    (busy time summed over the cores, as a share of ``cores x window``)."""
    stream = CpuLoadStream(window=window)
    stream.feed(trace)
    return stream.finish(trace, overflow_gaps(trace) if len(trace) and not is_logic(trace) else [])
