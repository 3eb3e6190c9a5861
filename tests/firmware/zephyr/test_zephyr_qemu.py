"""The Zephyr port on QEMU netduinoplus2 (crosstrace's out-of-tree board ct_netduinoplus2): images run to
the sentinel, deterministically; Zephyr's SystemView stream decodes with the project's reader and its
site marks pair 1:1 with the virtual logic analyzer's pin edges at a constant per-site offset; the CTF
stream (RAM backend) decodes with babeltrace2 against Zephyr's own TSDL metadata, event for event; a
full trace buffer is counted and fails the run; the MPU stack guard costs time.

Fast part: two images (ctx_switch with SystemView, isr_latency with CTF). Slow part: every app, the
overflow cases and the MPU comparison (the STM32F429 Discovery builds: `make fw-ci-zephyr`, warning-free).
Skips without Zephyr sources."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import need_tool
from tests.firmware.zephyr._build import FW, build, build_plugin, run, sv_file, zephyr_ws
from trace_parsers import open_trace
from trace_parsers.model import EventKind

sys.path.insert(0, str(FW / "tools"))
from vla.edgelog import gpio_levels, read_edge_log  # noqa: E402
from vla.sites import read_sites  # noqa: E402

pytestmark = [pytest.mark.qemu, pytest.mark.firmware, pytest.mark.timeout(900)]
SITES = {s.id: s for s in read_sites()}
NAMED = re.compile(r'named_event: \{ name = "(?P<name>[^"]*)", arg0 = (?P<a0>\d+), arg1 = (?P<a1>\d+) \}')
STAMP = re.compile(r"^\[(\d+):(\d+):(\d+)\.(\d{9})\]")


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    zephyr_ws()  # skip before building anything when there is no Zephyr to test
    return build_plugin(tmp_path_factory.mktemp("vla") / "vla.so")


@pytest.fixture(scope="module")
def sv_ctx2(tmp_path_factory, plugin):
    """ctx_switch, 2 tasks, SystemView: built once, run twice (the second run with the VLA plugin)."""
    d = tmp_path_factory.mktemp("z_ctx2")
    elf = build(d / "build", "ctx_switch")
    return run(elf, d / "run1"), run(elf, d / "run2", plugin=plugin), d


@pytest.fixture(scope="module")
def ctf_isr(tmp_path_factory, plugin):
    """isr_latency with CTF (RAM backend), run with the VLA plugin."""
    d = tmp_path_factory.mktemp("z_isr_ctf")
    elf = build(d / "build", "isr_latency", CT_ZEPHYR_TRACE="ctf")
    return run(elf, d / "run", plugin=plugin), d


def babeltrace(stream: bytes, folder: Path) -> list[str]:
    """babeltrace2's text output for a Zephyr CTF stream: Zephyr's metadata + the stream as channel0_0."""
    bt = need_tool("babeltrace2")
    d = folder / "ctf"
    d.mkdir(exist_ok=True)
    (d / "metadata").write_bytes((zephyr_ws() / "zephyr/subsys/tracing/ctf/tsdl/metadata").read_bytes())
    (d / "channel0_0").write_bytes(stream)
    p = subprocess.run([bt, str(d)], capture_output=True, text=True, check=True)
    return p.stdout.splitlines()


def stamp_ns(line: str) -> int:
    h, m, s, ns = STAMP.match(line).groups()
    return ((int(h) * 60 + int(m)) * 60 + int(s)) * 1_000_000_000 + int(ns)


def mark_offsets(edges: Path, sid: int, ts: np.ndarray) -> set[int]:
    levels, _ = gpio_levels(read_edge_log(edges))
    edge_ns = levels[SITES[sid].pin].astype(np.int64)
    assert len(edge_ns) == len(ts), (sid, len(edge_ns), len(ts))
    return set((ts - edge_ns).tolist())


# ---- SystemView --------------------------------------------------------------------------------------


def test_ctx_switch_runs_to_sentinel(sv_ctx2):
    r = sv_ctx2[0]
    assert r.rc == 0, r.text
    assert r.console.done == (1, 0) and r.console.fails == []
    res = r.console.results["ctx_switch.yield"]
    assert res.n == 2 * 200 - 1 and res.ts_hz == 1_000_000_000
    assert "rtos=zephyr rtos_version=4.3.0 board=qemu_netduinoplus2" in r.console.config
    assert "CT_ZEPHYR_TRACE=sysview" in r.console.config and "CT_ZEPHYR_MPU=0" in r.console.config
    tr = r.console.trace
    assert tr["file"] == "trace.SVDat" and tr["dropped"] == "0"
    assert int(tr["bytes"]) == len(r.files["trace.SVDat"]) > 0


def test_runs_are_identical(sv_ctx2):
    a, b, _ = sv_ctx2
    assert a.text == b.text  # the plugin only observes
    assert a.files == b.files


def test_systemview_decodes_tasks_and_marks(sv_ctx2):
    r, _, d = sv_ctx2
    t = open_trace(sv_file(d, r.files["trace.SVDat"]))
    assert {"coord", "yield0", "yield1"} <= {x.name for x in t.tasks}
    ev = t.events
    marks = ev[ev["kind"] == EventKind.MARK]
    for site in (1, 2):  # ctx.yield, ctx.switch_in: one mark per pin toggle, value = new level
        assert marks["value"][marks["marker"] == site].tolist() == [1, 0] * 200
    assert np.all(np.diff(ev["ts_raw"].astype(np.int64)) >= 0)
    assert int(ev["ts_raw"][0]) < 1 << 32  # no wrap: the recorder starts after the timestamp counter


def test_systemview_interval_equals_console_metric(sv_ctx2):
    """ctx.yield mark -> next ctx.switch_in mark in the trace == the firmware's own measurement (2 %)."""
    r, _, d = sv_ctx2
    ev = open_trace(sv_file(d, r.files["trace.SVDat"])).events
    m = ev[ev["kind"] == EventKind.MARK]
    ts, site = m["ts_raw"].astype(np.int64), m["marker"]
    iy, sw = np.flatnonzero(site == 1), np.flatnonzero(site == 2)
    nxt = np.searchsorted(sw, iy)
    ok = nxt < len(sw)
    body = (ts[sw[nxt[ok]]] - ts[iy[ok]])[1:]  # the first yield reaches a task that has not yielded yet
    res = r.console.results["ctx_switch.yield"]
    assert abs(float(np.mean(body)) - res.mean) <= 0.02 * res.mean


