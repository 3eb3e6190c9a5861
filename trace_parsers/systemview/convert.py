"""The Trace of a SystemView read (:func:`assemble_trace`), and the running context per core in
vectorised NumPy (:func:`track_context`, used by the CTF reader; SystemView's own context is
tracked in the Rust conversion, ``sv_model.rs``, by the same rules: docs/methodology.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import CtxType, Diagnostic, EventKind, Task, Trace
from .description import OsTable
from .streams import StreamInfo, assemble_meta

K = EventKind


def _forward_fill_pos(mask: np.ndarray) -> np.ndarray:
    """For each i, the largest j <= i with mask[j], else -1."""
    pos = np.where(mask, np.arange(mask.shape[0]), -1)
    return np.maximum.accumulate(pos) if pos.shape[0] else pos


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


def assemble_trace(events: np.ndarray, *, tasks: list[Task], diags: list[Diagnostic], strings: list[str],
                   isr_names: dict[int, str], markers: dict[int, str], table: OsTable | None,
                   api_ids: Any, stream_meta: Any, init: Any, sysdesc: dict[str, str],
                   sysdesc_texts: Any, infos: list[StreamInfo], header: Any, esp_extension: bool,
                   version: Any, path: Any, sha256: Any, tick_hz: Any, origin: int,
                   cores_n: int) -> Trace:
    """The Trace of a read: side tables, the description's API names and arguments, and the
    metadata (:func:`.streams.assemble_meta`)."""
    meta, isrs, mk = assemble_meta(
        isr_names=isr_names, markers=markers, table=table, api_ids=api_ids, stream_meta=stream_meta,
        init=init, sysdesc=sysdesc, sysdesc_texts=sysdesc_texts, infos=infos, header=header,
        esp_extension=esp_extension, version=version, path=path, sha256=sha256, tick_hz=tick_hz,
        origin=origin, cores_n=cores_n)
    return Trace(events, meta, tasks=tasks, isrs=isrs, markers=mk, diagnostics=diags, strings=strings)
