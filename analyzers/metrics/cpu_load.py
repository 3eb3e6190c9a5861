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
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from trace_parsers.model import EventKind, Trace

from ..sites import Site, is_logic
from .base import Result, Series, Summary, make_table
from .kstate import is_loss, isr_walk
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


def _owners(trace: Trace, kind: np.ndarray, ctx_id: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Context charged after each scheduling event: ``(labels, owner)``, ``owner[n]`` indexing
    ``labels`` for the time from event ``n`` to event ``n + 1``.

    The running state is an ISR stack over a current task (:mod:`.kstate`: ``ISR_ENTER`` pushes,
    ``ISR_EXIT`` and ``ISR_TO_SCHED`` pop, never below empty; a switch-in, ``OVERFLOW`` or a
    restart empties it); ``TASK_SWITCH_IN``/``IDLE`` set the task, ``TASK_SWITCH_OUT`` sets idle
    when no ISR is running; ``OVERFLOW`` and a restart make it ``unknown``, from the last event
    before them. The owner is the innermost ISR, else the task.

    >>> from trace_parsers.model import Isr, Task, TraceMeta, empty_events
    >>> K = EventKind
    >>> tr = Trace(empty_events(0), TraceMeta("x"), tasks=[Task(0, "a")], isrs=[Isr(3, "T")])
    >>> kind = np.array([K.TASK_SWITCH_IN, K.ISR_ENTER, K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED, K.IDLE])
    >>> labels, owner = _owners(tr, kind, np.array([0, 3, 4, -1, -1, -1]))
    >>> [labels[o] for o in owner]
    ['task.a', 'isr.T', 'isr.irq4', 'isr.T', 'task.a', 'idle']
    """
    n = kind.size
    enter = kind == EventKind.ISR_ENTER
    loss = is_loss(kind)
    depth, before, _ = isr_walk(kind)

    # labels: 0 unknown, 1 idle, then one per task / ISR id seen
    labels = ["unknown", "idle"]
    names = {t.ctx_id: t.name for t in trace.tasks}
    isr_names = {i.number: i.name for i in trace.isrs}
    idle_ids = {cid for cid, nm in names.items() if is_idle_name(nm)}
    code = np.zeros(n, dtype=np.int64)
    cid = ctx_id.astype(np.int64)
    switch_in = kind == EventKind.TASK_SWITCH_IN
    for mask, label in ((switch_in, None), (enter, "isr")):
        if not mask.any():
            continue
        vals = cid[mask]
        ids, inv = small_ids(vals)
        codes = np.empty(ids.size, dtype=np.int64)
        for j, c in enumerate(ids.tolist()):
            if label is None:
                nm = "idle" if c in idle_ids else f"task.{names.get(c, f'task#{c}')}"
            else:
                nm = f"isr.{isr_names.get(c, f'irq{c}')}"
            if nm not in labels:
                labels.append(nm)
            codes[j] = labels.index(nm)
        code[mask] = codes[inv]

    # current task: forward fill of the events that set it (-1: leaves it unchanged)
    setter = np.full(n, -1, dtype=np.int64)
    setter[switch_in] = code[switch_in]
    setter[(kind == EventKind.IDLE) | ((kind == EventKind.TASK_SWITCH_OUT) & (before == 0))] = 1
    setter[loss] = 0
    last_set = np.maximum.accumulate(np.where(setter >= 0, np.arange(n), -1))
    task = np.where(last_set >= 0, setter[np.maximum(last_set, 0)], 0)

    # inside an ISR the owner is the innermost one: the last ISR_ENTER (at or before the event)
    # that reached the current depth
    owner = task
    nested = np.flatnonzero(depth > 0)
    ent = np.flatnonzero(enter)
    if nested.size and ent.size:
        span = n + 1
        key = depth[ent] * span + ent
        order = np.argsort(key, kind="stable")  # by depth, then position
        key, ent = key[order], ent[order]
        pos = np.searchsorted(key, depth[nested] * span + nested, side="right") - 1
        owner[nested] = code[ent[pos]]
    lost = np.flatnonzero(loss[1:])  # the time up to a data-loss marker is unknown
    owner[lost] = 0
    return labels, owner


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
    Only contexts charged a positive time appear, in the order they were first charged."""
    t_c = np.minimum(np.maximum(ts, w0), w1)
    # time accounted for up to each event (running maximum), then up to the window's end
    last = np.maximum.accumulate(np.concatenate(([w0], t_c)))
    amount = np.concatenate((t_c, [w1])) - last
    pos = amount > 0
    who = np.concatenate(([0], owner))[pos]
    tot = np.zeros(len(labels), dtype=np.int64)
    np.add.at(tot, who, amount[pos])
    ids, first = np.unique(who, return_index=True)
    return {labels[i]: int(tot[i]) for i in ids[np.argsort(first)].tolist()}


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
    return k, np.asarray(ev["ctx_id"])[rows], np.asarray(ev["ts"])[rows].astype(np.int64)


def _cores(trace: Trace) -> list[int]:
    """The cores a trace's scheduling events were recorded on (one entry on single-core traces)."""
    ev = trace.columns
    if trace.meta.cores <= 1 or not len(ev):
        return [0]
    return sorted(np.unique(ev["core"]).tolist())


class CoreState(NamedTuple):
    """The running state of one core over a whole trace (:func:`core_state`)."""

    kind: np.ndarray  #: the events of :func:`state_events`
    ts: np.ndarray
    labels: list[str]
    owner: np.ndarray  #: ``_owners``: label index from each event to the next


#: the last trace's core states: CPU load and the kernel metrics read one pass, not one each. Keyed by
#: the trace's event storage (weakly: a trace let go is not kept alive) and the core.
_STATES: list[tuple[Any, int | None, CoreState]] = []


def core_state(trace: Trace, core: int | None) -> CoreState:
    """The running state of ``core`` (None: a single-core trace) over ``trace``, computed once."""
    held = trace.held()
    for ref, c, got in _STATES:
        if ref() is held and c == core:
            return got
    k, ctx, ts = state_events(trace.columns, core)
    labels, owner = _owners(trace, k, ctx)
    got = CoreState(k, ts, labels, owner)
    _STATES[:] = [e for e in _STATES if e[0]() is held] + [(weakref.ref(held), core, got)]
    return got


def _busy(trace: Trace, core: int | None, w0: int, w1: int) -> dict[str, int] | None:
    """Busy ns per context label over ``[w0, w1]`` from one core's events; None without any
    scheduling event (a marker-only trace: nothing to attribute)."""
    st = core_state(trace, core)
    k = st.kind
    if not ((k == EventKind.TASK_SWITCH_IN) | (k == EventKind.ISR_ENTER) | (k == EventKind.IDLE)).any():
        return None
    return _charge(st.labels, st.owner, st.ts, w0, w1)


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
                  gaps: Sequence[tuple[int, int]]) -> Result:
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
    return Result(make_table(series, "trace"), summary)


def cpu_load(trace: Trace, *, window: tuple[int, int] | None = None) -> Result:
    """Busy time per task and ISR over ``window`` (default: the whole trace).

    On a multi-core trace every core is charged separately (its own ISR stack and running task):
    ``cpu.load.core<N>.<context>`` per core, and ``cpu.load.<context>`` over the whole machine
    (busy time summed over the cores, as a share of ``cores x window``)."""
    if is_logic(trace) or len(trace) == 0:
        return Result(
            make_table([], "logic" if is_logic(trace) else "trace"),
            CpuLoadSummary(source="logic" if is_logic(trace) else "trace"),
        )
    ev = trace.columns
    w0, w1 = window if window is not None else (int(ev["ts"][0]), int(ev["ts"][-1]))
    cores = _cores(trace)
    per_core: dict[int, dict[str, int]] = {}
    for c in cores:
        b = _busy(trace, None if len(cores) == 1 else c, w0, w1)
        if b is not None:
            per_core[c] = b
    if not per_core:
        return Result(make_table([], "trace"), CpuLoadSummary(source="trace"))
    return assemble_load(per_core, len(cores) > 1, w0, w1, overflow_gaps(trace))


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any]) -> Result:
    return cpu_load(trace)
