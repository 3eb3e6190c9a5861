"""The ThreadX port on QEMU netduinoplus2: runs to the sentinel, is deterministic, and its TraceX buffer
(trace.trx, written by semihosting) is the RAM image the project's reader decodes, with one user event
per site edge at a constant per-site offset from the pin edge the virtual logic analyzer records.

The fast part builds one image (ctx_switch, ~10 s with the ThreadX library); the slow part builds every
app, the untraced variants and the overflow case. Skips without ThreadX sources (see _build.py)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.firmware.threadx._build import FW, build, infos, need_tool, run, threadx_source
from trace_parsers import open_trace
from trace_parsers.model import EventKind

sys.path.insert(0, str(FW / "tools"))
from vla.edgelog import gpio_levels, read_edge_log  # noqa: E402
from vla.sites import read_sites  # noqa: E402

pytestmark = pytest.mark.qemu
SITES = {s.id: s for s in read_sites()}
TRX_MAGIC_LE = b"BTXT"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    threadx_source()  # skip before building anything when there is no ThreadX to test
    gcc = need_tool(os.environ.get("CC", "gcc"))
    out = tmp_path_factory.mktemp("vla") / "vla.so"
    subprocess.run(
        [
            gcc,
            "-O2",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-o",
            str(out),
            str(FW / "tools" / "vla" / "vla.c"),
        ],
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def ctx2(tmp_path_factory, plugin):
    """ctx_switch, 2 tasks, traced: built once, run twice (the second run with the VLA plugin)."""
    d = tmp_path_factory.mktemp("tx_ctx2")
    elf = build(d / "build", "ctx_switch")
    return elf, run(elf, d / "run1"), run(elf, d / "run2", plugin=plugin), d


def header(trx: bytes) -> dict[str, int]:
    names = [
        "id",
        "mask",
        "base",
        "reg_start",
        "res1",
        "name_size",
        "reg_end",
        "buf_start",
        "buf_end",
        "current",
        "res2",
        "res3",
        "res4",
    ]
    return dict(zip(names, struct.unpack_from("<4IHH7I", trx, 0)))


def test_ctx_switch_runs_to_sentinel(ctx2):
    _, r, _, _ = ctx2
    assert r.rc == 0, r.text
    assert r.console.done == (1, 0) and r.console.fails == []
    res = r.console.results["ctx_switch.yield"]
    assert res.n == 2 * 200 - 1 and res.ts_hz == 1_000_000_000
    assert "rtos=threadx rtos_version=6.4.2" in r.console.config
    tr = r.console.trace
    assert tr["file"] == "trace.trx" and tr["dropped"] == "0" and int(tr["events"]) > 0
    info = infos(r.text)
    assert info["trace.wraps"] == 0 and int(tr["bytes"]) == info["trace.buffer_bytes"]


def test_trace_file_is_the_ram_image(ctx2):
    """Control header as tx_trace_enable wrote it (tracex.md §1), sized as the console reported."""
    _, r, _, _ = ctx2
    trx = r.trace
    assert trx is not None and len(trx) == int(r.console.trace["bytes"])
    h = header(trx)
    assert trx[:4] == TRX_MAGIC_LE and h["mask"] == 0xFFFFFFFF
    assert 0x20000000 <= h["base"] and h["base"] + len(trx) <= 0x20030000  # QEMU board RAM (192 KB)
    assert h["reg_start"] == h["base"] + 48 and h["name_size"] == 32
    assert h["buf_start"] == h["reg_end"] and (h["buf_end"] - h["buf_start"]) % 32 == 0
    assert h["buf_end"] - h["base"] <= len(trx) < h["buf_end"] - h["base"] + 32
    assert (h["res2"], h["res3"], h["res4"]) == (0xAAAAAAAA, 0xBBBBBBBB, 0xCCCCCCCC)
    # not wrapped: the slots before `current` are the events the console counted, the rest unused
    used = (h["current"] - h["buf_start"]) // 32
    assert used == int(r.console.trace["events"])
    assert (h["buf_end"] - h["buf_start"]) // 32 == infos(r.text)["trace.capacity"]
    slot0 = h["buf_start"] - h["base"]
    tp = np.frombuffer(trx, "<u4", count=(h["buf_end"] - h["buf_start"]) // 4, offset=slot0)[0::8]
    assert np.all(tp[:used] != 0) and np.all(tp[used:] == 0)


def test_runs_are_identical(ctx2):
    _, a, b, _ = ctx2
    assert a.text == b.text  # the plugin only observes
    assert a.trace == b.trace


def test_trace_decodes_with_one_mark_per_site_edge(ctx2):
    _, r, _, _ = ctx2
    tr = open_trace(_write(ctx2[3], r.trace))
    ev = tr.events
    assert not [d for d in tr.diagnostics if d.code != "TRX_NO_TICK_HZ"]
    names = {t.name for t in tr.tasks}
    assert {"yield0", "yield1", "coord", "System Timer Thread"} <= names
    marks = ev[ev["kind"] == EventKind.MARK]
    for site in (1, 2):  # ctx.yield, ctx.switch_in: one event per pin toggle, value = new level
        vals = marks["value"][marks["marker"] == site]
        assert len(vals) == 400
        assert vals.tolist() == [1, 0] * 200
    assert np.all(np.diff(ev["ts_raw"].astype(np.int64)) >= 0)


def test_independent_parser_reads_the_same_events(ctx2):
    """PyPI tracex-parser (a separate implementation) sees the same events and registry: same
    (event id, timestamp, info 1) multiset and object names (its order is wrong for buffers that have not
    wrapped, tracex.md §11.1, so order is not compared)."""
    fp = pytest.importorskip("tracex_parser.file_parser")
    _, r, _, _ = ctx2
    path = _write(ctx2[3], r.trace)
    theirs, objs = fp.parse_tracex_buffer(str(path))
    tr = open_trace(path)
    ev = tr.events
    ours = sorted(zip(ev["src_id"].tolist(), ev["ts_raw"].tolist(), ev["value"].tolist()))
    assert sorted((e.id, e.timestamp, e.raw_args[0]) for e in theirs) == ours
    names = {o["thread_reg_entry_obj_name"].decode() for k, o in objs.items() if k}
    assert names == {"System Timer Thread", "coord", "yield0", "yield1", "sem0", "sem1"}
    assert {t.name for t in tr.tasks} <= names


def test_trace_interval_equals_console_metric(ctx2):
    """ctx.yield mark -> next ctx.switch_in mark in the trace == the firmware's own measurement."""
    _, r, _, _ = ctx2
    ev = open_trace(_write(ctx2[3], r.trace)).events
    m = ev[ev["kind"] == EventKind.MARK]
    ts, site = m["ts_raw"].astype(np.int64), m["marker"]
    iy = np.flatnonzero(site == 1)
    nxt = np.searchsorted(np.flatnonzero(site == 2), iy)  # first switch_in after each yield
    sw = np.flatnonzero(site == 2)
    ok = nxt < len(sw)
    d = ts[sw[nxt[ok]]] - ts[iy[ok]]
    # the first yield of each task switches to a task that has not yielded yet: the console skips those
    res = r.console.results["ctx_switch.yield"]
    body = d[1:]
    assert len(body) >= res.n - 1
    assert len(set(body.tolist())) == 1  # icount: every switch costs the same
    assert abs(float(body[0]) - res.mean) <= 0.02 * res.mean  # QEMU run: 184 vs 185.00