def test_systemview_marks_match_pin_edges_at_constant_offset(sv_ctx2):
    _, r, d = sv_ctx2
    assert r.edges is not None
    ev = open_trace(sv_file(d, r.files["trace.SVDat"])).events
    marks = ev[ev["kind"] == EventKind.MARK]
    for sid in (1, 2):
        ts = marks["ts_raw"][marks["marker"] == sid].astype(np.int64)
        assert len(mark_offsets(r.edges, sid, ts)) == 1


# ---- CTF ---------------------------------------------------------------------------------------------


def test_ctf_runs_and_babeltrace_reads_every_event(ctf_isr):
    r, d = ctf_isr
    assert r.rc == 0 and r.console.passed, r.text
    tr = r.console.trace
    data = r.files["trace.ctf"]
    assert tr["file"] == "trace.ctf" and tr["dropped"] == "0" and int(tr["bytes"]) == len(data) > 0
    lines = babeltrace(data, d)
    assert len(lines) == int(tr["events"])
    named = [NAMED.search(ln) for ln in lines]
    enter = [m for m in named if m and m["name"] == "isr.enter"]
    wake = [m for m in named if m and m["name"] == "isr.task_wake"]
    assert len(enter) == len(wake) == 200
    assert [int(m["a0"]) for m in enter] == [5] * 200
    assert [int(m["a1"]) for m in enter] == [1, 0] * 100
    assert sum("isr_enter" in ln for ln in lines) >= 200  # Zephyr's _isr_wrapper records TIM5 too


