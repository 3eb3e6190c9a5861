"""Raw SystemView packet columns -> the common event model (systemview.md §7 mapping).

Every packet except NOP becomes one event row. Metadata packets (INIT, SYSDESC, TASK_INFO,
STACK_INFO, MODULEDESC, NAME_RESOURCE, NUMMODULES, SYSTIME_CYCLES) are kept as ``OTHER`` rows with
``src_id`` = packet id *and* parsed into side tables / ``meta.extra``; NOP packets (padding) are not
events but are counted in ``meta.extra["streams"][name]["counts_by_id"]`` (raw per-id packet counts,
as in the corpus ``facts.json``). Running context (task / ISR with nesting / idle) is tracked per
core with vectorised NumPy; an OVERFLOW resets it (state unknown after lost packets).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import diagnostic
from ..model import (
    EVENT_DTYPE,
    VALUE_NULL,
    CtxType,
    Diagnostic,
    EventKind,
    Severity,
    Task,
    Trace,
    concat_events,
    empty_events,
    fill_ts,
)
from .decode import RawStream
from .description import OsTable, choose_table, load_bundled, load_description
from .format import MODULE_EVENT_OFFSET, OS_ID_FIRST, EvtId, ExSubId
from .streams import (  # noqa: F401 (re-exported: fast, fused and chunks import them from here)
    _STRING_ORDER,
    StreamInfo,
    _collect,
    _stream_diags,
    _sysdesc_items,
    assemble_meta,
    stream_facts,
)

K = EventKind
#: System id -> EventKind (ids 0..31). EX (31) is refined by sub-id below.
_KIND_LUT = np.full(32, K.OTHER, dtype=np.uint8)
for _id, _k in {
    1: K.OVERFLOW, 2: K.ISR_ENTER, 3: K.ISR_EXIT, 4: K.TASK_SWITCH_IN, 5: K.TASK_SWITCH_OUT,
    6: K.TASK_READY, 7: K.TASK_BLOCK, 8: K.TASK_CREATE, 10: K.TRACE_START, 11: K.TRACE_STOP,
    12: K.OTHER, 13: K.SYSTIME, 15: K.MARK_START, 16: K.MARK_STOP, 17: K.IDLE,
    18: K.ISR_TO_SCHED, 19: K.TIMER_ENTER, 20: K.TIMER_EXIT, 26: K.LOG, 28: K.API_RETURN,
    29: K.TASK_TERMINATE,
}.items():
    _KIND_LUT[_id] = _k
_TARGET_LUT = np.zeros(32, dtype=bool)
_TARGET_LUT[[6, 7, 8, 29]] = True  # target_id = the task in the payload


def _count_ids(ids: np.ndarray) -> dict[str, int]:
    """``{str(id): packets}`` (raw per-id packet counts, as in the corpus facts)."""
    if ids.shape[0] == 0:
        return {}
    if int(ids.max()) < 1 << 16:
        bc = np.bincount(ids)
        return {str(int(k)): int(bc[k]) for k in np.flatnonzero(bc)}
    uniq, cnt = np.unique(ids, return_counts=True)
    return {str(int(k)): int(c) for k, c in zip(uniq, cnt)}


def _forward_fill_pos(mask: np.ndarray) -> np.ndarray:
    """For each i, the largest j <= i with mask[j], else -1."""
    pos = np.where(mask, np.arange(mask.shape[0]), -1)
    return np.maximum.accumulate(pos) if pos.shape[0] else pos


def _fill_ts_chunked(ev: np.ndarray, tick_hz: int | None, origin: int, chunk: int = 1 << 20) -> None:
    """``model.fill_ts`` in slices, so its temporaries stay small on large traces."""
    for i in range(0, ev.shape[0], chunk):
        fill_ts(ev[i:i + chunk], tick_hz, origin)


def track_context(kind: np.ndarray, arg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running context for one core's events in stream order (vectorised).

    ``arg`` is the IRQ number for ISR_ENTER rows and the dense task index for TASK_SWITCH_IN rows.
    ISR_ENTER/EXIT nest (an exit at depth 0 is ignored); ISR rows themselves belong to the ISR; a
    switch-in closes the ISRs still open (their exits were lost) and its row belongs to the task;
    an OVERFLOW or a restart (TRACE_START) makes everything unknown until the next switch/enter
    (docs/methodology.md, "Kernel state"). Returns (ctx_type, ctx_id).
    """
    n = kind.shape[0]
    ctx_type = np.zeros(n, dtype=np.uint8)
    ctx_id = np.full(n, -1, dtype=np.int32)
    if n == 0:
        return ctx_type, ctx_id
    it: Any = np.int32 if n < 2**29 else np.int64
    is_ovf = (kind == K.OVERFLOW) | (kind == K.TRACE_START)  # the state is lost
    is_rst = is_ovf | (kind == K.TASK_SWITCH_IN)  # the ISR stack is emptied
    enter = kind == K.ISR_ENTER
    step = enter.astype(np.int8)
    step -= (kind == K.ISR_EXIT).view(np.int8)
    step -= (kind == K.ISR_TO_SCHED).view(np.int8)
    has_ovf = bool(is_rst.any())
    if has_ovf:
        step[is_rst] = 0
    s = np.cumsum(step, dtype=it)
    del step
    if has_ovf:
        new_seg = is_rst.copy()
        new_seg[0] = True  # segments begin at index 0 and at each reset
        seg = np.cumsum(new_seg, dtype=it) - 1
        seg_first = np.flatnonzero(new_seg)
        base = np.where(seg_first > 0, s[np.maximum(seg_first - 1, 0)], 0).astype(it)
        s -= base[seg]
        # (in int64: segments x (4 n + 4) exceeds int32 once a stream has thousands of OVERFLOWs)
        off = seg.astype(np.int64) * (4 * n + 4)
        runmin = s.astype(np.int64) - off
        np.minimum.accumulate(runmin, out=runmin)
        runmin += off
        runmin = runmin.astype(it)  # the running minima of s itself: back in its range
        del off, base
    else:
        seg_first = np.zeros(1, dtype=np.intp)
        runmin = np.minimum.accumulate(s)
    np.minimum(runmin, 0, out=runmin)
    depth = s
    depth -= runmin  # depth after the event, floored at 0
    del runmin
    lvl = np.empty_like(depth)
    lvl[0] = depth[0]
    np.maximum(depth[1:], depth[:-1], out=lvl[1:])  # exit rows belong to the ISR they leave
    lvl[seg_first] = depth[seg_first]
    if has_ovf:
        lvl[is_rst] = 0
    maxl = int(lvl.max())
    if maxl > 0:
        ctx_type[lvl > 0] = CtxType.ISR
        if maxl <= 16:
            # IRQ at level d: the last ISR_ENTER whose depth-after is d (always in the same segment,
            # because every segment starts at depth 0): the c-th such enter, c = running count.
            for d in range(1, maxl + 1):
                em = depth == d
                em &= enter
                e_irq = arg[em]
                cnt = np.cumsum(em, dtype=it)
                del em
                rows = lvl == d
                ctx_id[rows] = e_irq[cnt[rows] - 1]
                del cnt, rows, e_irq
        else:  # pathological nesting (damaged input): one sort instead of a loop per level
            seg_ = seg if has_ovf else np.zeros(n, it)
            in_isr = np.flatnonzero(lvl > 0)
            e_idx = np.flatnonzero(enter & (depth > 0))
            e_key = seg_[e_idx].astype(np.int64) * (maxl + 1) + depth[e_idx]
            q_key = seg_[in_isr].astype(np.int64) * (maxl + 1) + lvl[in_isr]
            keys = np.concatenate([e_key, q_key])
            ix = np.concatenate([e_idx, in_isr])
            is_e = np.concatenate([np.ones(e_idx.shape[0], bool), np.zeros(in_isr.shape[0], bool)])
            order = np.lexsort((~is_e, ix, keys))
            keys, ix, is_e = keys[order], ix[order], is_e[order]
            last = _forward_fill_pos(is_e)
            ok = (last >= 0) & (~is_e)
            ok[ok] = keys[last[ok]] == keys[ok]
            ctx_id[ix[ok]] = arg[ix[last[ok]]]
    del depth
    # Task state: set by SWITCH_IN (task), IDLE (idle), SWITCH_OUT / OVERFLOW (none); the state of
    # row i is that of the c-th setter, c = number of setters up to i.
    sw_out = kind == K.TASK_SWITCH_OUT
    setter = kind == K.TASK_SWITCH_IN
    setter |= kind == K.IDLE
    setter |= sw_out
    setter |= is_ovf
    set_kind = kind[setter]
    set_type = np.where(set_kind == K.TASK_SWITCH_IN, np.uint8(CtxType.TASK),
                        np.where(set_kind == K.IDLE, np.uint8(CtxType.IDLE), np.uint8(CtxType.NONE)))
    set_id = np.where(set_kind == K.TASK_SWITCH_IN, arg[setter], np.int32(-1)).astype(np.int32, copy=False)
    del set_kind
    cnt = np.cumsum(setter, dtype=it)
    del setter
    cnt[sw_out] -= 1  # SWITCH_OUT rows belong to the task that stops: the state before them
    del sw_out
    task = lvl == 0
    task &= cnt > 0
    del lvl
    sel = cnt[task] - 1
    del cnt
    ctx_type[task] = set_type[sel]
    ctx_id[task] = set_id[sel]
    if has_ovf:
        ctx_type[is_ovf] = CtxType.NONE
        ctx_id[is_ovf] = -1
    return ctx_type, ctx_id