def test_marks_match_pin_edges_at_constant_offset(ctx2):
    """Edge k of a site's pin pairs with trace mark k of that site at one constant offset per site
    (qemu-lab.md §6: zero jitter under icount)."""
    _, _, r, _ = ctx2
    assert r.edges is not None
    levels, _ = gpio_levels(read_edge_log(r.edges))
    ev = open_trace(_write(ctx2[3], r.trace)).events
    marks = ev[ev["kind"] == EventKind.MARK]
    for sid in (1, 2):
        edge_ns = levels[SITES[sid].pin].astype(np.int64)
        mts = marks["ts_raw"][marks["marker"] == sid].astype(np.int64)
        assert len(edge_ns) == len(mts) == 400
        off = mts - edge_ns
        assert len(set(off.tolist())) == 1, (sid, sorted(set(off.tolist()))[:5])


def _write(folder: Path, data: bytes) -> Path:
    """A copy of the trace bytes to open with open_trace (the run folders are rewritten by later runs)."""
    p = folder / "decoded.trx"
    if not p.exists() or p.read_bytes() != data:
        p.write_bytes(data)
    return p


# ---- slow: every app, traced and untraced, and the overflow report ---------------------------------

# (app, options) that fit the trace buffer of the 192 KB QEMU board (firmware/README.md, ThreadX), sampled:
# the largest of each app (`make fw-ci` boots every app, the reproduce test reruns ThreadX's isr_latency and
# its negative control bit for bit, the rebuild check rebuilds the committed images)
TRACED = [
    ("ctx_switch", {"CT_NTASKS": 10, "CT_ITERATIONS": 80}),
    ("periodic", {"CT_LOAD": 1}),
    ("fft_workload", {"CT_FFT_FRAMES": 1}),  # with queue-service events
    ("fft_workload", {"CT_TX_TRACE_FILTER": 0x40}),  # all 4 frames, none (`make firmware` builds this one)
]
METRIC = {
    "ctx_switch": "ctx_switch.yield",
    "periodic": "periodic.fast.period",
    "isr_latency": "isr.to_task.latency",
    "fft_workload": "fft.duration",
    "calib": "fft.duration",
}


