"""TraceX's derived view, reproduced: next context, RUNNING rows, statistics, execution profile.

TraceX (``tml_library.cpp``, TML) derives everything from a per-event **next context** - who runs
after the event (thread pointer, 0 = idle, 0xFFFFFFFF = interrupt, 0xF0F0F0F0 = initialisation) -
and inserts a synthetic ``TX_RUNNING`` row wherever an event's next context is neither its own
context nor the next event's.  :func:`tracex_view` rebuilds that view and :func:`tracex_statistics`
the "Performance Statistics" / "Thread Execution" / "Popular Services" numbers of the TraceX raw
dump, including TraceX's quirks (``specs/tracex.md`` §8): the ISR-context ``i > 1`` test, the
time-slice count that reuses a stale next context, the shared priority-inversion start index.

Most steps are vectorised; the state machines TraceX runs over interrupt/initialisation events,
``tx_thread_relinquish`` without a next thread, synthetic RUNNING rows and open priority-inversion
windows loop in Python over those (rare) events only.

Worked example (``tracex-sample_demo_threadx.trx``)::

    st = tracex_statistics(read_raw("tracex-sample_demo_threadx.trx"))
    st.context_switches, st.interrupts, st.execution_ticks["thread 1"]   # (18, 3, 79507)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import VALUE_NULL, CtxType, EventKind, Task, Trace, empty_events, sort_events
from . import format as fmt
from .convert import lookup
from .decode import RawTrace

ISR = fmt.CTX_ISR
INIT = fmt.CTX_INIT
RESUME = fmt.TX_TRACE_THREAD_RESUME
SUSPEND = fmt.TX_TRACE_THREAD_SUSPEND
ENTER = fmt.TX_TRACE_ISR_ENTER
EXIT = fmt.TX_TRACE_ISR_EXIT
SLICE = fmt.TX_TRACE_TIME_SLICE
RUNNING = fmt.TX_TRACE_RUNNING
RELINQUISH = fmt.TX_TRACE_THREAD_RELINQUISH


@dataclass
class TraceXView:
    """TraceX's event list: the recorded events plus synthetic RUNNING rows, with next contexts.

    All arrays have one entry per row (int64 for pointers so 0xFFFFFFFF stays positive).
    ``source`` is the index of the recorded event (into the reader's chronological order) or -1 for
    a synthetic RUNNING row.
    """

    context: np.ndarray
    event_id: np.ndarray
    priority: np.ndarray  #: TraceX priority (thread: raw & 0x3FF; ISR: the raw word)
    info: np.ndarray  #: (n, 4)
    relative_ticks: np.ndarray
    time_stamp: np.ndarray  #: masked raw timestamp
    next_context: np.ndarray
    source: np.ndarray
    object_addresses: list[int]  #: TraceX object list (registry, then Un-named Threads)
    object_types: list[int]
    object_names: list[str]
    thread_objects: list[int]  #: indices into the object list, TraceX's thread order
    priority_inversion: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    bad_priority_inversion: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    priority_inversions: int = 0
    bad_priority_inversions: int = 0

    def __len__(self) -> int:
        return int(self.context.shape[0])

    @property
    def fake_running(self) -> int:
        return int(np.count_nonzero(self.source < 0))


@dataclass(frozen=True)
class ThreadExecution:
    address: int
    name: str
    ticks: int
    events: int  #: TraceX "Total Events" of the thread


@dataclass(frozen=True)
class TraceXStatistics:
    """TraceX's "Performance Statistics", "Thread Execution" and "Popular Services" sections."""

    total_events: int  #: including synthetic RUNNING rows
    fake_running: int
    max_relative_ticks: int
    context_switches: int
    thread_preemptions: int
    time_slices: int
    thread_suspensions: int
    thread_resumptions: int
    interrupts: int
    nested_interrupts: int
    priority_inversions: int  #: deterministic
    bad_priority_inversions: int  #: undeterministic
    threads: tuple[ThreadExecution, ...]
    idle_ticks: int
    interrupt_ticks: int
    popular_services: tuple[tuple[int, int], ...]  #: (event id, count), most frequent first

    @property
    def execution_ticks(self) -> dict[str, int]:
        """``{thread name: ticks, ..., "Idle System": ticks, "Interrupt": ticks}`` as TraceX lists it."""
        out = {t.name: t.ticks for t in self.threads}
        out["Idle System"] = self.idle_ticks
        out["Interrupt"] = self.interrupt_ticks
        return out

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "total_events", "fake_running", "max_relative_ticks", "context_switches",
            "thread_preemptions", "time_slices", "thread_suspensions", "thread_resumptions",
            "interrupts", "nested_interrupts", "priority_inversions", "bad_priority_inversions",
            "idle_ticks", "interrupt_ticks")}
        d["execution_ticks"] = self.execution_ticks
        d["popular_services"] = [list(p) for p in self.popular_services]
        return d


