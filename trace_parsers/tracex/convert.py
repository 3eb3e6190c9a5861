"""Raw TraceX records -> the common event model (:class:`~trace_parsers.model.Trace`).

Mapping (one row per recorded event, same order as :class:`~.decode.RawTrace`; vectorised):

=====================================  =========================================================
``thread_pointer``                      ``ctx_type`` / ``ctx_id``
=====================================  =========================================================
thread address                          TASK, dense index into ``Trace.tasks`` (registry threads
                                        in slot order, then unregistered pointers seen in events
                                        as ``Un-named Thread 0x...``)
0xFFFFFFFF                              ISR; ``ctx_id`` = info word 2 (the ISR id) on ISR_ENTER /
                                        ISR_EXIT rows, -1 on other ISR-context rows
0xF0F0F0F0                              INIT, ``ctx_id`` -1
=====================================  =========================================================

``kind``: THREAD_RESUME -> TASK_READY and THREAD_SUSPEND -> TASK_BLOCK (``target_id`` = task of
info word 1), ISR_ENTER/EXIT -> ISR_ENTER/ISR_EXIT, RUNNING (6, written only by ``tx_trace_enable``) ->
TRACE_START, TIME_SLICE -> OTHER, ThreadX/FileX/NetX Duo/USBX services -> API_CALL, user
events (>= 4096) -> USER except the crosstrace sites ``4096 + site id`` -> MARK (``marker`` = site
id), unnamed ids -> OTHER (``TRX_UNKNOWN_ID``).  ``src_id`` = event id (low 16 bits), ``core`` =
bits 24..31 of the raw id (SMP), ``value`` = info word 1, ``src_offset`` = file offset of the
32-byte record.  ThreadX records no context-switch event: TraceX-style TASK_SWITCH_IN rows are
produced by the derived view, :func:`trace_parsers.tracex.stats.with_switch_events`
(``read_tracex(..., switches=True)``); they are the only TASK_SWITCH_IN rows of a TraceX trace.

``ts_raw`` = the masked timestamps unrolled into a count-up uint64 (down-counters are complemented,
``mask - t``), so ``ts_raw - ts_raw[0]`` equals TraceX's relative time; ``ts`` is in ns when
``tick_hz`` is known, else in ticks (``TRX_NO_TICK_HZ``).  All eight words of every event stay
available through ``trace.meta.extra["tracex_raw"]`` (a :class:`~.decode.RawTrace`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..model import (
    EVENT_DTYPE,
    CtxType,
    Diagnostic,
    EventKind,
    Isr,
    Marker,
    Task,
    Trace,
    TraceMeta,
    ticks_to_ns,
)
from . import format as fmt
from ._common import conversion_diagnostics
from .decode import RawTrace


def _kind_table() -> np.ndarray:
    lut = np.full(65536, EventKind.USER, dtype=np.uint8)
    lut[:fmt.TX_TRACE_USER_EVENT_START] = EventKind.OTHER
    lut[fmt.known_event_ids()] = EventKind.API_CALL
    lut[fmt.TX_TRACE_THREAD_RESUME] = EventKind.TASK_READY
    lut[fmt.TX_TRACE_THREAD_SUSPEND] = EventKind.TASK_BLOCK
    lut[fmt.TX_TRACE_ISR_ENTER] = EventKind.ISR_ENTER
    lut[fmt.TX_TRACE_ISR_EXIT] = EventKind.ISR_EXIT
    lut[fmt.TX_TRACE_TIME_SLICE] = EventKind.OTHER
    lut[fmt.TX_TRACE_RUNNING] = EventKind.TRACE_START  # only tx_trace_enable() writes it
    for site in fmt.CT_SITES:
        lut[fmt.TX_TRACE_USER_EVENT_START + site] = EventKind.MARK
    return lut


_KIND = _kind_table()
#: plain ints (an IntEnum member lookup costs ~1 us each, per step)
_TASK, _ISR, _INIT, _NONE = int(CtxType.TASK), int(CtxType.ISR), int(CtxType.INIT), int(CtxType.NONE)

#: event ids that need more than the kind table (one gather + one nonzero find them all)
F_EDGE, F_SCHED, F_MARK, F_UNKNOWN = 1, 2, 4, 8


def _flag_table() -> np.ndarray:
    lut = np.zeros(65536, dtype=np.uint8)
    lut[[fmt.TX_TRACE_ISR_ENTER, fmt.TX_TRACE_ISR_EXIT]] = F_EDGE
    lut[[fmt.TX_TRACE_THREAD_RESUME, fmt.TX_TRACE_THREAD_SUSPEND]] = F_SCHED
    lut[_KIND == EventKind.MARK] = F_MARK
    lut[_KIND == EventKind.OTHER] = F_UNKNOWN
    lut[fmt.TX_TRACE_TIME_SLICE] = 0
    return lut


#: event id -> kind (low byte) | flags << 8: one gather gives both
_KIND_FLAGS = _KIND.astype(np.uint16) | (_flag_table().astype(np.uint16) << np.uint16(8))
_FILL: dict[str, np.ndarray] = {}  #: constant columns (-1, 0), grown on demand


def _const(dtype: str, value: int, m: int) -> np.ndarray:
    """``m`` copies of ``value``: copying a contiguous array into a row field is ~3x faster than
    broadcasting a scalar into it."""
    key = f"{dtype}{value}"
    arr = _FILL.get(key)
    if arr is None or arr.shape[0] < m:
        arr = _FILL[key] = np.full(max(m, CHUNK), value, dtype=dtype)
    return arr[:m]


#: events converted per step: the output rows of a step (51 B each) stay in the CPU's last-level
#: cache while their eleven columns are written, the temporaries stay small (peak memory ~ the
#: output) and the fixed cost of a step (~50 NumPy calls) stays under 10 % of its work
CHUNK = 1 << 16


class _Threads:
    """Thread address -> dense task index: registry threads first, then unknown pointers in order of
    first appearance (TraceX's rule: a context resolves through the *first* registry object with
    that address; if that is not a thread, or there is none, the pointer is an "Un-named Thread")."""

    def __init__(self, raw: RawTrace) -> None:
        first: dict[int, object] = {}
        for o in raw.objects:
            first.setdefault(o.address, o)
        regs = [o for o in raw.threads() if first[o.address] is o]
        self.addrs = [o.address for o in regs]
        self.names = [o.name for o in regs]
        self.prios: list[int | None] = [o.registry_priority for o in regs]
        self._sort()

    def _sort(self) -> None:
        a = np.asarray(self.addrs, dtype=np.uint32)
        self._order = np.argsort(a, kind="stable").astype(np.int32)
        self._sorted = a[self._order]

    def add_unknown(self, ctx: np.ndarray) -> None:
        thr = ctx[(ctx != fmt.CTX_ISR) & (ctx != fmt.CTX_INIT) & (ctx != 0)]
        if self._sorted.size:
            pos = np.minimum(np.searchsorted(self._sorted, thr), self._sorted.size - 1)
            thr = thr[self._sorted[pos] != thr]
        if thr.size:
            uniq, first = np.unique(thr, return_index=True)
            for a in uniq[np.argsort(first)].tolist():
                self.addrs.append(int(a))
                self.names.append(f"Un-named Thread 0x{int(a):08X}")
                self.prios.append(None)
            self._sort()

    def lookup(self, values: np.ndarray) -> np.ndarray:
        """Dense index of every value (int32), -1 where it is not a known thread."""
        if not self._sorted.size:
            return np.full(values.shape[0], -1, dtype=np.int32)
        pos = np.searchsorted(self._sorted, values)
        np.minimum(pos, self._sorted.size - 1, out=pos)
        hit = self._sorted[pos] == values
        out = self._order[pos]
        out[~hit] = -1
        return out


def thread_table(raw: RawTrace, ctx: np.ndarray) -> tuple[list[int], list[str], list[int | None]]:
    """Thread addresses, names and registry priorities (registry threads, then unknown pointers)."""
    t = _Threads(raw)
    t.add_unknown(ctx)
    return t.addrs, t.names, t.prios


def lookup(addrs: list[int], values: np.ndarray) -> np.ndarray:
    """Dense index of every value in ``addrs`` (int32), -1 where absent (first index on duplicates)."""
    if not addrs:
        return np.full(values.shape[0], -1, dtype=np.int32)
    a = np.asarray(addrs, dtype=np.uint32)
    order = np.argsort(a, kind="stable")
    sa = a[order]
    pos = np.minimum(np.searchsorted(sa, values), sa.size - 1)
    return np.where(sa[pos] == values, order[pos], -1).astype(np.int32)


class _Acc:
    """What the conversion gathers across chunks for the side tables and the diagnostics."""

    def __init__(self) -> None:
        self.first_prio: dict[int, int] = {}  #: task -> priority word of its first event
        self.cores: dict[int, set[int]] = {}  #: task -> cores it ran on
        self.unknown_ids: dict[int, int] = {}  #: unnamed event id -> count
        self.first_unknown = -1  #: file offset of the first unnamed event id
        self.isr_ids: set[int] = set()
        self.max_core = 0
        #: scheduling rows whose target is not (yet) a known thread: (rows, info words 1); an
        #: unregistered thread seen as a context in a later step still resolves (:meth:`resolve`)
        self.unresolved: list[tuple[np.ndarray, np.ndarray]] = []

    def resolve(self, ev: np.ndarray, threads: _Threads) -> None:
        if self.unresolved:
            rows = np.concatenate([r for r, _ in self.unresolved])
            ev["target_id"][rows] = threads.lookup(np.concatenate([v for _, v in self.unresolved]))


def _ctx_types(values: np.ndarray) -> np.ndarray:
    t = np.full(values.shape[0], _TASK, dtype=np.uint8)
    t[values == fmt.CTX_ISR] = _ISR
    t[values == fmt.CTX_INIT] = _INIT
    t[values == 0] = _NONE
    return t


def _contexts(ctx: np.ndarray, threads: _Threads) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """``(starts, ctx_type, ctx_id)`` per run of equal ``thread_pointer`` words (``starts`` = first
    event of each run), or per event (``starts`` None) when the runs are short: consecutive events
    mostly share their context, so the lookups are done once per run."""
    m = ctx.shape[0]
    cut = np.flatnonzero(ctx[1:] != ctx[:-1])
    starts = None
    values = ctx
    if cut.size * 4 <= m:
        starts = np.empty(cut.size + 1, dtype=np.int64)
        starts[0] = 0
        np.add(cut, 1, out=starts[1:])
        values = ctx[starts]
    ctype = _ctx_types(values)
    ids = threads.lookup(values)
    if (ids[ctype == _TASK] < 0).any():  # pointers missing from the registry: "Un-named Thread"
        threads.add_unknown(values)
        ids = threads.lookup(values)
    return starts, ctype, ids


def _ids_and_cores(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Event ids (low 16 bits), cores (bits 24..31) and the highest core of the raw id words."""
    raw_id = w[:, 2]
    m = raw_id.shape[0]
    if int(raw_id.max()) <= 0xFFFF:  # single core, no stray bits: the words are the ids
        return raw_id, _const("u1", 0, m), 0
    core = (raw_id >> np.uint32(24)).astype(np.uint8)
    return raw_id & np.uint32(0xFFFF), core, int(core.max())


