"""Raw SystemView packet columns -> the common event model (systemview.md §7 mapping).

Every packet except NOP becomes one event row. Metadata packets (INIT, SYSDESC, TASK_INFO,
STACK_INFO, MODULEDESC, NAME_RESOURCE, NUMMODULES, SYSTIME_CYCLES) are kept as ``OTHER`` rows with
``src_id`` = packet id *and* parsed into side tables / ``meta.extra``; NOP packets (padding) are not
events but are counted in ``meta.extra["streams"][name]["counts_by_id"]`` (raw per-id packet counts,
as in the corpus ``facts.json``). Running context (task / ISR with nesting / idle) is tracked per
core with vectorised NumPy; an OVERFLOW resets it (state unknown after lost packets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt
from ..model import (
    CtxType,
    Diagnostic,
    EventKind,
    Isr,
    Marker,
    Task,
    Trace,
    TraceMeta,
    concat_events,
    empty_events,
    fill_ts,
)
from .decode import RawStream
from .description import OsTable, choose_table, load_bundled, load_description
from .format import MODULE_EVENT_OFFSET, OS_ID_FIRST, EvtId, ExSubId

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
_TASK_TARGET_IDS = (6, 7, 8, 29)  # target_id = the task in the payload


@dataclass
class StreamInfo:
    """Per-stream facts collected while converting (ends up in ``meta.extra["streams"]``)."""

    name: str
    core: int
    init: dict[str, Any] | None = None
    inits: int = 0
    sysdesc: list[str] = field(default_factory=list)
    task_info: dict[int, tuple[str, int]] = field(default_factory=dict)  # shrunk id -> (name, prio)
    modules: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[int, str] = field(default_factory=dict)
    systime: list[tuple[str, int]] = field(default_factory=list)


def _sysdesc_items(texts: list[str]) -> tuple[dict[str, str], dict[int, str]]:
    desc: dict[str, str] = {}
    isrs: dict[int, str] = {}
    for t in texts:
        for item in t.split(","):
            k, sep, v = item.partition("=")
            k = k.strip()
            if not sep:
                continue
            if k.startswith("I#"):
                try:
                    isrs[int(k[2:], 0)] = v.strip()
                except ValueError:
                    continue
            else:
                desc.setdefault(k, v.strip())
    return desc, isrs


def _collect(r: RawStream, info: StreamInfo) -> None:
    """Parse the rare metadata packets of one stream (a Python loop over a few rows only)."""
    ids = r.id
    meta_rows = np.flatnonzero(np.isin(ids, (9, 12, 13, 14, 22, 24, 25)))
    for row in meta_rows.tolist():
        i = int(ids[row])
        vals, s = r.aux(row)
        if i == 24:
            info.inits += 1
            if info.init is None:
                v = (vals + [0, 0, 0, 0])[:4]
                info.init = {"sys_freq": v[0], "cpu_freq": v[1], "ram_base": v[2], "id_shift": v[3],
                             "raw": vals}
        elif i == 9 and len(vals) >= 2:
            info.task_info[vals[0]] = (s or "", vals[1])
        elif i == 14 and s is not None:
            info.sysdesc.append(s)
        elif i == 22 and len(vals) >= 2:
            info.modules.append({"id": vals[0], "evt_off": vals[1], "desc": s or ""})
        elif i == 25 and vals:
            info.resources[vals[0]] = s or ""
        elif i == 12:
            info.systime.append(("cycles", int(r.p0[row])))
        elif i == 13:
            info.systime.append(("us", int(r.p0[row]) | (int(r.p1[row]) << 32)))


def _forward_fill_pos(mask: np.ndarray) -> np.ndarray:
    """For each i, the largest j <= i with mask[j], else -1."""
    pos = np.where(mask, np.arange(mask.shape[0]), -1)
    return np.maximum.accumulate(pos) if pos.shape[0] else pos


def track_context(kind: np.ndarray, arg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running context for one core's events in stream order (vectorised).

    ``arg`` is the IRQ number for ISR_ENTER rows and the dense task index for TASK_SWITCH_IN rows.
    ISR_ENTER/EXIT nest (an exit at depth 0 is ignored); ISR rows themselves belong to the ISR; an
    OVERFLOW makes everything unknown until the next switch/enter. Returns (ctx_type, ctx_id).
    """
    n = kind.shape[0]
    ctx_type = np.zeros(n, dtype=np.uint8)
    ctx_id = np.full(n, -1, dtype=np.int32)
    if n == 0:
        return ctx_type, ctx_id
    is_ovf = kind == K.OVERFLOW
    seg = np.cumsum(is_ovf)
    enter = kind == K.ISR_ENTER
    leave = (kind == K.ISR_EXIT) | (kind == K.ISR_TO_SCHED)
    step = enter.astype(np.int64) - leave.astype(np.int64)
    step[is_ovf] = 0
    s = np.cumsum(step)
    # value of s just before each segment starts (segments begin at index 0 and at each OVERFLOW)
    seg_first = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    base = np.where(seg_first > 0, s[np.maximum(seg_first - 1, 0)], 0)
    # the OVERFLOW row itself starts its segment: include its own (zero) step
    s_rel = s - base[seg]
    big = np.int64(4 * n + 4)
    runmin = np.minimum.accumulate(s_rel - seg * big) + seg * big
    depth = s_rel - np.minimum(runmin, 0)  # depth after the event, floored at 0
    prev = np.r_[0, depth[:-1]]
    prev[seg_first] = 0
    lvl = np.maximum(depth, prev)  # exit rows belong to the ISR they leave
    lvl[is_ovf] = 0
    # IRQ at level d: last ISR_ENTER in the same segment whose depth-after is d.
    in_isr = np.flatnonzero(lvl > 0)
    if in_isr.shape[0]:
        e_idx = np.flatnonzero(enter & (depth > 0))
        maxl = int(lvl.max()) + 1
        e_key = seg[e_idx].astype(np.int64) * maxl + depth[e_idx]
        q_key = seg[in_isr].astype(np.int64) * maxl + lvl[in_isr]
        keys = np.r_[e_key, q_key]
        idx = np.r_[e_idx, in_isr]
        is_e = np.r_[np.ones(e_idx.shape[0], bool), np.zeros(in_isr.shape[0], bool)]
        order = np.lexsort((~is_e, idx, keys))
        keys, idx, is_e = keys[order], idx[order], is_e[order]
        last = _forward_fill_pos(is_e)
        ok = (last >= 0) & (~is_e)
        ok[ok] = keys[last[ok]] == keys[ok]
        q_rows = idx[ok]
        ctx_type[in_isr] = CtxType.ISR
        ctx_id[q_rows] = arg[idx[last[ok]]]
    # Task state at depth 0: set by SWITCH_IN (task), IDLE (idle), SWITCH_OUT / OVERFLOW (none).
    setter = (kind == K.TASK_SWITCH_IN) | (kind == K.IDLE) | (kind == K.TASK_SWITCH_OUT) | is_ovf
    st_type = np.where(kind == K.TASK_SWITCH_IN, CtxType.TASK,
                       np.where(kind == K.IDLE, CtxType.IDLE, CtxType.NONE)).astype(np.uint8)
    st_id = np.where(kind == K.TASK_SWITCH_IN, arg, -1).astype(np.int32)
    last = _forward_fill_pos(setter)
    # SWITCH_OUT rows belong to the task that stops: use the state before them.
    out_rows = np.flatnonzero(kind == K.TASK_SWITCH_OUT)
    before = np.r_[-1, last[:-1]]
    last[out_rows] = before[out_rows]
    task_rows = (lvl == 0) & (last >= 0)
    ctx_type[task_rows] = st_type[last[task_rows]]
    ctx_id[task_rows] = st_id[last[task_rows]]
    ctx_type[is_ovf] = CtxType.NONE
    ctx_id[is_ovf] = -1
    return ctx_type, ctx_id


