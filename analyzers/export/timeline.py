"""One capture on one time axis: what the exporters (Perfetto, VCD) draw.

The trace's kernel events become intervals (a task running or ready, an ISR active, a marked
interval), instants (markers, user events, data-loss gaps) and the analyzer's metric instances;
every logic channel becomes a list of level changes, mapped onto the trace clock by the fitted
alignment shared by all sites (``ts_trace = (ts_logic - offset) / slope``; no per-site constant, so
an instrumentation bias stays visible). Without a trace, the axis is the
capture's own clock. A window keeps what overlaps it, clipped to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trace_parsers.errors import AnalysisError
from trace_parsers.model import VALUE_NULL, EventKind

K = EventKind


@dataclass
class Interval:
    track: str  #: e.g. "task:worker", "isr:SysTick", "metric:ctx_switch.yield"
    name: str
    start: int
    end: int
    core: int = 0
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Instant:
    track: str
    name: str
    ts: int
    core: int = 0
    value: int | None = None


@dataclass
class Channel:
    """One logic channel: level changes on the export's time axis (``ts`` sorted)."""

    name: str
    initial: int
    ts: np.ndarray
    level: np.ndarray
    site: str = ""


@dataclass
class Timeline:
    cores: list[int] = field(default_factory=list)
    tasks: dict[tuple[int, str], int] = field(default_factory=dict)  #: (core, task) -> tid
    intervals: list[Interval] = field(default_factory=list)
    instants: list[Instant] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    clock: str = "trace"  #: "trace" (pins mapped onto it) or "capture"
    quantum_ns: float = 0.0  #: one trace tick plus one analyzer sample (when both exist)
    notes: list[str] = field(default_factory=list)

    def clip(self, start: int, end: int) -> Timeline:
        """What overlaps ``[start, end]``, clipped to it (levels at ``start`` kept)."""
        if end <= start:
            raise AnalysisError(f"empty window {start}:{end}", code="BAD_WINDOW")
        ivs = [Interval(i.track, i.name, max(i.start, start), min(i.end, end), i.core, i.args)
               for i in self.intervals if i.end >= start and i.start <= end]
        ins = [i for i in self.instants if start <= i.ts <= end]
        chans = []
        for c in self.channels:
            before = np.flatnonzero(c.ts < start)
            init = int(c.level[before[-1]]) if before.size else c.initial
            sel = (c.ts >= start) & (c.ts <= end)
            chans.append(Channel(c.name, init, c.ts[sel], c.level[sel], c.site))
        return Timeline(self.cores, self.tasks, ivs, ins, chans, self.clock, self.quantum_ns,
                        self.notes + [f"window {start}:{end} ns"])


def _name(table: Any, key: int, prefix: str) -> str:
    return table.get(key) or f"{prefix}{key}"


