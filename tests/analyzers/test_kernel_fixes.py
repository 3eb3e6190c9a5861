"""Regression tests of issue 14's "wrong today" analyzer fixes, on small hand-built traces."""

from __future__ import annotations

import numpy as np
import pytest

from analyzers.metrics.context_switch import PREEMPT, context_switch_times
from analyzers.metrics.cpu_load import cpu_load, is_idle_name
from analyzers.metrics.isr_latency import isr_to_task_latency
from analyzers.metrics.kernel import kernel_metrics
from analyzers.run import run_analyzers
from analyzers.sites import load_sites
from tests.conftest import corpus_dir
from trace_parsers import read_systemview
from trace_parsers.model import CtxType, EventKind, Isr, Task, Trace, TraceMeta, empty_events

K, C = EventKind, CtxType


def make(rows, tasks=(), isrs=(), cores=1, tick_hz=1_000_000_000, fmt="systemview"):
    """rows: (ts, kind, ctx_type, ctx_id[, target_id[, core]])."""
    ev = empty_events(len(rows))
    for i, r in enumerate(rows):
        ts, kind, ct, cid, tgt, core = (*r, -1, 0)[:6] if len(r) == 4 else (*r, 0)[:6] if len(r) == 5 else r
        ev["ts"][i] = ev["ts_raw"][i] = ts
        ev["kind"][i], ev["ctx_type"][i], ev["ctx_id"][i] = kind, ct, cid
        ev["target_id"][i], ev["core"][i] = tgt, core
    meta = TraceMeta(fmt, tick_hz=tick_hz, cores=cores)
    return Trace(ev, meta, tasks=[Task(i, n) for i, n in enumerate(tasks)],
                 isrs=[Isr(n, name) for n, name in isrs])


def test_timer_service_task_is_not_idle():
    rows = [(0, K.TASK_SWITCH_IN, C.TASK, 0), (100, K.IDLE, C.IDLE, -1), (200, K.TASK_SWITCH_IN, C.TASK, 1)]
    tr = make(rows, tasks=["Tmr Svc", "IDLE"])
    sc = cpu_load(tr).summary.scalars
    assert sc["cpu.load.task.Tmr Svc"][0] == pytest.approx(50.0)  # was counted as idle (100 %)
    assert sc["cpu.load.idle"][0] == pytest.approx(50.0)
    assert [is_idle_name(n) for n in ("IDLE0", "IDLE1", "Tmr Svc", "tx_idle")] == [True, True, False, True]


def test_isr_duration_is_per_irq_never_pooled():
    rows = []
    for k in range(10):  # SysTick lasts 10 ns, EXTI 50 ns
        t = 1000 * k
        rows += [(t, K.ISR_ENTER, C.ISR, 15), (t + 10, K.ISR_EXIT, C.ISR, 15),
                 (t + 500, K.ISR_ENTER, C.ISR, 23), (t + 550, K.ISR_EXIT, C.ISR, 23)]
    rows = [(0, K.TASK_SWITCH_IN, C.TASK, 0)] + [(t + 1, *r) for t, *r in rows]
    tr = make(rows, tasks=["a"], isrs=[(15, "SysTick"), (23, "EXTI0")])
    _, s = isr_to_task_latency(tr, sites=load_sites())
    assert "isr.duration" not in s.stats  # was one distribution of both (mean 30)
    st = kernel_metrics(tr).summary.stats
    assert st["isr.SysTick.duration"].mean == 10 and st["isr.SysTick.duration"].n == 10
    assert st["isr.EXTI0.duration"].mean == 50 and st["isr.EXTI0.duration"].n == 10


