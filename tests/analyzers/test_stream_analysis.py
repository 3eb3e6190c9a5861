"""Any chunking gives the one-chunk result (a whole recording is one chunk of the one engine), with
chunk borders at every kind of event."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzers.metrics import cpu_load as scpu
from analyzers.metrics import tasks as stasks
from analyzers.metrics.align import ts_aligned
from analyzers.run import STREAMED, analyze_chunks
from analyzers.sites import load_sites, site_events
from tests.conftest import CAPTURES, corpus_dir
from trace_parsers import open_trace
from trace_parsers.chunked import slice_trace
from trace_parsers.model import EventKind, Trace, TraceMeta, empty_events

Q = CAPTURES / "qemu_netduinoplus2"
#: (corpus folder or None for the committed captures, file)
RECORDINGS = (
    ("systemview", "harinair_stm32f411_freertos_idlehook_raw.SVdat"),  # STM32 FreeRTOS, ISRs
    ("systemview", "espidf_esp32_heaplog_mcore_espext_2024.svdat"),  # ESP32, two cores
    ("systemview", "lilu_esp32_freertos_corrupt_procpu.SVDat"),  # OVERFLOW gaps
    ("tracex", "tracex-sample_demo_threadx.trx"),  # ThreadX TraceX
    (None, "freertos/isr_latency/ref/trace.SVDat"),  # sites, ISR -> task
    (None, "zephyr/ctx_switch-n2/ref/trace.SVDat"),  # switch-outs, sites
    (None, "threadx/isr_latency/ref/trace.trx"),  # TraceX user events as sites
    (None, "threadx/ctx_switch-n2/ref/trace.trx"),  # yields to the next task context (no switch-ins)
    (None, "freertos/fft_workload/ref/trace.SVDat"),  # FFT workload sites, preemptions
    (None, "threadx/fft_workload-f2/ref/logic.sr"),  # a logic capture: sites and UART text
)
SIZES = (1, 2, 3, 7, 1000)
MODULES = {name: "analyzers.user_config" if name == "user_config" else f"analyzers.metrics.{name}"
           for name in STREAMED}


def _path(folder: str | None, name: str) -> Path:
    return Q / name if folder is None else corpus_dir(folder) / name


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dataclass_fields__"):
        return type(a) is type(b) and all(_same(getattr(a, k), getattr(b, k)) for k in a.__dataclass_fields__)
    return bool(a == b)


def in_memory(trace: Trace, sites: Any, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every analyzer's result of ``trace`` as one chunk."""
    return analyze_chunks(lambda: [trace], sites, options).results


def assert_same_analysis(trace: Trace, size: int, options: dict[str, Any] | None = None) -> None:
    sites = load_sites()
    ref = in_memory(trace, sites, options)
    got = analyze_chunks(lambda: slice_trace(trace, size), sites, options)
    assert got.events == len(trace)
    for name in STREAMED:
        assert got.results[name].table.equals(ref[name].table), name
        assert _same(got.results[name].summary, ref[name].summary), name
    se = site_events(trace, sites)
    assert got.site_events is not None and got.site_events.ts.keys() == se.ts.keys()
    for k in se.ts:
        assert np.array_equal(got.site_events.ts[k], se.ts[k]) and np.array_equal(got.site_events.level[k],
                                                                                    se.level[k])
    assert got.site_events.gaps == se.gaps


@pytest.mark.parametrize("size", [pytest.param(n, marks=pytest.mark.slow) if n < 3 else n for n in SIZES])
@pytest.mark.parametrize("folder,name", RECORDINGS)
def test_chunked_analysis_equals_in_memory(folder: str | None, name: str, size: int) -> None:
    trace = open_trace(_path(folder, name), on_corrupt="skip")
    assert_same_analysis(trace, size)