def kernel_intervals(
    trace: Any, sites: Any = ()
) -> tuple[list[Interval], list[Instant], list[int], dict[tuple[int, str], int]]:
    """Task running/ready intervals, ISR activations, marked intervals and instants per core.
    Markers and user events are named after their site (the trace's own marker names first)."""
    from ..sites import TRACEX_USER_BASE

    ev = trace.columns
    tasks = {t.ctx_id: t.name for t in trace.tasks}
    isrs = {i.number: i.name for i in trace.isrs}
    markers = {s.id: s.name for s in sites} | {m.id: m.name for m in trace.markers}
    users = {TRACEX_USER_BASE + s.id: s.name for s in sites}
    end_ts = int(ev["ts"][-1]) if ev.shape[0] else 0
    ivs: list[Interval] = []
    ins: list[Instant] = []
    running: dict[int, tuple[int, int]] = {}  # core -> (task, since)
    ready: dict[int, int] = {}  # task -> since
    isr_stack: dict[int, list[tuple[int, int]]] = {}
    mark_open: dict[tuple[int, int], int] = {}
    cores: set[int] = set()
    tids: dict[tuple[int, str], int] = {}

    def task_iv(core: int, task: int, start: int, stop: int, state: str) -> None:
        name = _name(tasks, task, "task ")
        tids.setdefault((core, name), len(tids) + 1)
        ivs.append(Interval(f"task:{name}", state, start, stop, core))

    def stop_running(core: int, ts: int) -> None:
        if core in running:
            task, since = running.pop(core)
            task_iv(core, task, since, ts, "running")

    cols = (ev["ts"].tolist(), ev["kind"].tolist(), ev["core"].tolist(), ev["ctx_id"].tolist(),
            ev["target_id"].tolist(), ev["marker"].tolist(), ev["src_id"].tolist(), ev["value"].tolist())
    for ts, kind, core, ctx, target, marker, src_id, value in zip(*cols):
        cores.add(core)
        if kind == K.TASK_SWITCH_IN:
            stop_running(core, ts)
            if ctx in ready:
                task_iv(core, ctx, ready.pop(ctx), ts, "ready")
            running[core] = (ctx, ts)
        elif kind in (K.TASK_SWITCH_OUT, K.IDLE):
            stop_running(core, ts)
        elif kind == K.TASK_READY:
            who = target if target >= 0 else ctx
            if who >= 0 and who not in ready and running.get(core, (None,))[0] != who:
                ready[who] = ts
        elif kind == K.TASK_BLOCK:
            who = target if target >= 0 else ctx
            if who in ready:
                task_iv(core, who, ready.pop(who), ts, "ready")
        elif kind == K.ISR_ENTER:
            isr_stack.setdefault(core, []).append((ctx, ts))
        elif kind in (K.ISR_EXIT, K.ISR_TO_SCHED):
            if isr_stack.get(core):
                irq, since = isr_stack[core].pop()
                nm = _name(isrs, irq, "IRQ ")
                ivs.append(Interval(f"isr:{nm}", nm, since, ts, core))
        elif kind == K.MARK_START:
            mark_open[(core, marker)] = ts
        elif kind == K.MARK_STOP and (core, marker) in mark_open:
            nm = _name(markers, marker, "mark ")
            ivs.append(Interval("marks", nm, mark_open.pop((core, marker)), ts, core))
        elif kind == K.MARK:
            ins.append(Instant("marks", _name(markers, marker, "mark "), ts, core,
                               None if value == VALUE_NULL else int(value)))
        elif kind == K.USER:
            site = users.get(src_id)
            ins.append(Instant("marks" if site else "user", site or f"user {src_id}", ts, core,
                               None if value == VALUE_NULL else int(value)))
        elif kind == K.OVERFLOW:
            ins.append(Instant("marks", "OVERFLOW (events lost)", ts, core))
            for c in list(running):
                stop_running(c, ts)
    for c in list(running):
        stop_running(c, end_ts)
    for core, stack in isr_stack.items():
        for irq, since in stack:
            nm = _name(isrs, irq, "IRQ ")
            ivs.append(Interval(f"isr:{nm}", nm, since, end_ts, core))
    return ivs, ins, sorted(cores) or [0], tids


def metric_intervals(table: Any) -> list[Interval]:
    """The analyzer's per-instance table (one source) as intervals on per-metric tracks."""
    if table is None or table.num_rows == 0:
        return []
    cols = ["metric", "instance", "start_ts", "end_ts", "value", "unit"]
    d = table.select(cols).to_pydict()
    return [
        Interval(f"metric:{m}", m, int(s), int(e), 0, {"instance": int(i), "value": float(v), "unit": u})
        for m, i, s, e, v, u in zip(*(d[c] for c in cols))
        if e >= s and u == "ns"
    ]


def channels(capture: Any, align: Any = None, site_of: dict[str, str] | None = None) -> list[Channel]:
    """Every logic channel's edges; mapped onto the trace clock when ``align`` is given."""
    ev = capture.columns
    kind = ev["kind"]
    edge = (kind == K.EDGE_RISE) | (kind == K.EDGE_FALL)
    sub = ev[edge]
    site_of = site_of or {}
    out = []
    for ch in capture.channels:
        sel = sub["marker"] == ch.index
        ts = sub["ts"][sel].astype(np.float64)
        site = site_of.get(ch.name, "")
        if align is not None:  # the shared fit only: a per-site bias must stay visible
            ts = (ts - align.offset_ns) / align.slope
        lvl = (sub["kind"][sel] == K.EDGE_RISE).astype(np.int8)
        init = int(ch.initial_level) if ch.initial_level in (0, 1) else 0
        out.append(Channel(ch.name, init, np.rint(ts).astype(np.int64), lvl, site))
    return out