def test_ctf_marks_match_console_and_pins(ctf_isr):
    """CTF timestamps are Zephyr's (SysTick cycles at 168 MHz in ns): the isr.enter -> isr.task_wake
    interval agrees with the firmware's TIM2 measurement within 2 %, and each site's marks pair with its
    pin edges: the offset drifts by QEMU's SysTick error (a 168,000-count tick lasts 999,999 ns, so
    Zephyr's ns run 1 ppm fast against TIM2) and otherwise stays within the 6 ns cycle quantisation."""
    r, d = ctf_isr
    lines = babeltrace(r.files["trace.ctf"], d)
    ts = {5: [], 6: []}
    for ln in lines:
        m = NAMED.search(ln)
        if m and int(m["a0"]) in ts:
            ts[int(m["a0"])].append(stamp_ns(ln))
    enter, wake = (np.array(ts[k], dtype=np.int64) for k in (5, 6))
    res = r.console.results["isr.to_task.latency"]
    assert abs(float(np.mean(wake - enter)) - res.mean) <= 0.02 * res.mean
    levels, _ = gpio_levels(read_edge_log(r.edges))
    for sid, t in ts.items():
        edge_ns = levels[SITES[sid].pin].astype(np.int64)
        assert len(edge_ns) == len(t) == 200
        off = np.array(t, dtype=np.int64) - edge_ns
        slope, icpt = np.polyfit(edge_ns.astype(float), off.astype(float), 1)
        resid = off - (slope * edge_ns + icpt)
        assert abs(slope) < 2e-6, (sid, slope)  # at most a 2 ppm drift
        assert np.max(np.abs(resid)) < 12, (sid, float(np.max(np.abs(resid))))


# ---- slow: every app, overflow; the MPU comparison from the committed runs ------------------------------

# `make fw-ci-zephyr` (CI) builds every app and boots each to CT_DONE, the committed captures are rebuilt
# (sampled) and one is rerun bit for bit (tests/firmware/test_reproduce_lines.py), and ctx_switch-n2 runs
# twice above: two runs each of the apps no other check reruns stand for every app (~50 s a Zephyr build)
APPS = [("periodic", {"CT_LOAD": 1}), ("fft_workload", {})]
METRIC = {"ctx_switch": "ctx_switch.yield", "periodic": "periodic.fast.period",
          "isr_latency": "isr.to_task.latency", "fft_workload": "fft.duration", "calib": "fft.duration"}


@pytest.mark.slow
@pytest.mark.parametrize(("app", "opts"), APPS, ids=[f"{a}-{o}" for a, o in APPS])
def test_app_runs_deterministically(tmp_path, app, opts):
    elf = build(tmp_path / "b", app, **opts)
    a, b = run(elf, tmp_path / "r1"), run(elf, tmp_path / "r2")
    assert a.rc == 0 and a.console.passed, a.text
    assert a.text == b.text and a.files == b.files
    assert a.console.trace["dropped"] == "0" and METRIC[app] in a.console.results


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "kconfig", "app"), [
    ("ctf", {"CT_ZEPHYR_CTF_BUFFER": 4096}, "ctx_switch"),
    ("sysview", {"CONFIG_SEGGER_SYSVIEW_RTT_BUFFER_SIZE": 256}, "ctx_switch"),
])
def test_full_buffer_is_counted_and_fails_the_run(tmp_path, fmt, kconfig, app):
    """A trace buffer too small for the run: dropped records on the console, CT_FAIL trace.overflow,
    exit status 1; what was kept still decodes."""
    r = run(build(tmp_path / "b", app, CT_ZEPHYR_TRACE=fmt, **kconfig), tmp_path / "r")
    dropped = int(r.console.trace["dropped"])
    assert dropped > 0 and ("trace.overflow", f"dropped={dropped}") in r.console.fails
    assert r.rc == 1 and not r.console.passed
    if fmt == "ctf":
        data = r.files["trace.ctf"]
        assert len(data) <= 4096 and "CT_ZEPHYR_CTF_BUFFER=4096" in r.console.config
        assert "CT_INFO trace.buffer_bytes=4096" in r.text.splitlines()
        assert len(babeltrace(data, tmp_path)) == int(r.console.trace["events"]) - dropped
    else:
        ev = open_trace(sv_file(tmp_path, r.files["trace.SVDat"])).events
        assert len(ev) > 0


