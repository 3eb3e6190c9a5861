"""`crosstrace export --vcd`: pins plus task-running / ISR-active signals, read back by our VCD reader."""

from __future__ import annotations

import numpy as np

from analyzers.cli import main
from analyzers.export import timeline as T
from analyzers.export import vcd
from trace_parsers import open_trace
from trace_parsers.model import EventKind

from ...conftest import CAPTURES

CTX = CAPTURES / "qemu_netduinoplus2" / "freertos" / "ctx_switch-n2" / "ref"
ISR = CAPTURES / "qemu_netduinoplus2" / "threadx" / "isr_latency" / "ref"


def _edges(tr, name):
    ch = next(c for c in tr.channels if c.name == name)
    ev = tr.events
    edge = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
    sel = (ev["marker"] == ch.index) & edge
    return ev["ts"][sel], (ev["kind"][sel] == EventKind.EDGE_RISE).astype(int)


def test_vcd_signals_match_the_timeline(tmp_path):
    out = tmp_path / "a.vcd"
    assert main(["export", str(CTX), "--vcd", str(out)]) == 0
    tr = open_trace(out)
    names = {c.name for c in tr.channels}
    assert {"ctx_yield", "ctx_switch_in", "uart_tx", "task_yield0", "task_yield1", "task_coord"} <= names
    trace, cap, sites, opts = T.load(CTX)
    tl = T.build(trace, cap, sites=sites, options=opts, metrics=False)
    running = sorted(i.start for i in tl.intervals if i.track == "task:yield0" and i.name == "running")
    ts, lv = _edges(tr, "task_yield0")
    # every rising edge is the start of a running interval (back-to-back intervals merge into one)
    assert set(ts[lv == 1].tolist()) <= set(running) and lv.sum() >= 100
    # the pins are on the trace clock: the yield pin's rising edges sit on the trace's yield marks
    marks = np.array(sorted(i.ts for i in tl.instants if i.name == "ctx.yield"))
    pts, plv = _edges(tr, "ctx_yield")
    d = np.abs(pts[:, None] - marks[None, :]).min(axis=1)
    assert d.max() <= 2  # one trace tick + one sample at 1 GHz


def test_isr_active_signal(tmp_path):
    out = tmp_path / "i.vcd"
    assert main(["export", str(ISR), "--vcd", str(out), "--no-metrics"]) == 0
    tr = open_trace(out)
    isr = [c.name for c in tr.channels if c.name.startswith("isr_")]
    assert isr
    ts, lv = _edges(tr, isr[0])
    assert lv.sum() >= 50 and np.all(np.diff(lv) != 0)  # alternating 0/1


def test_overlapping_intervals_merge():
    tl = T.Timeline(intervals=[T.Interval("isr:a", "a", 10, 20), T.Interval("isr:a", "a", 20, 30),
                               T.Interval("isr:a", "a", 25, 40), T.Interval("isr:a", "a", 50, 60)])
    (name, init, ts, lv), = vcd.signals(tl)
    assert name == "core0.isr.a" and init == 0
    assert ts.tolist() == [10, 40, 50, 60] and lv.tolist() == [1, 0, 1, 0]