# ------------------------------------------------------------------------------------------------


def _raw_of(src: RawTrace | Trace) -> RawTrace:
    if isinstance(src, RawTrace):
        return src
    raw = src.meta.extra.get("tracex_raw") if isinstance(src, Trace) else None
    if not isinstance(raw, RawTrace):
        raise TypeError("expected a RawTrace or a Trace read by read_tracex (meta.extra['tracex_raw'])")
    return raw


def _next_index(mask: np.ndarray) -> np.ndarray:
    """For every i, the smallest j > i with mask[j], else len(mask)."""
    n = mask.shape[0]
    idx = np.where(mask, np.arange(n), n)
    nxt = np.minimum.accumulate(idx[::-1])[::-1]
    out = np.empty(n, dtype=np.int64)
    out[:-1] = nxt[1:]
    if n:
        out[-1] = n
    return out


def _prev_index(mask: np.ndarray) -> np.ndarray:
    """For every i, the largest j < i with mask[j], else -1."""
    n = mask.shape[0]
    idx = np.where(mask, np.arange(n), -1)
    prv = np.maximum.accumulate(idx) if n else idx
    out = np.empty(n, dtype=np.int64)
    if n:
        out[0] = -1
        out[1:] = prv[:-1]
    return out


def _first_match(ctx: np.ndarray, is_thr: np.ndarray, start: int, values: tuple[int, ...]) -> int:
    """First j >= start with a thread context equal to one of ``values``; len(ctx) if none."""
    n = ctx.shape[0]
    step = 256
    while start < n:
        end = min(n, start + step)
        c = ctx[start:end]
        hit = is_thr[start:end] & np.isin(c, values)
        nz = np.flatnonzero(hit)
        if nz.size:
            return start + int(nz[0])
        start, step = end, step * 4
    return n


def _objects(raw: RawTrace, ctx: np.ndarray) -> tuple[list[int], list[int], list[str], list[int]]:
    """TraceX's object list: registry entries with type != 0, then one "Un-named Thread" per thread
    pointer whose first registry object is missing or not a thread (in order of first appearance),
    and the indices of the threads in it."""
    addrs = [o.address for o in raw.objects]
    types = [o.type for o in raw.objects]
    names = [o.name for o in raw.objects]
    threads = [i for i, t in enumerate(types) if t == fmt.TX_TRACE_OBJECT_TYPE_THREAD]
    first: dict[int, int] = {}
    for i, a in enumerate(addrs):
        first.setdefault(a, i)
    ok = np.array(sorted(a for a, i in first.items() if types[i] == fmt.TX_TRACE_OBJECT_TYPE_THREAD),
                  dtype=np.int64)
    c = ctx[(ctx != ISR) & (ctx != INIT)]
    if ok.size:
        pos = np.minimum(np.searchsorted(ok, c), ok.size - 1)
        c = c[ok[pos] != c]
    if c.size:
        uniq, pos = np.unique(c, return_index=True)
        for a in uniq[np.argsort(pos)].tolist():
            threads.append(len(addrs))
            addrs.append(int(a))
            types.append(fmt.TX_TRACE_OBJECT_TYPE_THREAD)
            names.append("Un-named Thread")
    return addrs, types, names, threads


