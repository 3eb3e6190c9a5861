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

import numpy as np

from ..errors import diagnostic
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


CHUNK = 1 << 16  #: events converted per step (bounded temporaries: peak memory stays ~ the output)


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

    def lookup_runs(self, values: np.ndarray) -> np.ndarray:
        """:meth:`lookup` of values that come in runs (the context of consecutive events): one
        lookup per run; a binary search per event costs ~20 ns, more than the rest of a row."""
        n = values.shape[0]
        starts = np.flatnonzero(values[1:] != values[:-1])
        if n == 0 or starts.size * 4 > n:
            return self.lookup(values)
        starts += 1
        starts = np.concatenate(([0], starts))
        return np.repeat(self.lookup(values[starts]), np.diff(starts, append=n))

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


def to_trace(raw: RawTrace, *, tick_hz: int | None = None, sha256: str = "") -> Trace:
    """Build the common-model :class:`Trace` from decoded records (in chunks of :data:`CHUNK`)."""
    n = len(raw)
    diags: list[Diagnostic] = list(raw.diagnostics)
    threads = _Threads(raw)
    ev = np.empty(n, dtype=EVENT_DTYPE)
    mask = raw.header["timer_valid_mask"]
    first = int(raw.ts_masked[0]) if n else 0
    start = first if raw.direction == "up" else mask - first
    origin = start
    np.add(raw.relative_ticks, np.uint64(start), out=ev["ts_raw"], casting="unsafe")
    first_prio: dict[int, int] = {}
    core_hist = np.zeros(0, np.int64)
    unknown_ids: dict[int, int] = {}
    first_unknown = -1
    isr_ids: set[int] = set()
    max_core = 0
    sites = np.uint32(fmt.TX_TRACE_USER_EVENT_START)
    for s in range(0, n, CHUNK):
        e = min(n, s + CHUNK)
        w = raw.chunk(s, e)
        ctx, eid_raw, info1 = w[:, 0], w[:, 2], w[:, 4]
        out = ev[s:e]
        eid = eid_raw & np.uint32(0xFFFF)
        out["src_id"] = eid
        core = (eid_raw >> np.uint32(24)).astype(np.uint8)
        out["core"] = core
        max_core = max(max_core, int(core.max()))
        kind = _KIND[eid]
        out["kind"] = kind
        out["value"] = info1
        off = raw.slot_of(s, e).astype(np.uint64)
        off *= np.uint64(32)
        off += np.uint64(raw.buffer_offset)
        out["src_offset"] = off
        is_isr = ctx == fmt.CTX_ISR
        ctype = np.full(e - s, CtxType.TASK, dtype=np.uint8)
        ctype[is_isr] = CtxType.ISR
        ctype[ctx == fmt.CTX_INIT] = CtxType.INIT
        ctype[ctx == 0] = CtxType.NONE
        out["ctx_type"] = ctype
        ctx_id = threads.lookup_runs(ctx)
        task = ctype == CtxType.TASK
        if (ctx_id[task] < 0).any():  # thread pointers missing from the registry: "Un-named Thread" rows
            threads.add_unknown(ctx)
            ctx_id = threads.lookup_runs(ctx)
        edge = is_isr & ((eid == fmt.TX_TRACE_ISR_ENTER) | (eid == fmt.TX_TRACE_ISR_EXIT))
        if edge.any():
            i2 = w[edge, 5]
            ok = i2 < np.uint32(1 << 16)  # an ISR number; ignore pointers/junk in old traces
            ctx_id[np.flatnonzero(edge)[ok]] = i2[ok].astype(np.int32)
            isr_ids.update(np.unique(i2[ok]).tolist())
        out["ctx_id"] = ctx_id
        tgt = np.full(e - s, -1, dtype=np.int32)
        sched = (eid == fmt.TX_TRACE_THREAD_RESUME) | (eid == fmt.TX_TRACE_THREAD_SUSPEND)
        if sched.any():
            tgt[sched] = threads.lookup(info1[sched])
        out["target_id"] = tgt
        marker = np.zeros(e - s, dtype=np.uint32)
        is_mark = kind == EventKind.MARK
        if is_mark.any():
            marker[is_mark] = eid[is_mark] - sites
        out["marker"] = marker
        unknown = (kind == EventKind.OTHER) & (eid != fmt.TX_TRACE_TIME_SLICE)
        if unknown.any():
            ids, cnt = np.unique(eid[unknown], return_counts=True)
            for i, c in zip(ids.tolist(), cnt.tolist()):
                unknown_ids[i] = unknown_ids.get(i, 0) + c
            if first_unknown < 0:
                first_unknown = int(off[np.flatnonzero(unknown)[0]])
        # per task: priority of its first event, cores it ran on
        tids = ctx_id[task]
        if tids.size:
            nt = len(threads.addrs)
            if core_hist.size < nt * 256:
                core_hist = np.concatenate([core_hist, np.zeros(nt * 256 - core_hist.size, np.int64)])
            if core.max():
                core_hist += np.bincount(tids.astype(np.int64) * 256 + core[task], minlength=nt * 256)
                present = np.flatnonzero(core_hist.reshape(nt, 256).any(axis=1))
            else:
                counts = np.bincount(tids, minlength=nt)
                core_hist.reshape(nt, 256)[:, 0] += counts
                present = np.flatnonzero(counts)
            for t in present.tolist():
                if t not in first_prio:
                    first_prio[t] = int(w[task, 1][np.argmax(tids == t)] & 0x3FF)
        if tick_hz:
            out["ts"] = ticks_to_ns(raw.relative_ticks[s:e], tick_hz)
        else:
            out["ts"] = raw.relative_ticks[s:e]

    if unknown_ids:
        total = sum(unknown_ids.values())
        diags.append(diagnostic("TRX_UNKNOWN_ID", first_unknown,
                                f"{total} events with ids that have no name in the ThreadX/FileX/NetX Duo/"
                                f"USBX tables: {', '.join(map(str, sorted(unknown_ids)[:10]))} "
                                "(decoded as OTHER, named UNKNOWN_<id>)", count=total))
    if raw.timer_wraps:
        diags.append(diagnostic("TRX_TIMER_WRAPS", raw.buffer_offset,
                                f"the {raw.direction}-counting timer (mask 0x{mask:X}) wrapped "
                                f"{raw.timer_wraps} times; unrolled by 0x{mask + 1:X} ticks per wrap",
                                count=raw.timer_wraps))
    if mask + 1 <= 1 << 24:
        where = f" = {(mask + 1) * 1_000_000 // tick_hz} us" if tick_hz else ""
        diags.append(diagnostic("TRX_SHORT_TIMER", 4,
                                f"timer_valid_mask 0x{mask:X}: the timestamp wraps every {mask + 1} "
                                f"ticks{where}; a gap longer than that between two events hides a wrap"))
    if not tick_hz:
        diags.append(diagnostic("TRX_NO_TICK_HZ", 0, "no tick rate given (tick_hz / --tick-hz / run.json): "
                                "ts is in timer ticks"))
    tasks = []
    hist = core_hist.reshape(-1, 256) if core_hist.size else np.zeros((0, 256), np.int64)
    for i, (a, nm) in enumerate(zip(threads.addrs, threads.names)):
        p = threads.prios[i]
        prio = p if p is not None else first_prio.get(i, -1)
        cs = np.flatnonzero(hist[i]) if i < hist.shape[0] else np.zeros(0, np.int64)
        tasks.append(Task(ctx_id=i, name=nm, priority=prio, native_handle=a,
                          core=int(cs[0]) if cs.size == 1 else -1))
    layout = raw.layout()
    meta = TraceMeta(
        source_format="tracex", source_version=f"TraceX buffer ({layout['endianness']}-endian)",
        source_path=raw.path, source_sha256=sha256, tick_hz=int(tick_hz) if tick_hz else None,
        clock_domain="target_timer", rtos="ThreadX", cores=max_core + 1, origin_raw=origin,
        source_kind="trace",
        extra={"tracex": {"header": dict(raw.header), "layout": layout,
                          "objects": [o.__dict__.copy() for o in raw.objects]},
               "tracex_raw": raw})
    markers = [Marker(i, nm) for i, nm in sorted(fmt.CT_SITES.items())]
    isrs = [Isr(int(i), f"isr {int(i)}") for i in sorted(isr_ids)]
    return Trace(ev, meta, tasks=tasks, isrs=isrs, markers=markers, diagnostics=diags)