def test_the_recordings_put_borders_at_every_kind() -> None:
    """With one event per chunk every event starts a chunk: the recordings above must hold every
    kind whose state crosses borders."""
    kinds = set()
    for folder, name in RECORDINGS:
        kinds |= set(np.unique(open_trace(_path(folder, name), on_corrupt="skip").events["kind"]).tolist())
    need = {EventKind.ISR_ENTER, EventKind.ISR_EXIT, EventKind.ISR_TO_SCHED, EventKind.TASK_SWITCH_IN,
            EventKind.TASK_SWITCH_OUT, EventKind.TASK_READY, EventKind.TASK_BLOCK, EventKind.MARK,
            EventKind.USER, EventKind.OVERFLOW, EventKind.IDLE}
    assert need <= kinds, sorted(EventKind(k).name for k in need - kinds)


def test_nothing_listed_twice() -> None:
    from analyzers.run import ANALYZERS

    short = {m.rsplit(".", 1)[1] for m in ANALYZERS}
    assert set(STREAMED) == short and len(STREAMED) == len(short)


def _kernel_trace() -> Trace:
    """Every carried state in a few events: an instance without its ready (recording started while
    it ran) preempted by nested ISRs, an ISR readying another task, a block closing nothing, an
    instance whose first switch-in is chunks before its block, a switch-out, an OVERFLOW."""
    from trace_parsers.model import CtxType, Isr, Task

    K, C = EventKind, CtxType
    rows = [  # ts, kind, ctx_type, ctx_id, target_id
        (0, K.TASK_SWITCH_IN, C.TASK, 1, -1), (2, K.ISR_ENTER, C.ISR, 5, -1), (3, K.ISR_ENTER, C.ISR, 6, -1),
        (4, K.TASK_READY, C.ISR, 6, 2), (5, K.ISR_EXIT, C.ISR, 6, -1), (6, K.ISR_TO_SCHED, C.ISR, 5, -1),
        (7, K.TASK_SWITCH_IN, C.TASK, 2, -1), (8, K.TASK_BLOCK, C.TASK, 2, 2),
        (9, K.TASK_SWITCH_IN, C.TASK, 1, -1), (10, K.TASK_BLOCK, C.TASK, 1, 1), (11, K.IDLE, C.IDLE, -1, -1),
        (15, K.TASK_READY, C.IDLE, -1, 1), (16, K.TASK_SWITCH_IN, C.TASK, 1, -1),
        (20, K.TASK_BLOCK, C.TASK, 1, 1), (21, K.IDLE, C.IDLE, -1, -1), (25, K.TASK_BLOCK, C.IDLE, -1, 1),
        (30, K.TASK_SWITCH_IN, C.TASK, 1, -1), (31, K.TASK_SWITCH_OUT, C.TASK, 1, -1),
        (32, K.TASK_SWITCH_IN, C.TASK, 1, -1), (40, K.TASK_BLOCK, C.TASK, 1, 1),
        (41, K.OVERFLOW, C.NONE, -1, -1), (42, K.TASK_SWITCH_IN, C.TASK, 2, -1),
        (45, K.TASK_BLOCK, C.TASK, 2, 2), (50, K.IDLE, C.IDLE, -1, -1),
    ]
    ev = empty_events(len(rows))
    for col, values in zip(("ts", "kind", "ctx_type", "ctx_id", "target_id"), zip(*rows)):
        ev[col] = values
    ev["ts_raw"] = ev["ts"]
    return Trace(ev, TraceMeta("x", tick_hz=1_000_000_000), tasks=[Task(1, "a"), Task(2, "b")],
                 isrs=[Isr(5, "outer"), Isr(6, "inner")])


def test_every_carried_state() -> None:
    trace = _kernel_trace()
    for size in (1, 2, 3, 5, 100):
        assert_same_analysis(trace, size)