@pytest.mark.parametrize(("opts", "said"), [
    ({"CT_ZEPHYR_TRACE": "ctf", "CT_ZEPHYR_CTF_BUFFER": "64k"},
     "Invalid value for CT_ZEPHYR_CTF_BUFFER: '64k'. Allowed values are: a number of bytes"),
    ({"CT_ZEPHYR_CTF_BUFFER": "4096"},
     "CT_ZEPHYR_CTF_BUFFER sizes CTF's RAM buffer: it needs -DCT_ZEPHYR_TRACE=ctf"),
])
def test_a_bad_ctf_buffer_option_is_refused(tmp_path, opts, said):
    """CT_ZEPHYR_CTF_BUFFER takes a byte count, and only for a CTF image: the configure step stops (before
    Zephyr loads) instead of building an image whose recorded option means nothing."""
    need_tool("cmake")
    env = {k: v for k, v in os.environ.items() if k != "BOARD"}
    p = subprocess.run(["cmake", "-S", str(FW / "zephyr"), "-B", str(tmp_path / "b"), "-DAPP=calib",
                        *(f"-D{k}={v}" for k, v in opts.items())], capture_output=True, text=True, env=env)
    assert p.returncode != 0
    assert said in " ".join(p.stderr.split()), p.stderr  # CMake re-wraps the message


GUARDED = (("ctx_switch-n2", "ctx_switch.yield"), ("isr_latency", "isr.to_task.latency"))


def guard_not_costing(gold: Path) -> list[tuple[str, float, float]]:
    """(capture, plain mean, guarded mean) of the committed untraced runs (pins, ideal analyzer) where the
    MPU stack guard does not make the path longer."""
    bad = []
    for folder, metric in GUARDED:
        mean = [json.loads((gold / f"{folder}{kind}" / "ref" / "metrics.json").read_text())
                ["metrics"][f"{metric}|logic|ideal"]["mean"] for kind in ("-untraced", "-mpu-untraced")]
        if not mean[1] > mean[0]:
            bad.append((folder, *mean))
    return bad


def test_mpu_stack_guard_costs_time(tmp_path):
    """The second configuration (CONFIG_HW_STACK_PROTECTION) runs (`make fw-ci-zephyr` boots isr_latency-mpu
    to CT_DONE) and its switch and ISR paths are longer: the committed untraced runs, measured at the pins
    (the same builds the rebuild check reproduces). The check fails on a guarded run no slower than plain."""
    gold = Path(__file__).resolve().parents[2] / "golden" / "qemu_netduinoplus2" / "zephyr"
    assert guard_not_costing(gold) == []
    for folder, _ in GUARDED:  # the guarded runs' results given as the plain ones: caught
        for kind in ("-untraced", "-mpu-untraced"):
            (tmp_path / f"{folder}{kind}" / "ref").mkdir(parents=True)
            src = gold / f"{folder}-untraced" / "ref" / "metrics.json"
            (tmp_path / f"{folder}{kind}" / "ref" / "metrics.json").write_text(src.read_text())
    assert len(guard_not_costing(tmp_path)) == 2


def test_capture_names_the_zephyr_trace_formats():
    """capture.py's Zephyr branch: a .ctf stream is stored as CTF, not mistaken for SystemView."""
    sys.path.insert(0, str(FW / "tools"))
    import capture

    assert capture._trace_format(Path("trace.ctf")) == "ctf"
    assert capture._trace_format(Path("trace.SVDat")) == "systemview"
    assert capture._trace_format(Path("trace.trx")) == "tracex"