def test_preemption_is_the_switch_the_isr_caused_on_its_core():
    rows = [
        (0, K.TASK_SWITCH_IN, C.TASK, 0),
        (100, K.ISR_ENTER, C.ISR, 15), (110, K.ISR_TO_SCHED, C.ISR, 15),
        (120, K.IDLE, C.IDLE, -1),  # the core went idle: no switch caused
        (4000, K.TASK_SWITCH_IN, C.TASK, 1),  # much later: not the ISR's (was paired: 3890 ns)
        (5000, K.ISR_ENTER, C.ISR, 15), (5005, K.ISR_TO_SCHED, C.ISR, 15),
        (5015, K.TASK_SWITCH_IN, C.TASK, 0),  # a real preemption: 10 ns
        (6000, K.ISR_ENTER, C.ISR, 15), (6005, K.ISR_TO_SCHED, C.ISR, 15),
        (6010, K.API_CALL, C.TASK, 0),  # the interrupted task ran on: no switch
        (9000, K.TASK_SWITCH_IN, C.TASK, 1),
    ]
    tr = make(rows, tasks=["a", "b"], isrs=[(15, "SysTick")])
    _, s = context_switch_times(tr, sites=load_sites())
    assert s.stats[PREEMPT].n == 1 and s.stats[PREEMPT].mean == 10


def test_preemption_never_pairs_across_cores():
    rows = [
        (0, K.TASK_SWITCH_IN, C.TASK, 0, -1, 0), (0, K.TASK_SWITCH_IN, C.TASK, 1, -1, 1),
        (100, K.ISR_ENTER, C.ISR, 15, -1, 1), (105, K.ISR_TO_SCHED, C.ISR, 15, -1, 1),
        (107, K.TASK_SWITCH_IN, C.TASK, 2, -1, 0),  # core 0: not the ISR's
        (130, K.TASK_SWITCH_IN, C.TASK, 3, -1, 1),  # core 1: 25 ns
    ]
    tr = make(rows, tasks=["a", "b", "c", "d"], isrs=[(15, "SysTick")], cores=2)
    _, s = context_switch_times(tr, sites=load_sites())
    assert s.stats[PREEMPT].n == 1 and s.stats[PREEMPT].mean == 25


def test_esp32_preemptions_are_short_after_the_pairing_fix():
    d = corpus_dir("systemview")
    pair = ["espidf_esp32_heaplog_2024_core0.svdat", "espidf_esp32_heaplog_2024_core1.svdat"]
    tr = read_systemview([d / f for f in pair])
    _, s = context_switch_times(tr, sites=load_sites())
    # pairing with "the next switch-in anywhere" gave instances of 27 ms after an IDLE
    assert s.stats[PREEMPT].max < 100_000, s.stats[PREEMPT].max


def test_trace_without_tick_rate_reports_ticks_never_ns():
    rows = [(0, K.TASK_SWITCH_IN, C.TASK, 0), (10, K.ISR_ENTER, C.ISR, 3), (262, K.ISR_EXIT, C.ISR, 3),
            (300, K.TASK_SWITCH_IN, C.TASK, 1)]
    tr = make(rows, tasks=["a", "b"], isrs=[(3, "isr 3")], tick_hz=None, fmt="tracex")
    res = run_analyzers(tr, load_sites(), {})
    assert res.units["isr.isr 3.duration"] == "ticks"
    assert "ns" not in set(res.table.column("unit").to_pylist())
    res_ns = run_analyzers(make(rows, tasks=["a", "b"], isrs=[(3, "isr 3")]), load_sites(), {})
    assert res_ns.units["isr.isr 3.duration"] == "ns"


def test_cpu_load_is_per_core_on_a_two_core_trace():
    rows = [
        (0, K.TASK_SWITCH_IN, C.TASK, 0, -1, 0), (0, K.IDLE, C.IDLE, -1, -1, 1),
        (50, K.TASK_SWITCH_IN, C.TASK, 1, -1, 1), (100, K.IDLE, C.IDLE, -1, -1, 0),
    ]
    sc = cpu_load(make(rows, tasks=["a", "b"], cores=2)).summary.scalars
    assert sc["cpu.load.core0.task.a"][0] == pytest.approx(100.0)
    assert sc["cpu.load.core1.idle"][0] == pytest.approx(50.0)  # core 1's idle was never seen
    assert sc["cpu.load.core1.task.b"][0] == pytest.approx(50.0)
    assert sc["cpu.load.task.a"][0] == pytest.approx(50.0)  # of the whole two-core machine
    assert sc["cpu.load.total"][0] == pytest.approx(75.0)
    assert np.isclose(sc["cpu.load.idle"][0], 25.0)