@pytest.mark.parametrize("fault", ["cpu_state", "task_open", "task_after", "isr_pending"])
def test_a_lost_carry_is_caught(monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """The equality check fails when a piece of carried state is dropped at the border."""
    from analyzers.metrics import isr as sisr

    if fault == "cpu_state":
        monkeypatch.setattr(scpu._Core, "_carry", lambda self, state: None)
    elif fault == "isr_pending":
        original_core = sisr.IsrStream._core

        def forgetful(self: Any, c: int, *a: Any) -> Any:
            out = original_core(self, c, *a)
            self.pending[c] = self.pending[c][:, :0]
            return out

        monkeypatch.setattr(sisr.IsrStream, "_core", forgetful)
    else:
        original = stasks.TaskState._carry

        def lossy(self: stasks.TaskState, *a: Any) -> None:
            original(self, *a)
            if fault == "task_open":
                self.open = None
            else:
                self.after = None

        monkeypatch.setattr(stasks.TaskState, "_carry", lossy)
    with pytest.raises(AssertionError):
        assert_same_analysis(_kernel_trace(), 1)


def _log_trace() -> Trace:
    """FFT result lines in LOG rows, spread over the recording."""
    from trace_parsers.model import Marker

    K = EventKind
    sites = {s.name: s.id for s in load_sites()}
    kinds = [K.MARK, K.LOG, K.MARK, K.MARK, K.LOG, K.MARK, K.LOG, K.MARK]
    names = ["fft.sample", None, "fft.start", "fft.stop", None, "fft.uart_send", None, "fft.start"]
    ev = empty_events(len(kinds))
    ev["kind"], ev["ts"] = kinds, np.arange(len(kinds)) * 10
    ev["ts_raw"] = ev["ts"]
    ev["marker"] = [sites[n] if n else 0 for n in names]
    ev["value"] = [0, 0, 0, 0, 1, 0, 2, 0]
    return Trace(ev, TraceMeta("x", tick_hz=1_000_000_000), strings=["peak 3\nbin 7", "", "mag 12"],
                 markers=[Marker(sites[n], n) for n in sorted(set(filter(None, names)))])


def test_log_lines_across_borders(monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzers.metrics import workload as swork

    trace = _log_trace()
    want = ("peak 3", "bin 7", "mag 12")  # the LOG rows' strings, by hand

    def lines(size: int) -> tuple[str, ...]:
        got = analyze_chunks(lambda: slice_trace(trace, size), load_sites())
        return got.results["workload"].summary.uart_lines

    for size in (1, 2, 3, 100):
        assert_same_analysis(trace, size)
        assert lines(size) == want
    original = swork.WorkloadStream.feed

    def forgetful(self: Any, trace: Trace) -> None:
        self.logs = []  # only the last chunk's LOG rows are kept
        original(self, trace)

    monkeypatch.setattr(swork.WorkloadStream, "feed", forgetful)
    assert lines(2) != want


@pytest.mark.parametrize("fault", ["sched_pending", "next_switch_in", "next_context", "isr_exit"])
def test_a_lost_carry_of_the_site_analyzers_is_caught(monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """context_switch / isr_latency: dropping a carried state at the border breaks the equality."""
    from analyzers.metrics import context_switch as ctxswitch
    from analyzers.metrics import isr_latency as isrlat
    from analyzers.metrics import sched

    if fault == "sched_pending":
        orig = sched.CausedSwitchIn.feed

        def feed(self: Any, ev: Any, row0: int) -> None:
            orig(self, ev, row0)
            self.pending = {}

        monkeypatch.setattr(sched.CausedSwitchIn, "feed", feed)
        name = "freertos/isr_latency/ref/trace.SVDat"
    elif fault == "isr_exit":  # the ISR entries isr_latency reads (the kernel metrics' IsrStream)
        orig_i = isrlat.IsrStream.feed

        def feed_i(self: Any, *a: Any) -> None:
            orig_i(self, *a)
            self.pending = {}

        monkeypatch.setattr(isrlat.IsrStream, "feed", feed_i)
        name = "freertos/isr_latency/ref/trace.SVDat"
    else:
        which = "next_sw" if fault == "next_switch_in" else "next_ctx"
        orig_c = ctxswitch.ContextSwitchStream.feed

        def feed_c(self: Any, trace: Trace, *a: Any) -> None:
            orig_c(self, trace, *a)
            getattr(self, which).pending = []

        monkeypatch.setattr(ctxswitch.ContextSwitchStream, "feed", feed_c)
        name = ("zephyr/ctx_switch-n2/ref/trace.SVDat" if fault == "next_switch_in"
                else "threadx/ctx_switch-n2/ref/trace.trx")
    trace = open_trace(Q / name)
    with pytest.raises(AssertionError):
        assert_same_analysis(trace, 3)


def _user_trace() -> Trace:
    """Marks 7 -> 8 (by number and by marker name), user events 0x9001 -> 0x9002, and OVERFLOW
    rows: one first in the recording, one first in a chunk of 1 (its gap starts at the previous
    chunk's last row, just after an interval's end: losing that row drops the interval)."""
    from trace_parsers.model import Marker

    K = EventKind
    rows = [(0, K.OVERFLOW, 0, 0), (1, K.MARK, 7, 0), (2, K.IDLE, 0, 0), (3, K.MARK, 8, 0),
            (4, K.USER, 0, 0x9001), (5, K.USER, 0, 0x9002), (6, K.MARK, 7, 0), (7, K.MARK, 8, 0),
            (8, K.IDLE, 0, 0), (9, K.OVERFLOW, 0, 0), (10, K.MARK_START, 7, 0), (11, K.MARK, 7, 0),
            (12, K.MARK_STOP, 7, 0), (13, K.OVERFLOW, 0, 0), (14, K.MARK, 8, 0), (15, K.IDLE, 0, 0)]
    ev = empty_events(len(rows))
    for col, values in zip(("ts", "kind", "marker", "src_id"), zip(*rows)):
        ev[col] = values
    ev["ts_raw"] = ev["ts"]
    return Trace(ev, TraceMeta("x", tick_hz=1_000_000_000), markers=[Marker(7, "go"), Marker(8, "done")])


USER = {"_user_config": {"interval": [
    {"name": "marks", "start": "mark:7", "end": "mark:8"},
    {"name": "named", "start": "marker:go", "end": "marker:done"},
    {"name": "users", "start": "user:36865", "end": "user:36866"},
    {"name": "span", "start": "mark_start:7", "end": "mark_stop:7"}]}}


def test_user_intervals_across_borders(monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzers.metrics import user as suser

    trace = _user_trace()
    ref = in_memory(trace, load_sites(), USER)["user_config"]
    assert ref.table.num_rows == 5 and ref.summary.excluded == 3  # intervals, some across a gap
    for size in (1, 2, 3, 7, 100):
        assert_same_analysis(trace, size, USER)
    original = suser.UserStream.feed

    def forgetful(self: Any, trace: Trace) -> None:
        original(self, trace)
        self.last_row = None  # the row before an OVERFLOW at a border is lost

    monkeypatch.setattr(suser.UserStream, "feed", forgetful)
    with pytest.raises(AssertionError):
        assert_same_analysis(trace, 1, USER)


def test_user_task_selectors_over_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Task and ISR selectors (the chunked path refused them): the scheduling rows they read are
    kept, so any chunking gives the whole trace's intervals; without them it would not."""
    from analyzers.metrics import user as suser
    from trace_parsers.model import Isr, Task

    K = EventKind
    rows = [(0, K.TASK_SWITCH_IN, 1, 0), (1, K.MARK, 0, 8), (2, K.IDLE, 0, 0), (3, K.TASK_SWITCH_IN, 1, 0),
            (4, K.ISR_ENTER, 5, 0), (5, K.ISR_EXIT, 0, 0), (6, K.MARK, 0, 8), (7, K.IDLE, 0, 0),
            (8, K.OVERFLOW, 0, 0), (9, K.TASK_SWITCH_IN, 1, 0), (10, K.ISR_ENTER, 5, 0),
            (11, K.ISR_EXIT, 0, 0),
            (12, K.MARK, 0, 8), (13, K.IDLE, 0, 0), (14, K.MARK, 0, 8)]
    ev = empty_events(len(rows))
    for col, values in zip(("ts", "kind", "ctx_id", "marker"), zip(*rows)):
        ev[col] = values
    ev["ts_raw"] = ev["ts"]
    trace = Trace(ev, TraceMeta("x", tick_hz=1_000_000_000), tasks=[Task(1, "a")], isrs=[Isr(5, "tick")])
    opts = {"_user_config": {"interval": [{"name": "t", "start": "task:a:in", "end": "mark:8"},
                                          {"name": "o", "start": "task:a:out", "end": "mark:8"},
                                          {"name": "i", "start": "isr:tick:exit", "end": "mark:8"}]}}
    ref = in_memory(trace, load_sites(), opts)["user_config"]
    assert ref.table.num_rows >= 4
    for size in (1, 3, 5, 100):
        assert_same_analysis(trace, size, opts)
    monkeypatch.setattr(suser, "_SCHED_KINDS", ())  # the scheduling rows not kept: intervals lost
    got = analyze_chunks(lambda: slice_trace(trace, 5), load_sites(), opts).results["user_config"]
    assert not got.table.equals(ref.table)


def _tie_trace() -> Trace:
    """A task readied and blocked at the same time, the block first in the file."""
    from trace_parsers.model import Task

    K = EventKind
    ev = empty_events(6)
    ev["kind"] = [K.TASK_SWITCH_IN, K.TASK_BLOCK, K.TASK_READY, K.TASK_SWITCH_IN, K.TASK_BLOCK, K.IDLE]
    ev["ts"] = [0, 10, 10, 12, 20, 30]
    ev["ts_raw"] = ev["ts"]
    ev["ctx_id"] = [1, 1, -1, 1, 1, -1]
    ev["target_id"] = [-1, 1, 1, -1, 1, -1]
    ev["ctx_type"] = 1
    return Trace(ev, TraceMeta("x", tick_hz=1_000_000_000), tasks=[Task(1, "t")])


def test_ties_across_a_border(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-memory instances order a ready before a block at the same time; a border between
    them must not change that: chunks are re-cut between distinct timestamps."""
    trace = _tie_trace()
    for size in (1, 2, 3):
        assert_same_analysis(trace, size)
    chunks = [set(c.events["ts"].tolist()) for c in ts_aligned(slice_trace(trace, 2))]
    assert all(not (a & b) for i, a in enumerate(chunks) for b in chunks[i + 1:])
    assert sum(len(c) for c in chunks) == 5
    monkeypatch.setattr("analyzers.run.ts_aligned", lambda chunks: chunks)
    with pytest.raises(AssertionError):
        assert_same_analysis(trace, 2)


def test_docstring_example() -> None:
    import doctest

    from analyzers.metrics import align

    res = doctest.testmod(align)
    assert res.attempted > 0 and res.failed == 0


def test_tasks_sharing_a_name_are_measured_each_and_joined() -> None:
    """Two tasks of one name (the chunked path refused them; in memory their running time was
    pooled): each instance is measured on its own task's running time, and the series of both
    are joined under the name, in time order: the series of the same trace with distinct names."""
    from trace_parsers.model import Task

    tr = _kernel_trace()
    same = Trace(tr.events, tr.meta, tasks=[Task(1, "a"), Task(2, "a")], isrs=tr.isrs)
    apart = Trace(tr.events, tr.meta, tasks=[Task(1, "a"), Task(2, "b")], isrs=tr.isrs)
    sep = analyze_chunks(lambda: [apart], load_sites()).results["kernel"].table.to_pandas()
    for size in (1, 5, 1000):
        got = analyze_chunks(lambda s=size: slice_trace(same, s), load_sites()).results["kernel"]
        tab = got.table.to_pandas()
        for suffix in ("exec_time", "response_time", "preemptions"):
            want = sep[sep["metric"].isin([f"task.a.{suffix}", f"task.b.{suffix}"])]
            want = sorted(zip(want["start_ts"], want["end_ts"], want["value"]))
            mine = tab[tab["metric"] == f"task.a.{suffix}"]
            assert sorted(zip(mine["start_ts"], mine["end_ts"], mine["value"])) == want, (size, suffix)
            assert got.summary.stats[f"task.a.{suffix}"].n == len(want) > 0


@pytest.mark.parametrize("folder,name", [RECORDINGS[1], RECORDINGS[4]])
def test_through_the_format_chunk_reader(folder: str | None, name: str) -> None:
    """The same equality through ``iter_trace_chunks`` (the format's own chunk reader where one
    exists, the slicing fallback elsewhere)."""
    from trace_parsers.chunked import iter_trace_chunks

    path = _path(folder, name)
    trace = open_trace(path)
    sites = load_sites()
    ref = in_memory(trace, sites)
    got = analyze_chunks(lambda: iter_trace_chunks(path, chunk_events=7), sites)
    for n in STREAMED:
        assert got.results[n].table.equals(ref[n].table) and _same(got.results[n].summary, ref[n].summary), n


def _same_source_result(a: Any, b: Any) -> None:
    assert a.source == b.source and a.table.equals(b.table)
    for k in ("stats", "units", "scalars", "drop_log", "summaries", "excluded", "unmatched"):
        assert _same(getattr(a, k), getattr(b, k)), k


@pytest.mark.parametrize("name", ["threadx/ctx_switch-n2/ref/trace.trx",
                                  "freertos/fft_workload/ref/trace.SVDat",
                                  "freertos/isr_latency/ref/trace.SVDat",
                                  "threadx/fft_workload-f2/ref/logic.sr"])
def test_run_analyzers_chunked_equals_run_analyzers(name: str) -> None:
    """The whole ``SourceResult`` of ``analyze`` (every analyzer stacked, with the capture's own
    run.json options and sites), a TraceX trace without a tick rate (times in ticks) included."""
    import json

    from analyzers.campaign.decode import _open
    from analyzers.run import run_analyzers, run_analyzers_chunked

    path = Q / name
    run = json.loads((path.parent / "run.json").read_text())
    sites = load_sites(run)
    options = {**(run.get("options") or {}), "_uart_baud": 115200}
    if (path.parent / "uart.log").is_file():
        options["_uart_reference"] = (path.parent / "uart.log").read_text(encoding="latin-1")
    trace = _open(path)  # as analyze decodes it (TraceX: switch-ins derived)
    ref = run_analyzers(trace, sites, options)
    for size in (7, 1000):
        got, _ = run_analyzers_chunked(lambda n=size: slice_trace(trace, n), sites, options)
        _same_source_result(got, ref)
    if name.endswith(".trx"):
        assert "ticks" in set(ref.units.values())


PINS = {"_user_config": {
    "interval": [{"name": "sampled", "start": "mark:40", "end": "mark:41"}],
    "pin": [{"channel": "fft.sample", "selector": "mark:40", "edge": "rising"},
            {"channel": "2", "selector": "mark:41", "edge": "falling"}]}}


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_user_intervals_on_pins_across_borders(size: int) -> None:
    """A logic capture's user intervals (pins mapped to selectors) read in chunks: every edge of
    the capture is kept for them, and they come out as in memory."""
    trace = open_trace(_path(*RECORDINGS[9]), on_corrupt="skip")
    ref = in_memory(trace, load_sites(), PINS)["user_config"]
    assert ref.table.num_rows == 256
    assert_same_analysis(trace, size, PINS)
