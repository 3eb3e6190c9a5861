"""Synthetic runs with known truth: site events rendered as a trace and as a logic capture.

Used by the tests and the benchmark. A *scenario* is the true timeline of one run (site hits and
kernel events, in true ns); :func:`to_trace` renders it as a trace (tick quantisation, per-site
instrumentation offsets, optional OVERFLOW gaps) and :func:`to_capture` as a logic capture
(analyzer offset, drift in ppm, sample quantisation, jitter, optional UART text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trace_parsers.model import (
    VALUE_NULL,
    Channel,
    CtxType,
    EventKind,
    Isr,
    Marker,
    Task,
    Trace,
    TraceMeta,
    empty_events,
    fill_ts,
)

from .sites import DEFAULT_SITES, Site


@dataclass
class Scenario:
    """True timeline: ``marks`` = (ts_ns, site name); ``kernel`` = (ts_ns, kind, ctx_type, ctx_id)."""

    app: str
    marks: list[tuple[int, str]] = field(default_factory=list)
    kernel: list[tuple[int, int, int, int]] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    isrs: list[Isr] = field(default_factory=list)
    truth: dict[str, Any] = field(default_factory=dict)
    uart_text: str = ""
    options: dict[str, Any] = field(default_factory=dict)


def ctx_switch(
    n: int = 200,
    switch_ns: int = 128,
    gap_ns: int = 2000,
    kernel_ns: int = 60,
    n_tasks: int = 2,
    seed: int = 0,
    spread_ns: int = 0,
) -> Scenario:
    """Tasks yielding in turn: yield site, kernel switch-in after ``kernel_ns``, switch_in site
    after ``switch_ns`` (+ uniform ``spread_ns`` to vary instances)."""
    rng = np.random.default_rng(seed)
    sc = Scenario(
        "ctx_switch", tasks=[Task(i, f"T{i}", 5) for i in range(n_tasks)], options={"CT_NTASKS": n_tasks}
    )
    t = 10_000
    sw = []
    for k in range(n):
        d = switch_ns + (int(rng.integers(0, spread_ns + 1)) if spread_ns else 0)
        sc.marks.append((t, "ctx.yield"))
        sc.kernel.append((t + kernel_ns, EventKind.TASK_SWITCH_IN, CtxType.TASK, (k + 1) % n_tasks))
        sc.marks.append((t + d, "ctx.switch_in"))
        sw.append(d)
        t += d + gap_ns + int(rng.integers(0, 500))
    sc.truth = {
        "ctx_switch.yield": np.array(sw, dtype=np.float64),
        "ctx_switch.yield.to_switch_in": np.full(n, kernel_ns, dtype=np.float64),
    }
    return sc


def periodic(
    n: int = 200,
    period_ns: int = 1_000_000,
    jitter_ns: int = 0,
    missed: Sequence[int] = (),
    drift_ppm: float = 0.0,
    seed: int = 0,
) -> Scenario:
    """A periodic task with activation ``k`` at ``k * period * (1 + drift) + U(-j, j)``; indices in
    ``missed`` never happen."""
    rng = np.random.default_rng(seed)
    sc = Scenario("periodic", options={"CT_PERIOD_FAST_NS": period_ns})
    t = []
    for k in range(n):
        if k in missed:
            continue
        j = int(rng.integers(-jitter_ns, jitter_ns + 1)) if jitter_ns else 0
        t.append(50_000 + int(round(k * period_ns * (1 + drift_ppm * 1e-6))) + j)
    sc.marks = [(x, "periodic.fast") for x in t]
    sc.truth = {"activations": np.array(t, dtype=np.int64), "nominal": period_ns, "missed": len(missed)}
    return sc


def isr(
    n: int = 200,
    latency_ns: int = 304,
    duration_ns: int = 150,
    irq: int = 50,
    period_ns: int = 500_000,
    seed: int = 0,
    spread_ns: int = 0,
) -> Scenario:
    """A timer ISR that wakes a task: isr.enter site in the ISR, task_wake site in the task."""
    rng = np.random.default_rng(seed)
    sc = Scenario(
        "isr_latency",
        tasks=[Task(0, "worker", 3), Task(1, "IDLE", 0)],
        isrs=[Isr(irq, "TIM5")],
        options={"CT_TEST_IRQ": irq},
    )
    lat = []
    for k in range(n):
        t = 20_000 + k * period_ns
        d = latency_ns + (int(rng.integers(0, spread_ns + 1)) if spread_ns else 0)
        sc.kernel.append((t - 20, EventKind.ISR_ENTER, CtxType.ISR, irq))
        sc.marks.append((t, "isr.enter"))
        sc.kernel.append((t - 20 + duration_ns, EventKind.ISR_TO_SCHED, CtxType.ISR, irq))
        sc.kernel.append((t + d - 30, EventKind.TASK_SWITCH_IN, CtxType.TASK, 0))
        sc.marks.append((t + d, "isr.task_wake"))
        sc.kernel.append((t + d + 1000, EventKind.TASK_SWITCH_IN, CtxType.TASK, 1))
        lat.append(d)
    sc.truth = {"isr.to_task.latency": np.array(lat, dtype=np.float64), "isr.duration": duration_ns}
    return sc


def fft(
    n: int = 50,
    fft_ns: int = 35_350,
    uart_ns: int = 80_000,
    frame_ns: int = 2_000_000,
    lost: Sequence[int] = (),
    seed: int = 0,
    uart_lines: bool = True,
) -> Scenario:
    """FFT frames: samples, FFT start/stop, UART send; frames in ``lost`` never get sent."""
    sc = Scenario("fft_workload", tasks=[Task(0, "adc", 4), Task(1, "uart", 3)])
    lines = []
    for k in range(n):
        t = 100_000 + k * frame_ns
        sc.marks.append((t, "fft.sample"))
        sc.marks.append((t + 5_000, "fft.start"))
        sc.marks.append((t + 5_000 + fft_ns, "fft.stop"))
        if k not in lost:
            sc.marks.append((t + 5_000 + fft_ns + uart_ns, "fft.uart_send"))
            lines.append(f"fft frame={k} bin={20 + 9 * (k % 7)}")
    sc.marks.sort()
    sc.uart_text = "".join(ln + "\r\n" for ln in lines) if uart_lines else ""
    sc.truth = {
        "fft.duration": float(fft_ns),
        "fft.sample_to_uart": float(5_000 + fft_ns + uart_ns),
        "frames": n,
        "lost": len(lost),
    }
    return sc


def _site_ids(sites: Sequence[Site]) -> dict[str, int]:
    return {s.name: s.id for s in sites}


def to_trace(
    sc: Scenario,
    *,
    sites: Sequence[Site] = DEFAULT_SITES,
    tick_hz: int = 1_000_000_000,
    origin_ns: int = 0,
    site_offset_ns: dict[str, int] | None = None,
    overflow_after: Sequence[int] = (),
    lose: int = 10,
    fmt: str = "synthetic",
) -> Trace:
    """Render as a trace: ``ts_raw = floor((t - origin + site offset) * tick_hz / 1e9)``.

    ``overflow_after``: indices into the merged event list after which ``lose`` events are dropped
    and an OVERFLOW row is inserted (like a SystemView OVERFLOW packet).
    """
    ids = _site_ids(sites)
    off = site_offset_ns or {}
    level = {s: 0 for s in ids}
    rows: list[tuple[int, int, int, int, int, int]] = []  # t, kind, ctx_type, ctx_id, marker, value
    for t, name in sc.marks:
        level[name] ^= 1
        rows.append((t + off.get(name, 0), EventKind.MARK, CtxType.TASK, 0, ids[name], level[name]))
    for t, kind, ct, cid in sc.kernel:
        rows.append((t, int(kind), int(ct), cid, 0, VALUE_NULL))
    rows.sort(key=lambda r: r[0])
    if overflow_after:
        kept: list[tuple[int, int, int, int, int, int]] = []
        drop_until = -1
        for i, r in enumerate(rows):
            if i <= drop_until:
                continue
            kept.append(r)
            if i in overflow_after:
                drop_until = i + lose
                if drop_until + 1 < len(rows):
                    kept.append((rows[drop_until + 1][0] - 1, EventKind.OVERFLOW, CtxType.NONE, -1, 0, lose))
        rows = kept
    ev = empty_events(len(rows))
    rel = np.array([r[0] - origin_ns for r in rows], dtype=np.int64)
    if rel.size and rel.min() < 0:
        raise ValueError("origin_ns after the first event")
    if rel.size:
        ev["ts_raw"] = (rel.astype(object) * tick_hz // 1_000_000_000).astype(np.uint64)
    ev["kind"] = [r[1] for r in rows]
    ev["ctx_type"] = [r[2] for r in rows]
    ev["ctx_id"] = [r[3] for r in rows]
    ev["marker"] = [r[4] for r in rows]
    ev["value"] = [r[5] for r in rows]
    ev["src_offset"] = np.arange(len(rows), dtype=np.uint64) * 8
    fill_ts(ev, tick_hz)
    meta = TraceMeta(source_format=fmt, tick_hz=tick_hz, clock_domain="target_timer", app=sc.app)
    return Trace(ev, meta, tasks=sc.tasks, isrs=sc.isrs, markers=[Marker(s.id, s.name) for s in sites])


def uart_edges(text: str, t0: int, baud: int = 115200, gap_bits: int = 2) -> list[tuple[int, int]]:
    """(t_ns, new level) edges of 8N1 UART frames for ``text`` starting at ``t0``."""
    bit = 1e9 / baud
    edges: list[tuple[int, int]] = []
    level = 1
    t = float(t0)
    for ch in text.encode("latin-1"):
        bits = [0] + [(ch >> b) & 1 for b in range(8)] + [1]
        for k, b in enumerate(bits):
            if b != level:
                edges.append((int(round(t + k * bit)), b))
                level = b
        t += (10 + gap_bits) * bit
    return edges


def to_capture(
    sc: Scenario,
    *,
    sites: Sequence[Site] = DEFAULT_SITES,
    samplerate: int = 1_000_000_000,
    offset_ns: int = 19_057,
    ppm: float = 0.0,
    jitter_ns: int = 0,
    seed: int = 0,
    drop_edges: dict[str, Sequence[int]] | None = None,
    uart_t0: int | None = None,
    baud: int = 115200,
) -> Trace:
    """Render as a logic capture: one channel per site, toggling at every hit, timestamps
    ``offset + t·(1 + ppm) + jitter`` quantised down to the sample grid."""
    rng = np.random.default_rng(seed)
    names = [s.name for s in sites if any(m[1] == s.name for m in sc.marks)]
    chan = {n: i for i, n in enumerate(names)}
    channels = [Channel(i, n, 0) for n, i in chan.items()]
    rows: list[tuple[int, int, int]] = []  # t, channel, new level
    level = {n: 0 for n in names}
    count = {n: 0 for n in names}
    drop = {k: set(v) for k, v in (drop_edges or {}).items()}
    for t, name in sc.marks:
        level[name] ^= 1
        k = count[name]
        count[name] += 1
        if k in drop.get(name, ()):
            level[name] ^= 1  # the edge never happened: the pin did not toggle
            continue
        rows.append((t, chan[name], level[name]))
    if sc.uart_text:
        ui = len(channels)
        channels.append(Channel(ui, "uart.tx", 1))
        start = uart_t0 if uart_t0 is not None else (max(t for t, _ in sc.marks) + 10_000 if sc.marks else 0)
        rows += [(t, ui, lv) for t, lv in uart_edges(sc.uart_text, start, baud)]
    rows.sort(key=lambda r: r[0])
    t_true = np.array([r[0] for r in rows], dtype=np.float64)
    t_la = offset_ns + t_true * (1.0 + ppm * 1e-6)
    if jitter_ns:
        t_la += rng.uniform(-jitter_ns, jitter_ns, t_la.size)
    sample = np.floor(t_la * samplerate / 1e9).astype(np.int64)
    order = np.argsort(sample, kind="stable")
    ev = empty_events(len(rows))
    ev["ts_raw"] = sample[order].astype(np.uint64)
    lv = np.array([r[2] for r in rows], dtype=np.int64)[order]
    ev["kind"] = np.where(lv == 1, EventKind.EDGE_RISE, EventKind.EDGE_FALL)
    ev["marker"] = np.array([r[1] for r in rows], dtype=np.uint32)[order]
    ev["value"] = lv
    ev["src_offset"] = ev["ts_raw"]
    ev["ctx_type"] = CtxType.NONE
    fill_ts(ev, samplerate)
    meta = TraceMeta(
        source_format="synthetic_logic", tick_hz=samplerate, clock_domain="la_samples", app=sc.app,
        source_kind="logic",
    )
    return Trace(ev, meta, channels=channels)


def write_capture_folder(
    folder: Path,
    sc: Scenario,
    *,
    rtos: str = "freertos",
    board: str = "qemu_netduinoplus2",
    trace: Trace | None = None,
    capture: Trace | None = None,
    run_id: str = "r1",
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a capture folder (``run.json`` + ``*.ctev.parquet`` sources) for batch tests."""
    from ._io import save_trace

    folder.mkdir(parents=True, exist_ok=True)
    run: dict[str, Any] = {
        "schema": 1,
        "board": board,
        "rtos": rtos,
        "rtos_version": "synthetic",
        "app": sc.app,
        "options": dict(sc.options),
        "firmware": {"git_rev": "synthetic", "elf_sha256": "", "config": "synthetic"},
        "sites": [{"id": s.id, "name": s.name, "pin": s.pin, "channel": s.channel} for s in DEFAULT_SITES],
        "status": "ok",
        "run_id": run_id,
        "logic": [],
    }
    if trace is not None:
        save_trace(trace, folder / "trace.ctev.parquet")
        run["trace"] = {"file": "trace.ctev.parquet", "format": "ctev", "tick_hz": trace.meta.tick_hz}
    if capture is not None:
        save_trace(capture, folder / "logic.ctev.parquet")
        run["logic"] = [
            {
                "file": "logic.ctev.parquet",
                "format": "ctev",
                "profile": {"name": "ideal", "samplerate": capture.meta.tick_hz},
            }
        ]
    if sc.uart_text:
        (folder / "uart.log").write_text(sc.uart_text)
        run["uart"] = {"file": "uart.log", "baud": 115200, "channel": "uart.tx"}
    run.update(extra or {})
    (folder / "run.json").write_text(json.dumps(run, indent=1))
    return folder