def build_trace(streams: list[RawStream], names: list[str], *, path: str, sha256: str,
                version: str, header: list[list[str]], esp_extension: bool, description: Any,
                on_corrupt: str, diagnostics: list[Diagnostic] | None = None) -> Trace:
    diags: list[Diagnostic] = list(diagnostics or [])
    infos: list[StreamInfo] = []
    for si, (r, name) in enumerate(zip(streams, names)):
        _stream_diags(r, si, name, path, on_corrupt, diags)
        info = StreamInfo(name=name, core=r.core)
        _collect(r, info)
        infos.append(info)

    init = next((i.init for i in infos if i.init), None)
    if init is None:
        diags.append(diagnostic("SV_NO_INIT", 0, "no INIT packet: tick rate unknown, ts is in ticks"))
    ram_base = int(init["ram_base"]) if init else 0
    shift = int(init["id_shift"]) if init else 0
    if not 0 <= shift <= 32:  # u32 ids << shift + a u32 base must fit the uint64 handles
        diags.append(diagnostic("CORRUPT_REGION", 0, f"INIT IdShift={shift} is outside 0..32; task "
                                "handles are kept unshifted", severity=Severity.NOTICE))
        shift = 0
    tick_hz = int(init["sys_freq"]) if init and init["sys_freq"] > 0 else None

    sysdesc_texts = [t for i in infos for t in i.sysdesc]
    sysdesc, isr_names = _sysdesc_items(sysdesc_texts)

    # OS table: explicit description, else chosen from SYSDESC.
    table: OsTable | None = None
    if description is not None:
        table = load_description(description)
    else:
        pick = choose_table(sysdesc)
        table = load_bundled(pick) if pick else None

    def expand(v: np.ndarray) -> np.ndarray:
        return np.uint64(ram_base) + (v.astype(np.uint64) << np.uint64(shift))

    # Task table: TASK_INFO first (in order of appearance), then handles only seen in events.
    handles: dict[int, tuple[str, int]] = {}
    for info in infos:
        for sid, (nm, prio) in info.task_info.items():
            h = ram_base + (sid << shift)
            if h not in handles or not handles[h][0]:
                handles[h] = (nm, prio)
    seen: list[np.ndarray] = []
    for r in streams:
        m = _TARGET_LUT[np.minimum(r.id, 31)] | (r.id == EvtId.TASK_START_EXEC)
        if m.any():
            seen.append(np.unique(expand(r.p0[m])))
    extra_h = np.unique(np.concatenate(seen)) if seen else np.zeros(0, np.uint64)
    for h in extra_h.tolist():
        if h not in handles:
            handles[int(h)] = (f"task@0x{int(h):x}", -1)
    hkeys = np.array(list(handles), dtype=np.uint64)
    horder = np.argsort(hkeys, kind="stable")
    hsorted = hkeys[horder]
    tasks = [Task(i, nm, prio, h) for i, (h, (nm, prio)) in enumerate(handles.items())]

    def task_index(v: np.ndarray) -> np.ndarray:
        if hsorted.shape[0] == 0:
            return np.full(v.shape[0], -1, np.int32)
        e = expand(v)
        pos = np.clip(np.searchsorted(hsorted, e), 0, hsorted.shape[0] - 1)
        return np.where(hsorted[pos] == e, horder[pos], -1).astype(np.int32)

    strings: list[str] = []
    markers: dict[int, str] = {}
    parts: list[np.ndarray] = []
    stream_meta: dict[str, Any] = {}
    api_ids: set[int] = set()
    named_lut: np.ndarray | None = None
    if table is not None and table.events:
        named_lut = np.zeros(max(table.events) + 2, dtype=bool)
        named_lut[list(table.events)] = True
    for si, info in enumerate(infos):
        r = streams[si]
        ids = r.id
        n = len(r)
        ovf = ids == EvtId.OVERFLOW
        stream_meta[info.name] = stream_facts(
            info, core=r.core, packets=n, counts_by_id=_count_ids(ids), sync_bytes=r.sync_bytes,
            overflow_values=r.p0[ovf].astype(int).tolist(),
            first=int(r.ts[0]) if n else None, last=int(r.ts[-1]) if n else None, str_order=r.str_order,
            core_counts=_count_ids(r.pcore) if esp_extension else None)
        del ovf
        nop = ids == EvtId.NOP
        keep = np.flatnonzero(~nop) if nop.any() else None
        del nop

        def take(a: np.ndarray, keep: np.ndarray | None = keep) -> np.ndarray:
            return a if keep is None else a[keep]

        kid, p0, p1, p2, nv = take(ids), take(r.p0), take(r.p1), take(r.p2), take(r.nv)
        m_ev = kid.shape[0]
        ev = np.empty(m_ev, dtype=EVENT_DTYPE)
        ev["ts_raw"] = take(r.ts)
        ev["src_offset"] = take(r.off)
        if r.start:
            ev["src_offset"] += np.uint64(r.start)
        core = take(r.pcore) if esp_extension else None
        ev["core"] = core if core is not None else r.core
        kind = _KIND_LUT[np.minimum(kid, 31)]
        is_mark = (kid == EvtId.EX) & (p0 == ExSubId.MARK)
        kind[is_mark] = K.MARK
        hi = np.flatnonzero(kid >= OS_ID_FIRST)
        if hi.shape[0]:
            # OS/module/user ids: API_CALL when named by the OS table or below the first module
            # offset, else USER.
            kh = kid[hi]
            mod_first = min([m["evt_off"] for m in info.modules] + [MODULE_EVENT_OFFSET])
            is_api = kh < mod_first
            if named_lut is not None:
                is_api |= named_lut[np.minimum(kh, named_lut.shape[0] - 1)]
            kind[hi] = np.where(is_api, K.API_CALL, K.USER)
            api_ids.update(np.unique(kh[is_api]).tolist())
            del kh, is_api
        ev["kind"] = kind
        # values (payload per kind)
        ev["value"] = VALUE_NULL
        ev["marker"] = 0
        ev["target_id"] = -1
        val = ev["value"]  # strided views: masked writes touch only their rows
        for evt, src in ((EvtId.OVERFLOW, p0), (EvtId.TASK_STOP_READY, p1), (EvtId.SYSTIME_CYCLES, p0)):
            m = np.flatnonzero(kid == evt)
            val[m] = src[m]
        m = np.flatnonzero(kid == EvtId.SYSTIME_US)
        val[m] = p0[m].astype(np.int64) | (p1[m].astype(np.int64) << 32)
        m = np.flatnonzero(kid == EvtId.TIMER_ENTER)
        val[m] = expand(p0[m]).astype(np.int64)
        m = np.flatnonzero(is_mark & (nv >= 3))
        val[m] = p2[m]
        m = np.flatnonzero(((kind == K.API_CALL) | (kind == K.USER)) & (nv >= 1))
        val[m] = p0[m]  # ids >= 24: p0..p2 are the payload's first values
        ret = np.flatnonzero(kid == EvtId.END_CALL)
        m = ret[nv[ret] >= 2]
        val[m] = p1[m]
        # LOG rows: value indexes Trace.strings
        raw_rows = keep if keep is not None else None
        for j in np.flatnonzero(kid == EvtId.PRINT_FORMATTED).tolist():
            _, s = r.aux(int(raw_rows[j]) if raw_rows is not None else j)
            val[j] = len(strings)
            strings.append(s or "")
        del val
        # markers
        marker = ev["marker"]
        m = np.flatnonzero((kid == EvtId.MARK_START) | (kid == EvtId.MARK_STOP))
        marker[m] = p0[m]
        m = np.flatnonzero(is_mark)
        marker[m] = p1[m]
        del marker, is_mark
        for j in np.flatnonzero((kid == EvtId.EX) & (p0 == ExSubId.NAME_MARKER)).tolist():
            vals, s = r.aux(int(raw_rows[j]) if raw_rows is not None else j)
            if len(vals) >= 2:
                markers[int(vals[1])] = s or ""
        # src_id (API_RETURN: the returning call's id)
        ev["src_id"] = kid
        if ret.shape[0]:
            ev["src_id"][ret] = p0[ret]
        # target tasks and context arguments
        tgt = ev["target_id"]
        m = np.flatnonzero(_TARGET_LUT[np.minimum(kid, 31)])
        tgt[m] = task_index(p0[m])
        del tgt
        arg = np.full(m_ev, -1, dtype=np.int32)
        m = np.flatnonzero(kid == EvtId.ISR_ENTER)
        arg[m] = p0[m].astype(np.int32)
        m = np.flatnonzero(kid == EvtId.TASK_START_EXEC)
        arg[m] = task_index(p0[m])
        del m, kid, p0, p1, p2, nv, ret
        streams[si] = None  # type: ignore[call-overload]  # free the raw columns early
        del r
        cores = np.unique(core) if core is not None else np.zeros(1, np.uint8)
        if cores.shape[0] > 1:
            for c in cores.tolist():
                cm = np.flatnonzero(core == c)
                ct, ci = track_context(kind[cm], arg[cm])
                ev["ctx_type"][cm] = ct
                ev["ctx_id"][cm] = ci
        else:
            ct, ci = track_context(kind, arg)
            ev["ctx_type"] = ct
            ev["ctx_id"] = ci
        del ct, ci, kind, arg, core
        parts.append(ev)
        del ev

    all_raw = [p["ts_raw"] for p in parts if p.shape[0]]
    origin = int(min(int(x.min()) for x in all_raw)) if all_raw else 0
    del all_raw
    for p in parts:
        _fill_ts_chunked(p, tick_hz, origin)
    events = concat_events(parts) if len(parts) > 1 else (parts[0] if parts else empty_events(0))
    del parts

    # ids >= 24 that no table names (system id 30, OS ids missing from the description, ids
    # below the first module offset when there is no description): one NOTICE per id.
    mod_offs = [m["evt_off"] for i in infos for m in i.modules]
    first_mod = min(mod_offs) if mod_offs else None
    unknown: dict[int, int] = {}
    for sm in stream_meta.values():
        for k, c in sm["counts_by_id"].items():
            i = int(k)
            known = i < 24 or i in (24, 25, 26, 27, 28, 29, 31) or \
                (table is not None and i in table.events) or (first_mod is not None and i >= first_mod)
            if not known:
                unknown[i] = unknown.get(i, 0) + c
    for i, c in sorted(unknown.items()):
        diags.append(diagnostic("SV_UNKNOWN_ID", 0, f"event id {i} has no name in "
                                f"{table.name if table else 'any description'}; kept as src_id {i}",
                                count=c))
    ovf_rows = events["kind"] == K.OVERFLOW
    if ovf_rows.any():
        drops = events["value"][ovf_rows]
        diags.append(diagnostic("SV_OVERFLOW", int(events["src_offset"][ovf_rows][0]),
                                f"{int(ovf_rows.sum())} OVERFLOW packets (target drop counter up to "
                                f"{int(drops.max())}): intervals spanning them are unreliable",
                                count=int(ovf_rows.sum())))
    cores_n = len({int(c) for c in np.unique(events["core"]).tolist()}) if len(events) else len(streams)
    return assemble_trace(
        events, tasks=tasks, diags=diags, strings=strings, isr_names=isr_names, markers=markers,
        table=table, api_ids=api_ids, stream_meta=stream_meta, init=init, sysdesc=sysdesc,
        sysdesc_texts=sysdesc_texts, infos=infos, header=header, esp_extension=esp_extension,
        version=version, path=path, sha256=sha256, tick_hz=tick_hz, origin=origin, cores_n=cores_n)


def assemble_trace(events: np.ndarray, *, tasks: list[Task], diags: list[Diagnostic], strings: list[str],
                   isr_names: dict[int, str], markers: dict[int, str], table: OsTable | None,
                   api_ids: Any, stream_meta: Any, init: Any, sysdesc: dict[str, str],
                   sysdesc_texts: Any, infos: list[StreamInfo], header: Any, esp_extension: bool,
                   version: Any, path: Any, sha256: Any, tick_hz: Any, origin: int,
                   cores_n: int) -> Trace:
    """The Trace both conversion paths (NumPy here, Rust in :mod:`.fast`) return: side tables, the
    description's API names and arguments, and the metadata (:func:`.streams.assemble_meta`)."""
    meta, isrs, mk = assemble_meta(
        isr_names=isr_names, markers=markers, table=table, api_ids=api_ids, stream_meta=stream_meta,
        init=init, sysdesc=sysdesc, sysdesc_texts=sysdesc_texts, infos=infos, header=header,
        esp_extension=esp_extension, version=version, path=path, sha256=sha256, tick_hz=tick_hz,
        origin=origin, cores_n=cores_n)
    return Trace(events, meta, tasks=tasks, isrs=isrs, markers=mk, diagnostics=diags, strings=strings)
