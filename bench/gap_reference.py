"""A vectorised reference for the kernel metrics of one single-core recording, sharing no code with
``analyzers/``: NumPy over the reader's columns (docs/methodology.md "Kernel state" rules).

``python bench/gap_reference.py RECORDING`` prints one JSON object: per-task busy time, per-ISR
count, mean and p99 of the durations (instances touching a data-loss gap excluded), and the CPU
load per context in percent of the span (``unknown`` included). ``bench/gaps.py`` times it against
``crosstrace analyze`` on the same file and compares the numbers.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from trace_parsers import open_trace

SW_IN, ISR_ENTER, ISR_EXIT, ISR_TO_SCHED, OVERFLOW, TRACE_START, IDLE = 1, 5, 6, 7, 13, 14, 16


def depth_walk(kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ISR depth after each event (floored at 0; emptied by a switch-in, an OVERFLOW or a restart)
    and the reset segment of each event."""
    step = np.where(kind == ISR_ENTER, 1, np.where((kind == ISR_EXIT) | (kind == ISR_TO_SCHED), -1, 0))
    reset = (kind == SW_IN) | (kind == OVERFLOW) | (kind == TRACE_START)
    seg = np.cumsum(reset)
    s = np.cumsum(step)
    # within a segment (from its reset on) the floor is the running minimum of s; before the first
    # reset it is also never above 0
    big = seg.astype(np.int64) * (4 * kind.size + 4)
    floor = np.minimum.accumulate(s - big) + big
    floor = np.where(seg == 0, np.minimum(floor, 0), floor)
    return s - floor, seg


def reference(path: str) -> dict:
    tr = open_trace(path, on_corrupt="skip")
    c = tr.columns
    kind = np.asarray(c["kind"]).astype(np.int64)
    ts = np.asarray(c["ts"]).astype(np.int64)
    cid = np.asarray(c["ctx_id"]).astype(np.int64)
    names = {t.ctx_id: t.name for t in tr.tasks}
    isr_names = {i.number: i.name for i in tr.isrs}
    n = kind.size
    depth, seg = depth_walk(kind)
    loss = (kind == OVERFLOW) | ((kind == TRACE_START) & (np.arange(n) > 0))
    # running task after each event: -2 unknown, -3 idle, else the task id
    setter = np.full(n, -1, np.int64)
    setter[kind == SW_IN] = cid[kind == SW_IN]
    setter[kind == IDLE] = -3
    setter[loss | (kind == TRACE_START)] = -2
    idx = np.maximum.accumulate(np.where(setter != -1, np.arange(n), -1))
    task = np.where(idx >= 0, setter[np.maximum(idx, 0)], -2)
    # the innermost open ISR after each event: the last entry that reached the current depth
    enter = np.flatnonzero(kind == ISR_ENTER)
    owner_isr = np.full(n, -1, np.int64)
    inside = np.flatnonzero(depth > 0)
    if inside.size and enter.size:
        key_e = depth[enter] * (n + 1) + enter
        order = np.argsort(key_e)
        pos = np.searchsorted(key_e[order], depth[inside] * (n + 1) + inside, side="right") - 1
        owner_isr[inside] = cid[enter[order][pos]]
    # time from each event to the next goes to its owner; the interval ending at a loss is unknown
    dt = np.diff(ts)
    unknown = (task[:-1] == -2) & (owner_isr[:-1] < 0) | loss[1:]
    busy: dict[str, int] = {"unknown": int(dt[unknown].sum())}
    is_isr = (owner_isr[:-1] >= 0) & ~loss[1:]
    for irq in np.unique(owner_isr[:-1][is_isr]).tolist():
        busy[f"isr.{isr_names.get(irq, f'irq{irq}')}"] = int(dt[is_isr & (owner_isr[:-1] == irq)].sum())
    on_task = ~unknown & ~is_isr
    busy["idle"] = int(dt[on_task & (task[:-1] == -3)].sum())
    for t in np.unique(task[:-1][on_task & (task[:-1] >= 0)]).tolist():
        nm = names.get(t, f"task#{t}")
        label = "idle" if nm.lower().rstrip("0123456789") in ("idle", "tx_idle") else f"task.{nm}"
        busy[label] = busy.get(label, 0) + int(dt[on_task & (task[:-1] == t)].sum())
    span = int(ts[-1] - ts[0])
    ovf = np.flatnonzero(kind == OVERFLOW)
    g0, g1 = ts[np.maximum(ovf - 1, 0)], ts[ovf]
    # each ISR entry's exit: the first exit after it that returns to its outer depth, same segment
    isr: dict[str, dict] = {}
    exits = np.flatnonzero((kind == ISR_EXIT) | (kind == ISR_TO_SCHED))
    key_x = (seg[exits] * (n + 2) + depth[exits]) * (n + 1) + exits
    ox = np.argsort(key_x)
    q = (seg[enter] * (n + 2) + depth[enter] - 1) * (n + 1) + enter
    p = np.searchsorted(key_x[ox], q, side="right")
    ok = p < exits.size
    pp = np.minimum(p, exits.size - 1)
    hit = exits[ox][pp]
    ok &= (seg[hit] == seg[enter]) & (depth[hit] == depth[enter] - 1)
    st, en, irq = ts[enter[ok]], ts[hit[ok]], cid[enter[ok]]
    lo = np.searchsorted(g1, st, side="left")
    hi = np.searchsorted(g0, en, side="right") - 1
    clean = lo > hi
    for i in np.unique(irq).tolist():
        d = (en - st)[clean & (irq == i)].astype(np.float64)
        if d.size:
            isr[isr_names.get(i, f"irq{i}")] = {"n": int(d.size), "mean": float(d.mean()),
                                                "p99": float(np.percentile(d, 99))}
    load = {k: 100.0 * v / span for k, v in busy.items() if v > 0}
    return {"events": n, "span": span, "busy": busy, "load": load, "isr": isr}


if __name__ == "__main__":
    print(json.dumps(reference(sys.argv[1])))