def tracex_view(src: RawTrace | Trace) -> TraceXView:
    """Rebuild TraceX's event list with next contexts and synthetic RUNNING rows."""
    raw = _raw_of(src)
    n = len(raw)
    ctx = raw.context.astype(np.int64)
    eid = raw.event_id.astype(np.int64)
    prio_u, _ = raw.priority()
    prio = prio_u.astype(np.int64)
    info = np.stack([raw.info(k).astype(np.int64) for k in (1, 2, 3, 4)], axis=1) if n else \
        np.zeros((0, 4), np.int64)
    i1, i2, i4 = info[:, 0], info[:, 1], info[:, 3]
    rel = raw.relative_ticks
    is_thr = (ctx != ISR) & (ctx != INIT)
    nti = _next_index(is_thr)  # next thread-context event
    ar = np.arange(n)

    nxt = ctx.copy()
    # -- thread-context events (vectorised) ------------------------------------------------------
    nxt_ctx = np.empty(n, np.int64)
    if n:
        nxt_ctx[:-1] = ctx[1:]
        nxt_ctx[-1] = -1
    nxt_thr = np.zeros(n, bool)
    if n > 1:
        nxt_thr[:-1] = is_thr[1:]
    other = is_thr & ~np.isin(eid, (SUSPEND, RESUME, RELINQUISH))
    nxt = np.where(other & nxt_thr, nxt_ctx, nxt)
    sus = is_thr & (eid == SUSPEND)
    override = sus & (ar + 1 < n) & (ctx == i1) & (nxt_ctx == i1)
    nxt = np.where(sus & ~override, i4, nxt)
    res = is_thr & (eid == RESUME)
    res4 = res & (i4 != 0)
    nxt = np.where(res4, i4, nxt)
    res0 = res & (i4 == 0)
    j = np.minimum(nti, n - 1) if n else nti
    ahead = res0 & (nti < n) & (ctx[j] == i1)
    nxt = np.where(ahead, i1, nxt)
    rel2 = is_thr & (eid == RELINQUISH)
    nxt = np.where(rel2 & (i2 != 0), i2, nxt)
    for i in np.flatnonzero(rel2 & (i2 == 0)).tolist():  # look-ahead state machine (rare)
        jj = int(nti[i])
        address = int(ctx[jj]) if jj < n else int(ctx[i])
        k = i + 1
        if address != ctx[i]:
            while k < jj:
                if eid[k] in (RESUME, SUSPEND) and i1[k] == address:
                    break
                k += 1
        nxt[i] = address if (address != ctx[i] and jj == k) else ctx[i]

    # -- interrupt / initialisation events: TraceX's state machine, in order ---------------------
    non_thr = np.flatnonzero(~is_thr)
    if non_thr.size:
        last_thr = _prev_index(is_thr)
        current = 0
        nesting = 0
        last_done = -1
        ctx_l = ctx  # local aliases
        for i in non_thr.tolist():
            lt = int(last_thr[i])
            if lt > last_done:  # a thread event ran since the previous ISR/init event
                current = int(nxt[lt])
                nesting = 0
            last_done = i
            e = int(eid[i])
            if ctx_l[i] == ISR:
                p = int(prio[i])
                if p and i > 1 and ctx_l[i - 1] != ISR and p != 0xFFFFFFFF:
                    nxt[i - 1] = p
                    current = p
            nxt[i] = ctx_l[i]
            if e == ENTER:
                nesting += 1
            elif e == SUSPEND:
                current = int(i4[i])
            elif e == SLICE:
                current = int(i1[i])
            elif e == RESUME:
                if i4[i]:
                    current = int(i4[i])
                else:
                    jj = _first_match(ctx_l, is_thr, i + 1, (current, int(i1[i])))
                    if jj < n and ctx_l[jj] != current:
                        current = int(i1[i])
            elif e == EXIT:
                if nesting:
                    nesting -= 1
            if nesting == 0:
                if i + 1 < n:
                    if ctx_l[i + 1] == ISR and eid[i + 1] != RESUME:
                        nxt[i] = int(prio[i + 1]) if prio[i + 1] else current
                    else:
                        nxt[i] = ctx_l[i + 1]
                else:
                    nxt[i] = current

    addrs, types, names, threads = _objects(raw, ctx)
    ts = raw.ts_masked.astype(np.int64)

    # -- synthetic RUNNING rows --------------------------------------------------------------------
    fake = np.zeros(n, bool)
    if n > 1:
        fake[:-1] = (ctx[:-1] != nxt[:-1]) & (nxt[:-1] != ctx[1:])
    nf = int(np.count_nonzero(fake))
    source = ar.astype(np.int64)
    if nf:
        pos = ar + np.concatenate(([0], np.cumsum(fake)[:-1]))
        fpos = pos[fake] + 1
        total = n + nf
        keep = np.ones(total, bool)
        keep[fpos] = False

        def spread(a: np.ndarray, fill: np.ndarray | int) -> np.ndarray:
            out = np.empty((total,) + a.shape[1:], dtype=a.dtype)
            out[keep] = a
            out[~keep] = fill
            return out

        fi = np.flatnonzero(fake)
        delta = rel[fi + 1] - rel[fi]
        bump = (delta & 0xFFFFFFFF) > 12
        up = raw.direction == "up"
        f_rel = rel[fi] + np.where(bump, 12, 0)
        f_ts = ts[fi] + np.where(bump, 12 if up else -12, 0)
        f_ctx = nxt[fi]
        f_prio = np.array([_fake_priority(int(i), int(c), ctx, eid, prio, i1, i2) for i, c in
                           zip(fi.tolist(), f_ctx.tolist())], dtype=np.int64)
        ctx = spread(ctx, f_ctx)
        nxt = spread(nxt, f_ctx)
        eid = spread(eid, RUNNING)
        prio = spread(prio, f_prio)
        info = spread(info, 0)
        rel = spread(rel, f_rel)
        ts = spread(ts, f_ts)
        source = spread(source, -1)

    view = TraceXView(context=ctx, event_id=eid, priority=prio, info=info, relative_ticks=rel,
                      time_stamp=ts, next_context=nxt, source=source, object_addresses=addrs,
                      object_types=types, object_names=names, thread_objects=threads)
    _priority_inversions(view)
    return view