def build(trace: Any, capture: Any, *, sites: Any = (), options: dict[str, Any] | None = None,
          metrics: bool = True) -> Timeline:
    """The timeline of a trace and/or a logic capture (pins aligned to the trace when both)."""
    from ..run import run_analyzers
    from ..sites import logic_site_events, trace_site_events

    tl = Timeline()
    if trace is not None:
        tl.intervals, tl.instants, tl.cores, tl.tasks = kernel_intervals(trace, sites)
        if metrics:
            tl.intervals += metric_intervals(run_analyzers(trace, sites, dict(options or {})).table)
    if capture is not None:
        align = None
        site_of = {}
        for s in sites:
            for n in (s.channel_name, s.name, s.pin):
                site_of[n] = s.name
        if trace is not None:
            from ..crossval.align import align as fit

            te, le = trace_site_events(trace, sites), logic_site_events(capture, sites)
            if te.empty or le.empty:
                tl.notes.append("pins not aligned: no site seen in both the trace and the capture")
                tl.clock = "trace (pins on their own clock: no common site)"
            else:
                try:
                    align = fit(te, le)
                except AnalysisError as e:  # export anyway, and say the pins are not aligned
                    tl.notes.append(f"pins not aligned ({e}); on their own clock")
                    tl.clock = "trace (pins on their own clock: alignment failed)"
            if align is not None:
                tl.quantum_ns = float(align.quantum_ns)
                tl.notes.append(
                    f"pins mapped by offset {align.offset_ns:.1f} ns, drift {align.drift_ppm:.3f} ppm"
                )
        else:
            tl.clock = "capture"
            if metrics:
                tl.intervals += metric_intervals(run_analyzers(capture, sites, dict(options or {})).table)
        tl.channels = channels(capture, align, site_of)
    return tl


def parse_window(text: str) -> tuple[int, int]:
    """``START:END`` in ns, each optionally with a unit suffix (ns, us, ms, s)."""
    scale = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
    parts = text.split(":")
    if len(parts) != 2:
        raise AnalysisError(f"--window {text!r}: expected START:END", code="BAD_WINDOW")
    out = []
    for p in parts:
        p = p.strip()
        unit = next((u for u in ("ns", "us", "µs", "ms", "s") if p.endswith(u)), "ns")
        num = p[: len(p) - len(unit)] if p.endswith(unit) else p
        try:
            out.append(int(round(float(num) * scale[unit])))
        except ValueError:
            raise AnalysisError(f"--window {text!r}: {p!r} is not a time", code="BAD_WINDOW") from None
    if out[1] <= out[0]:
        raise AnalysisError(f"--window {text!r}: END must be after START", code="BAD_WINDOW")
    return out[0], out[1]


def load(path: Path, *, profile: str | None = None, on_corrupt: str = "raise") -> tuple[Any, Any, Any, dict]:
    """(trace or None, logic capture or None, site table, options) of a capture folder (run.json,
    or the recordings found in it) or of one recording file."""
    from ..campaign.capture import _open
    from ..campaign.plan import plan_capture
    from ..sites import load_sites

    plan = plan_capture(Path(path))
    run = plan["run"]
    trace = capture = None
    if plan["trace"]:
        trace = _open(plan["trace"], tick_hz=plan.get("trace_tick_hz"), on_corrupt=on_corrupt)
    logic = plan["logic"]
    if profile is not None:
        logic = [e for e in logic if e["profile"] == profile]
        if not logic:
            names = ", ".join(e["profile"] for e in plan["logic"]) or "none"
            raise AnalysisError(f"{path}: no logic capture with profile {profile!r} ({names})",
                                code="NO_SUCH_PROFILE")
    if logic:
        e = sorted(logic, key=lambda e: (e["profile"] != "ideal", e["profile"]))[0]
        capture = _open(e["file"], samplerate=e.get("samplerate"), on_corrupt=on_corrupt)
    if trace is None and capture is None:
        raise AnalysisError(f"{path}: no trace and no logic capture found", code="NO_SOURCES")
    return trace, capture, load_sites(run), dict(run.get("options") or {})