def _id(p):
    return p if isinstance(p, str) else "-".join(f"{k[3:].lower()}{v}" for k, v in p.items()) or "default"


@pytest.mark.timeout(600)  # two builds or two QEMU runs of up to 1 s of virtual time each
@pytest.mark.slow
@pytest.mark.parametrize(("app", "opts"), TRACED, ids=[f"{a}-{_id(o)}" for a, o in TRACED])
def test_app_traced_runs_deterministically(tmp_path, app, opts):
    elf = build(tmp_path / "b", app, **opts)
    a, b = run(elf, tmp_path / "r1"), run(elf, tmp_path / "r2")
    assert a.rc == 0 and a.console.passed, a.text
    assert a.text == b.text and a.trace == b.trace
    assert a.console.trace["dropped"] == "0" and METRIC[app] in a.console.results
    tr = open_trace(_write(tmp_path, a.trace))
    marks = tr.events[tr.events["kind"] == EventKind.MARK]
    assert len(marks) > 0 and set(np.unique(marks["marker"]).tolist()) <= set(SITES)
    queue_ids = (tr.events["src_id"] >= 60) & (tr.events["src_id"] <= 70)  # TX_TRACE_QUEUE_* (tracex.md §5)
    assert np.any(queue_ids) == (app == "fft_workload" and not opts.get("CT_TX_TRACE_FILTER"))


@pytest.mark.timeout(600)  # two builds or two QEMU runs of up to 1 s of virtual time each
@pytest.mark.slow
@pytest.mark.parametrize("app", ["ctx_switch", "isr_latency"])
def test_traced_and_untraced_costs(tmp_path, app):
    """CT_TRACE=0 builds record nothing and measure less: the trace inserts sit inside the windows."""
    t = run(build(tmp_path / "t", app), tmp_path / "rt")
    u = run(build(tmp_path / "u", app, CT_TRACE=0), tmp_path / "ru")
    assert u.rc == 0 and u.console.passed and u.trace is None and u.console.trace is None, u.text
    assert t.console.done is not None  # fft_workload with 4 frames overflows the buffer: reported, below
    mt, mu = t.console.results[METRIC[app]], u.console.results[METRIC[app]]
    assert mu.mean < mt.mean


@pytest.mark.slow
def test_full_buffer_is_counted_and_reported(tmp_path):
    """A circular wrap is never silent: wraps and lost events on the console, CT_FAIL trace.overflow,
    and the .trx still decodes (ordered from the oldest surviving slot, a TRX_WRAPPED diagnostic)."""
    r = run(build(tmp_path / "b", "ctx_switch", CT_TX_TRACE_BYTES=8192), tmp_path / "r")
    info = infos(r.text)
    cap, wraps = info["trace.capacity"], info["trace.wraps"]
    events, dropped = int(r.console.trace["events"]), int(r.console.trace["dropped"])
    assert info["trace.buffer_bytes"] == 8192 and len(r.trace) == 8192
    assert wraps >= 1 and dropped == events - cap > 0
    assert ("trace.overflow", f"dropped={dropped}") in r.console.fails
    assert r.console.done[1] >= 1
    tr = open_trace(_write(tmp_path, r.trace))
    assert len(tr.events) == cap
    assert "TRX_WRAPPED" in {d.code for d in tr.diagnostics}
    assert np.all(np.diff(tr.events["ts_raw"].astype(np.int64)) >= 0)


@pytest.mark.slow
def test_exec_pin_follows_thread_execution(tmp_path, plugin):
    """CT_TX_EXEC_PIN: the execution-change hooks (PendSV) drop the pin when a thread is switched out and
    raise it when the next one is switched in — both between a ctx.yield edge and the next ctx.switch_in."""
    pin = 15
    r = run(build(tmp_path / "b", "ctx_switch", CT_TX_EXEC_PIN=pin), tmp_path / "r", plugin=plugin)
    assert r.rc == 0 and r.console.passed, r.text
    levels, _ = gpio_levels(read_edge_log(r.edges))
    edges = levels[pin].astype(np.int64)  # initial level 0: even index = rising, odd = falling
    y = levels[SITES[1].pin].astype(np.int64)
    s = levels[SITES[2].pin].astype(np.int64)
    assert len(y) == 400 and len(edges) >= 2 * len(y)
    for ty in y[4:-4]:  # skip the start (coordinator) and the end (workers finishing)
        ts = s[np.searchsorted(s, ty)]
        lo, hi = np.searchsorted(edges, ty), np.searchsorted(edges, ts)
        assert hi - lo == 2, (ty, ts, edges[lo:hi])
        assert lo % 2 == 1  # falling (switched out), then rising (switched in)