def _task_facts(acc: _Acc, w: np.ndarray, starts: np.ndarray | None, ctype: np.ndarray, ids: np.ndarray,
                per_event: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
    """Per task: the priority of its first event and the cores it ran on (``per_event`` = the
    events' ctx_type, ctx_id and core, given on SMP traces only)."""
    task = ctype == _TASK
    tids = ids[task]
    if not tids.size:
        return
    pos = starts[task] if starts is not None else np.flatnonzero(task)
    uniq, first = np.unique(tids, return_index=True)
    for t, i in zip(uniq.tolist(), first.tolist()):
        if t not in acc.first_prio:
            acc.first_prio[t] = int(w[pos[i], 1] & 0x3FF)
    if per_event is None:
        for t in uniq.tolist():
            acc.cores.setdefault(t, set()).add(0)
        return
    ct, ci, core = per_event
    te = ct == _TASK
    pairs = np.unique(ci[te].astype(np.int64) * 256 + core[te], return_counts=True)[0]
    for p in pairs.tolist():
        acc.cores.setdefault(p >> 8, set()).add(p & 255)


def _fill(out: np.ndarray, raw: RawTrace, s: int, threads: _Threads, acc: _Acc, origin: int,
          ns: Callable[[np.ndarray], np.ndarray] | None) -> None:
    """Write every column of the rows ``out`` = events ``s..s + len(out)`` (each column once)."""
    m = out.shape[0]
    w = raw.chunk(s, s + m)
    eid, core, cmax = _ids_and_cores(w)
    acc.max_core = max(acc.max_core, cmax)
    out["src_id"] = eid
    kf = _KIND_FLAGS[eid]
    out["kind"] = kf  # the low byte
    out["core"] = core
    out["value"] = w[:, 4]
    rel = raw.relative_ticks[s:s + m]
    np.add(rel.view(np.uint64), np.uint64(origin), out=out["ts_raw"])  # rel >= 0: exact in uint64
    out["ts"] = rel if ns is None else ns(rel)
    soff = out["src_offset"]
    for p, a, b in raw.parts(s, s + m):
        soff[p:p + b - a] = np.arange(raw.buffer_offset + 32 * a, raw.buffer_offset + 32 * b, 32,
                                      dtype=np.uint64)
    tmap = raw.text_offset
    if tmap is not None and len(tmap):  # a hex-text export: offsets in the user's text file
        soff[:] = tmap[np.minimum(soff, len(tmap) - 1).astype(np.int64)]
    starts, ctype, ids = _contexts(w[:, 0], threads)
    if starts is not None:
        lens = np.empty_like(starts)
        np.subtract(starts[1:], starts[:-1], out=lens[:-1])
        lens[-1] = m - starts[-1]
        ct_ev, id_ev = np.repeat(ctype, lens), np.repeat(ids, lens)
    else:
        ct_ev, id_ev = ctype, ids  # ISR numbers overwrite ISR rows only: the task facts stay right
    out["ctx_type"] = ct_ev
    out["target_id"] = _const("i4", -1, m)
    out["marker"] = _const("u4", 0, m)
    hot = np.flatnonzero(kf > 0xFF)
    if hot.size:
        _special_rows(out, w, eid, hot, (kf[hot] >> np.uint16(8)).astype(np.uint8), ct_ev, id_ev,
                      s, threads, acc)
    out["ctx_id"] = id_ev
    _task_facts(acc, w, starts, ctype, ids, (ct_ev, id_ev, core) if cmax else None)


def _special_rows(out: np.ndarray, w: np.ndarray, eid: np.ndarray, hot: np.ndarray, fh: np.ndarray,
                  ct_ev: np.ndarray, id_ev: np.ndarray, s: int, threads: _Threads, acc: _Acc) -> None:
    """Rows whose id needs more than the kind (``hot``, flags ``fh``): ISR numbers of ISR enter/exit,
    targets of resume/suspend, crosstrace site ids, unnamed ids."""
    edge = hot[(fh == F_EDGE) & (ct_ev[hot] == _ISR)]
    if edge.size:
        i2 = w[edge, 5]
        ok = i2 < np.uint32(1 << 16)  # an ISR number; ignore pointers/junk in old traces
        id_ev[edge[ok]] = i2[ok].astype(np.int32)
        acc.isr_ids.update(np.unique(i2[ok], return_counts=True)[0].tolist())
    sched = hot[fh == F_SCHED]
    if sched.size:
        tgt = threads.lookup(w[sched, 4])
        out["target_id"][sched] = tgt
        miss = tgt < 0
        if miss.any():
            acc.unresolved.append((s + sched[miss], w[sched[miss], 4]))
    mark = hot[fh == F_MARK]
    if mark.size:
        out["marker"][mark] = eid[mark] - np.uint32(fmt.TX_TRACE_USER_EVENT_START)
    unknown = hot[fh == F_UNKNOWN]
    if unknown.size:
        ids_u, cnt = np.unique(eid[unknown], return_counts=True)
        for i, c in zip(ids_u.tolist(), cnt.tolist()):
            acc.unknown_ids[i] = acc.unknown_ids.get(i, 0) + c
        if acc.first_unknown < 0:
            acc.first_unknown = int(out["src_offset"][unknown[0]])


def _ns_converter(raw: RawTrace, tick_hz: int | None) -> Callable[[np.ndarray], np.ndarray] | None:
    """Ticks -> ns (:func:`~trace_parsers.model.ticks_to_ns`); one multiply when ``tick_hz``
    divides 1 GHz and the products fit in int64 (the same integers, computed faster)."""
    if not tick_hz:
        return None
    hz = int(tick_hz)
    last = int(raw.relative_ticks[-1]) if len(raw) else 0
    if 1_000_000_000 % hz == 0 and last * (1_000_000_000 // hz) < 1 << 63:
        f = np.int64(1_000_000_000 // hz)
        return lambda rel: rel * f
    return lambda rel: ticks_to_ns(rel, hz)


def _diagnostics(raw: RawTrace, acc: _Acc, tick_hz: int | None) -> list[Diagnostic]:
    return conversion_diagnostics(mask=raw.header["timer_valid_mask"], timer_wraps=raw.timer_wraps,
                                  direction=raw.direction, buffer_offset=raw.buffer_offset,
                                  unknown_ids=acc.unknown_ids, first_unknown=acc.first_unknown,
                                  tick_hz=tick_hz, file_offset=_file_offset(raw))


def _file_offset(raw: RawTrace) -> Any:
    """Buffer offset -> offset in the user's file (hex digits of that byte in a text export)."""
    tmap = raw.text_offset
    if tmap is None or not len(tmap):
        return None
    return lambda o: int(tmap[min(max(int(o), 0), len(tmap) - 1)])


def to_trace(raw: RawTrace, *, tick_hz: int | None = None, sha256: str = "") -> Trace:
    """Build the common-model :class:`Trace` from decoded records (in steps of :data:`CHUNK` rows,
    every column written once into an uninitialised array)."""
    n = len(raw)
    threads = _Threads(raw)
    acc = _Acc()
    ev = np.empty(n, dtype=EVENT_DTYPE)
    mask = raw.header["timer_valid_mask"]
    first = int(raw.ts_masked[0]) if n else 0
    origin = first if raw.direction == "up" else mask - first
    ns = _ns_converter(raw, tick_hz)
    for s in range(0, n, CHUNK):
        _fill(ev[s:s + CHUNK], raw, s, threads, acc, origin, ns)
    acc.resolve(ev, threads)
    diags = list(raw.diagnostics) + _diagnostics(raw, acc, tick_hz)
    tasks = []
    for i, (a, nm) in enumerate(zip(threads.addrs, threads.names)):
        p = threads.prios[i]
        cs = acc.cores.get(i, set())
        tasks.append(Task(ctx_id=i, name=nm, priority=p if p is not None else acc.first_prio.get(i, -1),
                          native_handle=a, core=next(iter(cs)) if len(cs) == 1 else -1))
    layout = raw.layout()
    meta = TraceMeta(
        source_format="tracex", source_version=f"TraceX buffer ({layout['endianness']}-endian)",
        source_path=raw.path, source_sha256=sha256, tick_hz=int(tick_hz) if tick_hz else None,
        clock_domain="target_timer", rtos="ThreadX", cores=acc.max_core + 1, origin_raw=origin,
        source_kind="trace",
        extra={"tracex": {"header": dict(raw.header), "layout": layout,
                          "objects": [o.__dict__.copy() for o in raw.objects]},
               "tracex_raw": raw})
    markers = [Marker(i, nm) for i, nm in sorted(fmt.CT_SITES.items())]
    isrs = [Isr(int(i), f"isr {int(i)}") for i in sorted(acc.isr_ids)]
    return Trace(ev, meta, tasks=tasks, isrs=isrs, markers=markers, diagnostics=diags)