def _fake_priority(i: int, c: int, ctx: np.ndarray, eid: np.ndarray, prio: np.ndarray,
                   i1: np.ndarray, i2: np.ndarray) -> int:
    """Priority TraceX gives a synthetic RUNNING row for thread ``c`` inserted after event ``i``."""
    if c in (0, ISR, INIT):
        return 0
    own = (ctx == c) & (eid != RUNNING)
    create = (i1 == c) & (eid == fmt.TX_TRACE_THREAD_CREATE)
    back = np.flatnonzero((own | create)[:i])
    if back.size:
        k = int(back[-1])
        return int(prio[k]) if own[k] else int(i2[k])
    fwd = np.flatnonzero((own | create)[i:])
    if fwd.size:
        k = i + int(fwd[0])
        return int(prio[k]) if own[k] else int(i2[k])
    return 0


def _priority_inversions(v: TraceXView) -> None:
    """TraceX's ``tml_calculate_priority_inversions`` (deterministic / undeterministic windows).

    TraceX walks every event keeping each object's latest priority; here only the events that can
    matter are visited: candidate window starts (MUTEX_GET that suspends on an owned mutex) and the
    events inside open windows; an object's priority at an event is looked up when needed.
    """
    n = len(v)
    ctx, eid, i1, i3 = v.context, v.event_id, v.info[:, 0], v.info[:, 2]
    prio = np.where(ctx == ISR, v.priority, v.priority & 0x7FF)
    pi = np.zeros(n, np.int64)
    bpi = np.zeros(n, np.int64)
    v.priority_inversion, v.bad_priority_inversion = pi, bpi
    thr = ctx < INIT
    cand = np.flatnonzero(thr & (eid == fmt.TX_TRACE_MUTEX_GET) & (i3 != 0) & (i3 != ctx))
    if not cand.size:
        return
    addrs = v.object_addresses
    first_obj: dict[int, int] = {}
    for k, a in enumerate(addrs):
        first_obj.setdefault(a, k)
    known = np.array(sorted(first_obj), dtype=np.int64)

    def key(addr: int) -> int:  # tml_object_by_address_find: index 0 when not found
        return first_obj.get(int(addr), 0)

    def is_key(c: np.ndarray, o: int) -> np.ndarray:
        """Thread-context rows whose context resolves to object ``o``."""
        if o == 0:
            pos = np.minimum(np.searchsorted(known, c), max(known.size - 1, 0))
            unknown = (known[pos] != c) if known.size else np.ones(c.shape, bool)
            return (c < INIT) & ((c == (addrs[0] if addrs else -1)) | unknown)
        return (c < INIT) & (c == addrs[o]) & (first_obj.get(addrs[o]) == o)

    def prio_at(o: int, i: int) -> int:
        """Latest priority of object ``o`` at event ``i`` (else its first-ever, else 0xFFFF)."""
        hi, step = i + 1, 256
        while hi > 0:
            lo = max(0, hi - step)
            nz = np.flatnonzero(is_key(ctx[lo:hi], o))
            if nz.size:
                return int(prio[lo + int(nz[-1])])
            hi, step = lo, step * 4
        j = _scan(lambda lo, hi: is_key(ctx[lo:hi], o), i + 1, n)
        return int(prio[j]) if j < n else 0xFFFF

    def first_ctx(k: int, target: int) -> int:
        j = _scan(lambda lo, hi: ctx[lo:hi] == target, k, n)
        return j if j < n else -1

    inv: dict[int, tuple[int, int, int]] = {}  # mutex object -> (blocked addr, blocked prio, owner)
    inversions = bad = 0
    start_index = 0
    i = int(cand[0])
    while i < n:
        if not thr[i]:
            i += 1
            continue
        c, e, p, mi = int(ctx[i]), int(eid[i]), int(prio[i]), key(i1[i])
        if e == fmt.TX_TRACE_MUTEX_GET and i3[i] and i3[i] != c:
            owner_prio = prio_at(key(i3[i]), i)
            if owner_prio != 0xFFFF and p < owner_prio and mi not in inv:
                inversions += 1
                inv[mi] = (c, p, int(i3[i]))
                start_index = i
                i = _advance(i, inv, cand, n)
                continue
        if e == fmt.TX_TRACE_MUTEX_PUT and mi in inv and i3[i] == 1:
            k = first_ctx(i, inv[mi][0])
            pi[start_index] = k if k >= 0 else i
            del inv[mi]
            i = _advance(i, inv, cand, n)
            continue
        for m in sorted(inv):
            blocked, bprio, owner = inv[m]
            if c != owner and p > bprio:
                k = first_ctx(i, blocked)
                bad += 1
                del inv[m]
                bpi[start_index] = k if k >= 0 else i  # TraceX keeps one start index for all windows
        i = _advance(i, inv, cand, n)
    v.priority_inversions, v.bad_priority_inversions = inversions, bad


