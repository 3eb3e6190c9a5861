"""Every metric id crosstrace produces: unit, which sources can produce it, cross-validated or not.

A metric id is a dotted name; parametric ids carry a task, ISR, core or site name in ``<…>``
(``task.<task>.exec_time``). :func:`lookup` resolves a concrete id to its :class:`MetricDef`.
Site metrics are pure functions of site events (both sources, cross-validated instance by
instance); kernel metrics come from the RTOS's own events (trace only); user intervals are
declared in the capture configuration (analyzers.user_config) and behave like site metrics.

>>> lookup("task.Tmr Svc.exec_time").unit, lookup("task.Tmr Svc.exec_time").sources
('ns', ('trace',))
>>> lookup("ctx_switch.yield").cross_validated
True
>>> lookup("no.such.metric") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .finegrained_metrics import METRICS as _FG_METRICS

#: source names as in the campaign table's ``source`` column
TRACE, LOGIC, FIRMWARE = "trace", "logic", "firmware"
BOTH = (TRACE, LOGIC)


@dataclass(frozen=True)
class MetricDef:
    """One metric id (or id pattern)."""

    id: str  #: dotted id; ``<task>``, ``<isr>``, ``<core>``, ``<name>``, ``<context>`` are parameters
    unit: str  #: ns (ticks when the trace states no tick rate), pct, count, ppm, per_s
    sources: tuple[str, ...]  #: which sources can produce it
    cross_validated: bool  #: compared trace against pins, instance by instance or as a scalar
    family: str  #: "site", "kernel", "load", "user", "firmware"
    module: str  #: the module that computes it
    doc: str

    @property
    def tick_unit(self) -> str:
        """The unit when the trace states no tick rate (times stay in ticks)."""
        return {"ns": "ticks", "per_s": "per_tick"}.get(self.unit, self.unit)

    def matches(self, metric_id: str) -> bool:
        return _pattern(self.id).fullmatch(metric_id) is not None


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(<[a-z]+>)", template)
    rx = "".join("(.+?)" if p.startswith("<") else re.escape(p) for p in parts)
    return re.compile(rx)


_m = MetricDef


_CS, _ISR, _PER, _WL, _CAL, _CPU, _KER = (
    "analyzers.metrics.context_switch", "analyzers.metrics.isr_latency", "analyzers.metrics.periodicity",
    "analyzers.metrics.workload", "analyzers.metrics.calib", "analyzers.metrics.cpu_load",
    "analyzers.metrics.kernel",
)
_TM = "analyzers.metrics.thread_metric"

#: Every metric, most specific first (lookup returns the first match).
METRICS: tuple[MetricDef, ...] = (
    # -- site metrics: crosstrace's own firmware sites (sites.py), both sources -----------------------
    _m("ctx_switch.yield", "ns", BOTH, True, "site", _CS, "site ctx.yield to the next ctx.switch_in"),
    _m("ctx_switch.yield.to_switch_in", "ns", (TRACE,), False, "site", _CS,
       "site ctx.yield to the kernel's next TASK_SWITCH_IN (TraceX: next context)"),
    _m("ctx_switch.preempt.isr_to_task", "ns", (TRACE,), False, "kernel", _CS,
       "ISR_TO_SCHED to the switch-in it caused on the same core"),
    _m("isr.to_task.latency", "ns", BOTH, True, "site", _ISR, "site isr.enter to the next isr.task_wake"),
    _m("isr.to_task.switch_in", "ns", (TRACE,), False, "kernel", _ISR,
       "test IRQ entry to the switch-in its exit into the scheduler caused"),
    _m("isr.duration", "ns", (TRACE,), False, "kernel", _ISR, "the test IRQ's entry to its own exit"),
    _m("periodic.<name>.period", "ns", BOTH, True, "site", _PER, "consecutive activations"),
    _m("periodic.<name>.jitter.abs", "ns", BOTH, False, "site", _PER, "|period - nominal|"),
    _m("periodic.<name>.period_error", "ns", BOTH, False, "site", _PER, "mean period - nominal"),
    _m("periodic.<name>.period_error_pct", "pct", BOTH, False, "site", _PER, "period error / nominal"),
    _m("periodic.<name>.jitter.std", "ns", BOTH, False, "site", _PER, "population std of the periods"),
    _m("periodic.<name>.drift_ppm", "ppm", BOTH, False, "site", _PER, "slope of activation time"),
    _m("periodic.<name>.missed", "count", BOTH, False, "site", _PER, "activations that never happened"),
    _m("periodic.<name>.nominal", "ns", BOTH, False, "site", _PER, "the nominal period used"),
    _m("fft.duration", "ns", BOTH, True, "site", _WL, "site fft.start to the next fft.stop"),
    _m("fft.sample_to_uart", "ns", BOTH, True, "site", _WL, "last fft.sample to the first fft.uart_send"),
    _m("fft.frames", "count", BOTH, False, "site", _WL, "frames whose FFT completed"),
    _m("fft.frames_lost", "count", BOTH, False, "site", _WL, "frames started, never completed or sent"),
    _m("fft.uart.<name>", "count", (LOGIC,), False, "site", _WL, "UART result lines decoded from the pins"),
    _m("calib.loop", "ns", BOTH, True, "site", _CAL, "the calibration loop between two sites"),
    _m("tm.round", "ns", BOTH, True, "site", _TM, "Thread-Metric: one round of every counting thread"),
    _m("tm.thread<name>.round", "ns", BOTH, True, "site", _TM, "Thread-Metric: one thread's round"),
    _m("tm.isr.interval", "ns", BOTH, True, "site", _TM, "Thread-Metric: N runs of the handler"),
    _m("tm.period", "ns", BOTH, True, "site", _TM, "Thread-Metric: one reporting period"),
    _m("tm.rate", "1/s", BOTH, False, "site", _TM, "Thread-Metric: iterations per second"),
    _m("tm.<name>.rate", "1/s", BOTH, False, "site", _TM, "Thread-Metric: iterations per second"),
    _m("tm.ns_per_iter", "ns", BOTH, False, "site", _TM, "Thread-Metric: ns per iteration"),
    _m("tm.<name>.ns_per_iter", "ns", BOTH, False, "site", _TM, "Thread-Metric: ns per iteration"),
    _m("tm.determinism.<name>", "count", BOTH, False, "site", _TM, "Thread-Metric: determinism check"),
    *(_m(*row) for row in _FG_METRICS),
    _m("rb.<name>", "ns", BOTH, True, "site", "analyzers.metrics.rtosbench",
       "RTOSBench: T1 (tm.count) to the T2 (tm.isr / tm.report) of one time counter (rb.<test>.<name>)"),
    # -- CPU load (trace only) --------------------------------------------------------------------
    _m("cpu.load.core<core>.<context>", "pct", (TRACE,), False, "load", _CPU,
       "share of one core's window charged to a context (multi-core traces)"),
    _m("cpu.load.<context>", "pct", (TRACE,), False, "load", _CPU,
       "share of the window (of all cores) charged to a task, ISR, idle, unknown; total"),
    _m("cpu.busy.core<core>.<context>", "ns", (TRACE,), False, "load", _CPU, "busy time of a context"),
    _m("cpu.busy.<context>", "ns", (TRACE,), False, "load", _CPU, "busy time of a context"),
    # -- kernel metrics: RTOS events alone, any recording (metrics/kernel.py) ---------------------
    _m("task.<task>.exec_time", "ns", (TRACE,), False, "kernel", _KER, "CPU time of an instance"),
    _m("task.<task>.response_time", "ns", (TRACE,), False, "kernel", _KER, "ready to done"),
    _m("task.<task>.ready_latency", "ns", (TRACE,), False, "kernel", _KER, "ready to first switch-in"),
    _m("task.<task>.wait_time", "ns", (TRACE,), False, "kernel", _KER, "response minus execution"),
    _m("task.<task>.preemptions", "count", (TRACE,), False, "kernel", _KER, "switch-ins after the first"),
    _m("task.<task>.period.ready", "ns", (TRACE,), False, "kernel", _KER, "ready to the next ready"),
    _m("task.<task>.period.start", "ns", (TRACE,), False, "kernel", _KER, "start to the next start"),
    _m("task.<task>.separation", "ns", (TRACE,), False, "kernel", _KER, "end to the next ready"),
    _m("task.<task>.load", "pct", (TRACE,), False, "kernel", _KER, "share of a core per window"),
    _m("isr.<isr>.duration", "ns", (TRACE,), False, "kernel", _KER, "entry to its own exit, per IRQ"),
    _m("isr.<isr>.to_task.<task>", "ns", (TRACE,), False, "kernel", _KER,
       "entry to the first switch-in of the task the ISR readied, one series per task"),
    _m("isr.<isr>.rate", "per_s", (TRACE,), False, "kernel", _KER, "entries per second (per tick)"),
    _m("isr.<isr>.nested", "count", (TRACE,), False, "kernel", _KER, "entries while another ISR ran"),
    _m("ctx_switch.count.core<core>", "count", (TRACE,), False, "kernel", _KER, "switches on one core"),
    _m("ctx_switch.count", "count", (TRACE,), False, "kernel", _KER,
       "switches from a known context to a different one (not the first, nor the first after a loss)"),
    _m("ctx_switch.switch_time", "ns", (TRACE,), False, "kernel", _KER, "switch-out to next switch-in"),
    _m("tracex.<name>", "count", (TRACE,), False, "kernel", _KER, "TraceX's own Performance Statistics"),
    # -- user intervals (capture configuration) ---------------------------------------------------
    _m("user.<name>", "ns", BOTH, True, "user", "analyzers.user_config",
       "an interval the user declared between two event selectors"),
)


def lookup(metric_id: str) -> MetricDef | None:
    """The definition of a concrete metric id, or None when no registered id matches."""
    for d in METRICS:
        if d.matches(metric_id):
            return d
    return None


def cross_validated(metric_id: str) -> bool:
    """Whether a metric is compared trace against pins (unknown ids: no)."""
    d = lookup(metric_id)
    return bool(d and d.cross_validated)