def build_trace(streams: list[RawStream], names: list[str], *, path: str, sha256: str,
                version: str, header: list[list[str]], esp_extension: bool, description: Any,
                on_corrupt: str) -> Trace:
    diags: list[Diagnostic] = []
    infos: list[StreamInfo] = []
    for r, name in zip(streams, names):
        for code, off, count, fatal, detail in r.diags:
            foff = r.start + int(off)
            if code == "SV_BAD_MAGIC":
                raise TraceFormatError(f"{detail} in stream {name}", code="SV_BAD_MAGIC", path=path,
                                       offset=r.start)
            if fatal:
                handle_corrupt(TraceCorruptError(f"{detail} (stream {name})", code=code, path=path,
                                                 offset=foff), on_corrupt, diags)  # type: ignore[arg-type]
            else:
                diags.append(diagnostic(code, foff, f"{detail} (stream {name})", count=int(count)))
        info = StreamInfo(name=name, core=r.core)
        _collect(r, info)
        infos.append(info)

    init = next((i.init for i in infos if i.init), None)
    if init is None:
        diags.append(diagnostic("SV_NO_INIT", 0, "no INIT packet: tick rate unknown, ts is in ticks"))
    ram_base = int(init["ram_base"]) if init else 0
    shift = int(init["id_shift"]) if init else 0
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
        m = np.isin(r.id, (4, 6, 7, 8, 29))
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
    for r, info in zip(streams, infos):
        ids = r.id
        n = len(r)
        uniq, cnt = np.unique(ids, return_counts=True)
        ovf = ids == EvtId.OVERFLOW
        sm: dict[str, Any] = {
            "core": r.core, "packets": n,
            "counts_by_id": {str(int(k)): int(c) for k, c in zip(uniq, cnt)},
            "sync_zero_bytes": r.sync_bytes,
            "init": info.init, "inits": info.inits, "sysdesc_count": len(info.sysdesc),
            "sysdesc": info.sysdesc,
            "task_info": {f"0x{k:x}": {"prio": p, "name": nm} for k, (nm, p) in info.task_info.items()},
            "name_resource": {f"0x{k:x}": v for k, v in info.resources.items()},
            "modules": info.modules, "systime": info.systime,
            "overflow_packets": int(ovf.sum()), "overflow_values": r.p0[ovf].astype(int).tolist(),
            "first_ts_ticks": int(r.ts[0]) if n else None, "last_ts_ticks": int(r.ts[-1]) if n else None,
            "string_order": {0: None, 1: "lo-hi", 2: "hi-lo"}[r.str_order],
            "esp_core_bit_counts": ({str(int(k)): int(c) for k, c in
                                     zip(*np.unique(r.pcore, return_counts=True))}
                                    if esp_extension else None),
        }
        stream_meta[info.name] = sm
        keep = np.flatnonzero(ids != EvtId.NOP)
        ev = empty_events(keep.shape[0])
        kid = ids[keep]
        p0, p1, p2, nv = r.p0[keep], r.p1[keep], r.p2[keep], r.nv[keep]
        sysm = kid < 32
        kind = np.where(sysm, _KIND_LUT[np.minimum(kid, 31)], K.OTHER).astype(np.uint8)
        # EX: MARK (sub 0) is a point marker; other sub-events stay OTHER.
        ex = kid == EvtId.EX
        kind[ex & (p0 == ExSubId.MARK)] = K.MARK
        # OS/module/user ids: API_CALL when named by the OS table or in the OS range, else USER.
        hi = ~sysm
        if hi.any():
            named = np.zeros(kid.shape[0], bool)
            if table is not None:
                tids = np.fromiter(table.events.keys(), dtype=np.uint32)
                named = np.isin(kid, tids)
            mod_first = min([m["evt_off"] for m in info.modules] + [MODULE_EVENT_OFFSET])
            is_api = hi & (named | ((kid >= OS_ID_FIRST) & (kid < mod_first)))
            kind[is_api] = K.API_CALL
            kind[hi & ~is_api] = K.USER
            api_ids.update(np.unique(kid[is_api]).tolist())
        ev["kind"] = kind
        ev["src_id"] = kid
        ev["ts_raw"] = r.ts[keep]
        ev["src_offset"] = r.off[keep].astype(np.uint64) + np.uint64(r.start)
        ev["core"] = r.pcore[keep] if esp_extension else r.core
        # target tasks
        tt = np.isin(kid, _TASK_TARGET_IDS)
        if tt.any():
            ev["target_id"][tt] = task_index(p0[tt])
        # values
        val = ev["value"]
        m = kid == EvtId.OVERFLOW
        val[m] = p0[m]
        m = kid == EvtId.TASK_STOP_READY
        val[m] = p1[m]
        m = kid == EvtId.SYSTIME_US
        val[m] = p0[m].astype(np.int64) | (p1[m].astype(np.int64) << 32)
        m = kid == EvtId.SYSTIME_CYCLES
        val[m] = p0[m]
        m = (kid == EvtId.MARK_START) | (kid == EvtId.MARK_STOP)
        ev["marker"][m] = p0[m]
        m = ex & (p0 == ExSubId.MARK)
        ev["marker"][m] = p1[m]
        mv = m & (nv >= 3)
        val[mv] = p2[mv]
        m = kid == EvtId.TIMER_ENTER
        val[m] = expand(p0[m]).astype(np.int64)
        m = (kind == K.API_CALL) & (nv >= 1)  # ids >= 24: p0..p2 are the payload's first values
        val[m] = p0[m]
        m = kid == EvtId.END_CALL
        ev["src_id"][m] = p0[m]  # API_RETURN: src_id names the returning call
        mv = m & (nv >= 2)
        val[mv] = p1[mv]
        m = (kind == K.USER) & (nv >= 1)
        val[m] = p0[m]
        # LOG rows: value indexes Trace.strings
        for j in np.flatnonzero(kid == EvtId.PRINT_FORMATTED).tolist():
            vals, s = r.aux(int(keep[j]))
            val[j] = len(strings)
            strings.append(s or "")
        # NAME_MARKER
        for j in np.flatnonzero(ex & (p0 == ExSubId.NAME_MARKER)).tolist():
            vals, s = r.aux(int(keep[j]))
            if len(vals) >= 2:
                markers[int(vals[1])] = s or ""
        # running context per core
        arg = np.full(kid.shape[0], -1, dtype=np.int32)
        m = kid == EvtId.ISR_ENTER
        arg[m] = p0[m].astype(np.int32)
        m = kid == EvtId.TASK_START_EXEC
        arg[m] = task_index(p0[m])
        cores = np.unique(ev["core"])
        for c in cores.tolist():
            cm = ev["core"] == c if cores.shape[0] > 1 else slice(None)
            ct, ci = track_context(kind[cm], arg[cm])
            ev["ctx_type"][cm] = ct
            ev["ctx_id"][cm] = ci
        parts.append(ev)

    all_raw = [p["ts_raw"] for p in parts if p.shape[0]]
    origin = int(min(int(x.min()) for x in all_raw)) if all_raw else 0
    for p in parts:
        fill_ts(p, tick_hz, origin)
    events = concat_events(parts) if len(parts) > 1 else (parts[0] if parts else empty_events(0))

    ovf_rows = events["kind"] == K.OVERFLOW
    if ovf_rows.any():
        drops = events["value"][ovf_rows]
        diags.append(diagnostic("SV_OVERFLOW", int(events["src_offset"][ovf_rows][0]),
                                f"{int(ovf_rows.sum())} OVERFLOW packets (target drop counter up to "
                                f"{int(drops.max())}): intervals spanning them are unreliable",
                                count=int(ovf_rows.sum())))
    cores_n = len({int(c) for c in np.unique(events["core"]).tolist()}) if len(events) else len(streams)
    api_names = {str(i): table.label(i) for i in sorted(api_ids)} if table else {}
    extra: dict[str, Any] = {
        "streams": stream_meta, "init": init, "sysdesc": sysdesc, "sysdesc_raw": sysdesc_texts,
        "modules": [m for i in infos for m in i.modules], "header": header,
        "esp_extension": esp_extension, "description": table.name if table else None,
        "api_names": api_names,
    }
    meta = TraceMeta(
        source_format="systemview", source_version=version, source_path=path, source_sha256=sha256,
        tick_hz=tick_hz, clock_domain="target_cycles", rtos=sysdesc.get("O", ""),
        app=sysdesc.get("N", ""), cores=max(cores_n, 1), origin_raw=origin, extra=extra)
    isrs = [Isr(k, v) for k, v in sorted(isr_names.items())]
    mk = [Marker(k, v) for k, v in sorted(markers.items())]
    return Trace(events, meta, tasks=tasks, isrs=isrs, markers=mk, diagnostics=diags, strings=strings)
