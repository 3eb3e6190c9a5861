"""Raw CTF records -> the common event model (Zephyr's CTF event names, as for SystemView/TraceX).

=================================================  ===============================================
CTF event (Zephyr ``subsys/tracing/ctf`` names)    ``kind`` (payload)
=================================================  ===============================================
``thread_switched_in`` / ``thread_switched_out``   TASK_SWITCH_IN / TASK_SWITCH_OUT (``thread_id``)
``isr_enter`` / ``isr_exit``                       ISR_ENTER / ISR_EXIT (no IRQ number: ``ctx_id`` -1)
``isr_exit_to_scheduler``                          ISR_TO_SCHED
``idle``                                           IDLE
``thread_create``                                  TASK_CREATE (``target_id``)
``thread_abort``, ``thread_sched_abort``           TASK_TERMINATE (``target_id``)
``thread_[sched_]ready/resume/wakeup``             TASK_READY (``target_id``)
``thread_[sched_]pend(ing)/suspend``               TASK_BLOCK (``target_id``)
``named_event`` (name, arg0, arg1)                 MARK: ``marker`` = arg0, ``value`` = arg1,
                                                   ``markers`` names it
``*_exit``                                         API_RETURN (``value`` = ``ret`` if recorded)
``*_enter``, ``*_blocking``, ``*_init``, other     API_CALL (``value`` = first integer field)
object calls (``semaphore_*``, ``mutex_*``, ...)
thread_info, thread_name_set, priority, locks ...  OTHER (names/priorities fill ``tasks``)
=================================================  ===============================================

``src_id`` = the CTF event id, ``src_offset`` = byte offset of the event in its stream file,
``ts_raw`` = the stream's default clock value (wrap-unrolled), ``core`` = packet ``cpu_id``.
Tasks are keyed by ``thread_id`` (the ``k_thread`` address, ``Task.native_handle``) in order of
first appearance; a task's name is the last non-empty name recorded for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._meta import Diagnostic, EventKind, Marker, Task, TraceMeta
from ..errors import diagnostic
from .packets import RawEvent
from .tsdl import ClockDecl, Metadata

if TYPE_CHECKING:  # pragma: no cover - NumPy is imported by build_trace (a small `info` needs none)
    import numpy as np

    from ..model import Trace

#: ``VALUE_NULL`` of the model (= int64 min), spelled here so that this module needs no NumPy
VALUE_NULL = -(1 << 63)

K = EventKind
EXACT: dict[str, EventKind] = {
    "thread_switched_in": K.TASK_SWITCH_IN, "thread_switched_out": K.TASK_SWITCH_OUT,
    "isr_enter": K.ISR_ENTER, "isr_exit": K.ISR_EXIT, "isr_exit_to_scheduler": K.ISR_TO_SCHED,
    "idle": K.IDLE, "thread_create": K.TASK_CREATE,
    "thread_abort": K.TASK_TERMINATE, "thread_sched_abort": K.TASK_TERMINATE,
    "thread_ready": K.TASK_READY, "thread_sched_ready": K.TASK_READY, "thread_resume": K.TASK_READY,
    "thread_sched_resume": K.TASK_READY, "thread_wakeup": K.TASK_READY,
    "thread_sched_wakeup": K.TASK_READY,
    "thread_pending": K.TASK_BLOCK, "thread_sched_pend": K.TASK_BLOCK,
    "thread_suspend": K.TASK_BLOCK, "thread_sched_suspend": K.TASK_BLOCK,
    "named_event": K.MARK,
    "thread_info": K.OTHER, "thread_name_set": K.OTHER, "thread_priority_set": K.OTHER,
    "thread_sched_priority_set": K.OTHER, "thread_user_mode_enter": K.OTHER,
    "thread_sched_lock": K.OTHER, "thread_sched_unlock": K.OTHER, "thread_heap_assign": K.OTHER,
}
#: Zephyr object families whose other events are service calls (API_CALL)
API_PREFIXES = ("semaphore_", "mutex_", "timer_", "msgq_", "mem_slab_", "condvar_", "work_", "poll_",
                "mbox_", "event_", "socket_", "net_", "gpio_", "k_", "thread_", "pipe_", "fifo_",
                "lifo_", "stack_", "queue_", "heap_", "sem_", "syscall_")
_TARGET = (K.TASK_CREATE, K.TASK_TERMINATE, K.TASK_READY, K.TASK_BLOCK)


def kind_of(name: str) -> EventKind:
    """Event kind for a CTF event name (Zephyr's naming)."""
    k = EXACT.get(name)
    if k is not None:
        return k
    if name.endswith("_exit"):
        return K.API_RETURN
    if name.endswith(("_enter", "_blocking", "_init")) or name.startswith(API_PREFIXES):
        return K.API_CALL
    return K.OTHER


def _first_int(fields: Any) -> int | None:
    if isinstance(fields, dict):
        for v in fields.values():
            if isinstance(v, int) and not isinstance(v, bool):
                return int(v)
    return None


class _Tasks:
    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self.prio: dict[int, int] = {}
        self.cores: dict[int, set[int]] = {}

    def see(self, f: dict[str, Any], core: int) -> int:
        tid = int(f["thread_id"])
        i = self.index.setdefault(tid, len(self.index))
        name = f.get("name")
        if isinstance(name, str) and name:
            self.names[tid] = name
        if isinstance(f.get("prio"), int):
            self.prio[tid] = int(f["prio"])
        self.cores.setdefault(tid, set()).add(core)
        return i

    def table(self) -> list[Task]:
        out = []
        for tid, i in self.index.items():
            cores = self.cores.get(tid, set())
            out.append(Task(i, self.names.get(tid, f"thread@0x{tid:x}"), self.prio.get(tid, -1), tid,
                            next(iter(cores)) if len(cores) == 1 else -1))
        return out


def _row(rec: RawEvent, ev: np.ndarray, i: int, arg: np.ndarray, tasks: _Tasks,
         markers: dict[int, str]) -> None:
    core = max(rec.cpu, 0)
    ev["core"][i] = core
    ev["src_offset"][i] = rec.offset
    if rec.eid < 0:  # lost events (discarded counter, damaged region)
        ev["kind"][i] = K.OVERFLOW
        ev["src_id"][i] = 0
        lost = (rec.fields or {}).get("lost")
        ev["value"][i] = lost if isinstance(lost, int) else VALUE_NULL
        return
    k = kind_of(rec.name)
    ev["kind"][i] = k
    ev["src_id"][i] = rec.eid
    f = rec.fields if isinstance(rec.fields, dict) else {}
    tid = tasks.see(f, core) if isinstance(f.get("thread_id"), int) else -1
    if k == K.TASK_SWITCH_IN:
        arg[i] = tid
    elif k in _TARGET:
        ev["target_id"][i] = tid
    elif k == K.MARK:
        m = f.get("arg0")
        if isinstance(m, int):
            ev["marker"][i] = m & 0xFFFFFFFF
            markers.setdefault(int(m), str(f.get("name", "")))
        if isinstance(f.get("arg1"), int):
            ev["value"][i] = int(f["arg1"])
    elif k == K.API_RETURN:
        if isinstance(f.get("ret"), int):
            ev["value"][i] = int(f["ret"])
    elif k == K.API_CALL:
        v = _first_int(f)
        if v is not None:
            ev["value"][i] = v


def build_trace(meta: Metadata, records: list[RawEvent], *, clock: ClockDecl | None, path: str,
                sha256: str, diags: list[Diagnostic], extra: dict[str, Any]) -> Trace:
    import numpy as np

    from ..model import Trace, empty_events, fill_ts
    from ..systemview.convert import track_context

    n = len(records)
    ev = empty_events(n)
    arg = np.full(n, -1, dtype=np.int32)
    tasks, markers = _Tasks(), {}
    have_ts = clock is not None and all(r.ts is not None for r in records)
    if have_ts:
        ev["ts_raw"] = np.array([r.ts for r in records], dtype=np.uint64) if n else 0
    else:
        ev["ts_raw"] = np.arange(n, dtype=np.uint64)
        diags.append(diagnostic("CTF_NO_CLOCK", 0, "the streams map no clock: ts_raw is the event "
                                "number and ts is in ticks"))
    for i, rec in enumerate(records):
        _row(rec, ev, i, arg, tasks, markers)
    if n:
        order = np.argsort(ev["ts_raw"], kind="stable") if have_ts else np.arange(n)
        ev, arg = ev[order], arg[order]
        for c in np.flatnonzero(np.bincount(ev["core"])).tolist():  # not np.unique: numpy.ma, 10 ms
            rows = np.flatnonzero(ev["core"] == c)
            ct, ci = track_context(ev["kind"][rows], arg[rows])
            ev["ctx_type"][rows] = ct
            ev["ctx_id"][rows] = ci
    tick_hz = clock.freq if have_ts and clock is not None else None
    origin = int(ev["ts_raw"].min()) if n else 0
    fill_ts(ev, tick_hz, origin)
    cores = int(np.count_nonzero(np.bincount(ev["core"]))) if n else 1
    tm = trace_meta(meta, tick_hz=tick_hz, origin=origin, cores=cores, path=path, sha256=sha256,
                    extra=extra)
    return Trace(ev, tm, tasks=tasks.table(),
                 markers=[Marker(k, v) for k, v in sorted(markers.items())], diagnostics=diags)


def trace_meta(meta: Metadata, *, tick_hz: int | None, origin: int, cores: int, path: str, sha256: str,
               extra: dict[str, Any]) -> TraceMeta:
    names = {e.name for e in meta.events.values()}
    rtos = "zephyr" if {"thread_switched_in", "isr_enter", "named_event"} <= names else \
        str(meta.env.get("domain", ""))
    return TraceMeta(source_format="ctf", source_version=f"{meta.major}.{meta.minor}", source_path=path,
                     source_sha256=sha256, tick_hz=tick_hz, clock_domain="target_timer", rtos=rtos,
                     cores=max(cores, 1), origin_raw=origin, source_kind="trace", extra=extra)


def summarize_records(meta: Metadata, records: list[RawEvent], *, clock: ClockDecl | None, path: str,
                      sha256: str, diags: list[Diagnostic], extra: dict[str, Any]) -> Any:
    """What :func:`build_trace` makes of ``records``, as a :class:`~trace_parsers.summary.TraceSummary`
    (no events table, no NumPy): the kinds, tasks and markers of :func:`_row`, the duration of
    ``ts``. ``tests/analyzers/test_info_small.py`` compares both on every capture."""
    from .._meta import int_ticks_to_ns
    from ..summary import TraceSummary

    n = len(records)
    counts = [0] * (max(EventKind) + 1)
    tasks, markers, cores = _Tasks(), {}, set()
    for rec in records:
        core = max(rec.cpu, 0)
        cores.add(core)
        if rec.eid < 0:
            counts[K.OVERFLOW] += 1
            continue
        k = kind_of(rec.name)
        counts[k] += 1
        f = rec.fields if isinstance(rec.fields, dict) else {}
        if isinstance(f.get("thread_id"), int):
            tasks.see(f, core)
        if k == K.MARK and isinstance(f.get("arg0"), int):
            markers.setdefault(int(f["arg0"]), str(f.get("name", "")))
    have_ts = clock is not None and all(r.ts is not None for r in records)
    if not have_ts:
        diags.append(diagnostic("CTF_NO_CLOCK", 0, "the streams map no clock: ts_raw is the event "
                                "number and ts is in ticks"))
    tick_hz = clock.freq if have_ts and clock is not None else None
    if have_ts and n:
        origin = min(int(r.ts) for r in records)  # type: ignore[arg-type]
        span = max(int(r.ts) for r in records) - origin  # type: ignore[arg-type]
    else:
        origin, span = 0, max(n - 1, 0)
    tm = trace_meta(meta, tick_hz=tick_hz, origin=origin, cores=len(cores) if n else 1, path=path,
                    sha256=sha256, extra=extra)
    return TraceSummary(meta=tm, events=n, duration=int_ticks_to_ns(span, tick_hz) if tick_hz else span,
                        kind_counts={EventKind(k).name: c for k, c in enumerate(counts) if c},
                        tasks=tasks.table(), markers=[Marker(k, v) for k, v in sorted(markers.items())],
                        diagnostics=diags)
