"""CPU load per task and per ISR over a window (trace only).

The running context is rebuilt from the kernel events: ``TASK_SWITCH_IN`` sets the running task,
``IDLE`` (or a switch to a task named like the idle task) sets idle, ``ISR_ENTER`` pushes an
interrupt, ``ISR_EXIT``/``ISR_TO_SCHED`` pops it. Time is charged to the innermost ISR, else the
running task. Time inside an OVERFLOW gap, and from a gap until the next switch-in, is charged
to nobody and reported as ``unknown``.

Metrics (scalars, percent of the window): ``cpu.load.task.<name>``, ``cpu.load.isr.<name>``,
``cpu.load.idle``, ``cpu.load.total`` (100 - idle - unknown), ``cpu.load.unknown``.
The per-instance table has one row per context, metric ``cpu.busy.<context>`` (``value`` = busy ns
over the window).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace

from ._metric import Result, Series, Summary, make_table
from .sites import Site, is_logic
from .stats import DropLog, overflow_gaps

IDLE_NAMES = ("idle", "tmr svc", "tx_idle")


@dataclass(frozen=True)
class CpuLoadSummary(Summary):
    window_ns: int = 0
    busy_ns: dict[str, int] = field(default_factory=dict)


def cpu_load(trace: Trace, *, window: tuple[int, int] | None = None) -> Result:
    """Busy time per task and ISR over ``window`` (default: the whole trace)."""
    drop_log = DropLog()
    if is_logic(trace) or len(trace) == 0:
        return Result(
            make_table([], "logic" if is_logic(trace) else "trace"),
            CpuLoadSummary(source="logic" if is_logic(trace) else "trace"),
        )
    ev = trace.events
    ts = ev["ts"].astype(np.int64)
    w0, w1 = window if window is not None else (int(ts[0]), int(ts[-1]))
    kinds = ev["kind"]
    rel = np.isin(
        kinds,
        [
            EventKind.TASK_SWITCH_IN,
            EventKind.ISR_ENTER,
            EventKind.ISR_EXIT,
            EventKind.ISR_TO_SCHED,
            EventKind.IDLE,
            EventKind.OVERFLOW,
            EventKind.TASK_SWITCH_OUT,
        ],
    )
    idx = np.flatnonzero(rel)
    if not np.isin(kinds[idx], [EventKind.TASK_SWITCH_IN, EventKind.ISR_ENTER, EventKind.IDLE]).any():
        # no scheduling events at all (a marker-only trace): nothing to attribute
        return Result(make_table([], "trace"), CpuLoadSummary(source="trace"))
    names = {t.ctx_id: t.name for t in trace.tasks}
    isr_names = {i.number: i.name for i in trace.isrs}
    idle_ids = {cid for cid, n in names.items() if n.strip().lower() in IDLE_NAMES}
    busy: dict[str, int] = {}
    cur: str | None = "unknown"
    stack: list[str] = []
    last = w0
    k_list, c_list, t_list = kinds[idx].tolist(), ev["ctx_id"][idx].tolist(), ts[idx].tolist()
    for k, cid, t in zip(k_list, c_list, t_list):
        t_c = min(max(t, w0), w1)
        owner = stack[-1] if stack else cur
        if t_c > last and owner is not None:
            busy[owner] = busy.get(owner, 0) + (t_c - last)
        last = max(last, t_c)
        if k == EventKind.TASK_SWITCH_IN:
            cur = "idle" if cid in idle_ids else f"task.{names.get(cid, f'task#{cid}')}"
        elif k == EventKind.IDLE:
            cur = "idle"
        elif k == EventKind.TASK_SWITCH_OUT:
            cur = "idle" if not stack else cur
        elif k == EventKind.ISR_ENTER:
            stack.append(f"isr.{isr_names.get(cid, f'irq{cid}')}")
        elif k in (EventKind.ISR_EXIT, EventKind.ISR_TO_SCHED):
            if stack:
                stack.pop()
        elif k == EventKind.OVERFLOW:
            cur, stack = "unknown", []
    if w1 > last:
        owner = stack[-1] if stack else cur
        if owner is not None:
            busy[owner] = busy.get(owner, 0) + (w1 - last)
    for g0, g1 in overflow_gaps(trace):
        drop_log.add("cpu.load", "overflow_gap", g0, g1, 1)
    window_ns = max(w1 - w0, 0)
    scalars: dict[str, tuple[float, str]] = {}
    for name, b in sorted(busy.items()):
        scalars[f"cpu.load.{name}"] = (100.0 * b / window_ns if window_ns else float("nan"), "pct")
    idle = busy.get("idle", 0)
    unknown = busy.get("unknown", 0)
    if window_ns:
        scalars["cpu.load.total"] = (100.0 * (window_ns - idle - unknown) / window_ns, "pct")
        scalars.setdefault("cpu.load.unknown", (100.0 * unknown / window_ns, "pct"))
    series = [
        Series(
            f"cpu.busy.{n}",
            "ns",
            np.array([w0], np.int64),
            np.array([w1], np.int64),
            np.array([busy[n]], dtype=np.float64),
        )
        for n in sorted(busy)
    ]
    table = make_table(series, "trace")
    summary = CpuLoadSummary(
        source="trace",
        scalars=scalars,
        window_ns=window_ns,
        busy_ns=dict(busy),
        excluded=len(drop_log),
        drop_log=tuple(drop_log.entries),
    )
    return Result(table, summary)


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any]) -> Result:
    return cpu_load(trace)