def _scan(match, start: int, n: int) -> int:
    """First j >= start where ``match(lo, hi)`` (a bool mask of [lo, hi)) is true; n if none."""
    step = 256
    while start < n:
        hi = min(n, start + step)
        nz = np.flatnonzero(match(start, hi))
        if nz.size:
            return start + int(nz[0])
        start, step = hi, step * 4
    return n


def _advance(i: int, inv: dict, cand: np.ndarray, n: int) -> int:
    """Next event to examine: the next one while a window is open, else the next candidate start."""
    if inv:
        return i + 1
    k = int(np.searchsorted(cand, i, side="right"))
    return int(cand[k]) if k < cand.size else n


def _valid(c: np.ndarray) -> np.ndarray:
    return (c != 0) & (c != ISR) & (c != INIT)


def _switches(ctx: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """Rows TraceX counts as a context switch.

    TraceX's ``current_thread`` is the last valid (thread) next context before the row or, before
    any, the first thread context seen; a row switches when its next context is a thread or idle
    and differs from it (idle is never stored, so it counts again on every idle row).
    """
    n = ctx.shape[0]
    last_set = _prev_index(_valid(nxt))
    thr = (ctx != ISR) & (ctx != INIT) & (ctx != 0)
    first_thr = int(np.argmax(thr)) if thr.any() else n
    before = np.where(np.arange(n) >= first_thr, ctx[min(first_thr, n - 1)] if n else 0, 0)
    cur = np.where(last_set >= 0, nxt[np.maximum(last_set, 0)], before)
    return (cur != 0) & (nxt != ISR) & (nxt != INIT) & (cur != nxt)


def tracex_statistics(src: RawTrace | Trace | TraceXView) -> TraceXStatistics:
    """TraceX 6.2.1.0's statistics for a trace (``tml_system_performance_statistics_get`` etc.)."""
    v = src if isinstance(src, TraceXView) else tracex_view(src)
    n = len(v)
    ctx, eid, nxt, rel = v.context, v.event_id, v.next_context, v.relative_ticks
    ar = np.arange(n)
    # context switches: cur = last valid next context, or the first thread context before that
    valid = _valid(nxt)
    switches = int(np.count_nonzero(_switches(ctx, nxt)))
    # preemptions: a RESUME looks ahead to the next valid next context
    nvi = _next_index(valid)
    is_res = eid == RESUME
    nc = nxt.copy()
    if n:
        ahead = np.where(nvi < n, nxt[np.minimum(nvi, n - 1)], nxt[-1])
        nc = np.where(is_res, np.where(ar + 1 < n, ahead, 0), nxt)
    nc_valid = _valid(nc)
    last_nc = _prev_index(nc_valid)
    cur2 = np.where(last_nc >= 0, nc[np.maximum(last_nc, 0)], 0)
    preempt = int(np.count_nonzero((is_res | (eid == SLICE)) & (nc != cur2)))
    # time slices: TraceX reuses the preemption loop's last next_context (a constant here)
    stale = int(nc[-1]) if n else 0
    slices = 0
    if n:
        cur3 = np.where(ar > 0, stale if _valid(np.array([stale]))[0] else 0, 0)
        slices = int(np.count_nonzero((eid == SLICE) & (stale != cur3)))
    # interrupts / nested interrupts
    interrupts = nested = 0
    in_progress = 0
    prev = -2
    for i in np.flatnonzero((eid == ENTER) | (eid == EXIT) | (ctx == ISR)).tolist():
        if i - prev > 1:
            in_progress = 0
        prev = i
        e = int(eid[i])
        if e == ENTER:
            interrupts += 1
            nested += 1 if in_progress else 0
            in_progress += 1
        elif e == EXIT:
            in_progress -= 1 if in_progress else 0
        elif in_progress == 0:
            interrupts += 1
    # execution profile
    d = np.diff(rel)
    owner = nxt[:-1]
    threads = []
    idle = int(d[owner == 0].sum()) if n > 1 else 0
    intr = int(d[owner == ISR].sum()) if n > 1 else 0
    addr_set = sorted({v.object_addresses[t] for t in v.thread_objects})
    per = {a: int(d[owner == a].sum()) for a in addr_set} if n > 1 else {}
    recorded = ctx[v.source >= 0]
    ev_count = {a: int(np.count_nonzero(recorded == a)) for a in addr_set}
    for t in v.thread_objects:
        a = v.object_addresses[t]
        # TraceX counts a thread's events through its *first* object with that address
        first_obj = v.object_addresses.index(a)
        cnt = ev_count.get(a, 0) if first_obj == t else 0
        threads.append(ThreadExecution(a, v.object_names[t], int(per.get(a, 0)), int(cnt)))
    hist = np.bincount(eid, minlength=1) if n else np.zeros(0, np.int64)
    ids = np.flatnonzero(hist)
    pop = sorted(zip(ids.tolist(), hist[ids].tolist()), key=lambda p: (-p[1], p[0]))
    return TraceXStatistics(
        total_events=n, fake_running=v.fake_running, max_relative_ticks=int(rel[-1]) if n else 0,
        context_switches=switches, thread_preemptions=preempt, time_slices=slices,
        thread_suspensions=int(np.count_nonzero(eid == SUSPEND)),
        thread_resumptions=int(np.count_nonzero(eid == RESUME)), interrupts=interrupts,
        nested_interrupts=nested, priority_inversions=v.priority_inversions,
        bad_priority_inversions=v.bad_priority_inversions, threads=tuple(threads), idle_ticks=idle,
        interrupt_ticks=intr, popular_services=tuple((int(a), int(b)) for a, b in pop))


def with_switch_events(trace: Trace, view: TraceXView | None = None) -> Trace:
    """``trace`` plus one TASK_SWITCH_IN row at every context switch TraceX counts.

    The row follows the event whose next context starts the switch (same ``ts``, stable order):
    ``ctx_type`` TASK with the new thread's ``ctx_id``, or IDLE (``ctx_id`` -1) when the next
    context is idle; ``src_id`` 6 (TX_TRACE_RUNNING), ``src_offset`` of that event.  A next thread
    that never ran in the trace (e.g. a RESUME's info word 4) gets an "Un-named Thread" task row.
    """
    _raw_of(trace)  # only traces from read_tracex map 1:1 onto the view's recorded rows
    v = view or tracex_view(trace)
    n = len(v)
    rec = v.source >= 0
    nxt, ctx = v.next_context, v.context
    sw = _switches(ctx, nxt)
    # a switch on a synthetic row belongs to the recorded event it follows
    anchor = np.where(rec, v.source, -1)
    anchor = np.maximum.accumulate(anchor) if n else anchor
    idx = np.flatnonzero(sw)
    src_rows = anchor[idx]
    keep = src_rows >= 0
    idx, src_rows = idx[keep], src_rows[keep]
    add = empty_events(idx.size)
    base = trace.events[src_rows]
    for col in ("ts", "ts_raw", "core", "src_offset"):
        add[col] = base[col]
    add["kind"] = EventKind.TASK_SWITCH_IN
    add["src_id"] = RUNNING
    target = nxt[idx]
    tasks = list(trace.tasks)
    addrs = [t.native_handle for t in tasks]
    for a in np.unique(target[target != 0]).tolist():  # a next thread never seen running
        if int(a) not in addrs:
            tasks.append(Task(ctx_id=len(tasks), name=f"Un-named Thread 0x{int(a):08X}",
                              native_handle=int(a)))
            addrs.append(int(a))
    tid = lookup(addrs, target.astype(np.uint32))
    add["ctx_type"] = np.where(target == 0, CtxType.IDLE, CtxType.TASK)
    add["ctx_id"] = np.where(target == 0, -1, tid)
    add["value"] = VALUE_NULL
    # insert after their anchor rows, keeping source order (stable by position)
    pos = np.concatenate([np.arange(len(trace)) * 2, src_rows * 2 + 1])
    allev = np.concatenate([trace.events, add])[np.argsort(pos, kind="stable")]
    return Trace(sort_events(allev), trace.meta, tasks=tasks, isrs=trace.isrs,
                 markers=trace.markers, channels=trace.channels, diagnostics=trace.diagnostics,
                 strings=trace.strings)
