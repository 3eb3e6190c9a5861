"""`crosstrace export --perfetto`: decoded with Perfetto's own protos, trace and pins on one axis."""

from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np
import pytest

from analyzers.cli import main
from analyzers.export import timeline as T

from ...conftest import CAPTURES, IN_CI, corpus_dir

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError:  # pragma: no cover - the dev extra installs it
    if IN_CI:
        raise
    pytest.skip("the Perfetto export needs the 'perfetto' extra", allow_module_level=True)

CTX = CAPTURES / "qemu_netduinoplus2" / "freertos" / "ctx_switch-n2" / "ref"
ISR = CAPTURES / "qemu_netduinoplus2" / "threadx" / "isr_latency" / "ref"


def _decode(path):
    msg = pb.Trace.FromString(path.read_bytes())
    tracks = {p.track_descriptor.uuid: p.track_descriptor
              for p in msg.packet if p.HasField("track_descriptor")}
    events = [(p.timestamp, p.track_event) for p in msg.packet if p.HasField("track_event")]
    return tracks, events


def _name(td):
    return td.thread.thread_name or td.process.process_name or td.name


def _quantum(folder):
    """One trace tick plus one sample of the ideal analyzer, from run.json (ns)."""
    run = json.loads((folder / "run.json").read_text())
    tick = 1e9 / run["trace"]["tick_hz"]
    sr = next(e["profile"]["samplerate"] for e in run["logic"] if e["profile"]["name"] == "ideal")
    return tick + 1e9 / sr


def site_gaps(tracks, events, site):
    """|t_pin - t_trace| for every trace instant of ``site`` against the nearest edge on its channel."""
    inst = np.array([ts for ts, e in events if e.type == e.TYPE_INSTANT and e.name == site], dtype=float)
    chan = [u for u, td in tracks.items() if td.HasField("counter") and td.name.split(" [")[0] == site]
    assert inst.size and len(chan) == 1, (site, inst.size, chan)
    edges = np.array([ts for ts, e in events[1:] if e.type == e.TYPE_COUNTER and e.track_uuid == chan[0]],
                     dtype=float)
    idx = np.clip(np.searchsorted(edges, inst), 1, edges.size - 1)
    return np.minimum(np.abs(edges[idx] - inst), np.abs(edges[idx - 1] - inst))


@pytest.fixture(scope="module")
def ctx_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("pf") / "ctx.pftrace"
    assert main(["export", str(CTX), "--perfetto", str(out)]) == 0
    return out


def test_tracks_tasks_pins_metrics(ctx_export):
    tracks, events = _decode(ctx_export)
    names = {_name(td) for td in tracks.values()}
    assert {"core 0", "coord", "yield0", "yield1", "metrics", "ctx_switch.yield"} <= names
    threads = {td.thread.thread_name for td in tracks.values() if td.HasField("thread")}
    assert {"yield0", "yield1"} <= threads
    counters = {td.name.split(" [")[0] for td in tracks.values() if td.HasField("counter")}
    assert {"ctx.yield", "ctx.switch_in", "uart.tx"} <= counters  # every logic channel
    by_uuid = {u: _name(td) for u, td in tracks.items()}
    running = [e for _, e in events if e.type == e.TYPE_SLICE_BEGIN and e.name == "running"
               and by_uuid[e.track_uuid] == "yield0"]
    assert len(running) >= 100
    # begins and ends balance on every track (the file nests)
    depth: dict[int, int] = {}
    for _, e in events:
        if e.type in (e.TYPE_SLICE_BEGIN, e.TYPE_SLICE_END):
            depth[e.track_uuid] = depth.get(e.track_uuid, 0) + (1 if e.type == e.TYPE_SLICE_BEGIN else -1)
            assert depth[e.track_uuid] >= 0
    assert set(depth.values()) == {0}
    metric = [e for _, e in events if e.type == e.TYPE_SLICE_BEGIN and e.name == "ctx_switch.yield"]
    assert len(metric) >= 100 and {a.name for a in metric[0].debug_annotations} >= {"instance", "value"}


@pytest.mark.parametrize("site", ["ctx.yield", "ctx.switch_in"])
def test_pins_and_trace_events_within_one_quantum(ctx_export, site):
    tracks, events = _decode(ctx_export)
    gaps = site_gaps(tracks, events, site)
    assert gaps.size >= 100
    assert gaps.max() <= _quantum(CTX), gaps.max()


def test_a_misaligned_export_is_caught(tmp_path, monkeypatch):
    """The same check fails when the pins are shifted by a few quanta (the check can fail)."""
    import importlib

    A = importlib.import_module("analyzers.crossval.align")  # (the package re-exports `align` itself)

    fit = A.align

    def shifted(te, le, *a, **k):
        al = fit(te, le, *a, **k)
        return type(al)(**{**al.__dict__, "offset_ns": al.offset_ns + 5 * _quantum(CTX)})

    monkeypatch.setattr(A, "align", shifted)
    out = tmp_path / "bad.pftrace"
    assert main(["export", str(CTX), "--perfetto", str(out)]) == 0
    tracks, events = _decode(out)
    assert site_gaps(tracks, events, "ctx.yield").max() > _quantum(CTX)


def test_isr_slices(tmp_path):
    out = tmp_path / "isr.pftrace"
    assert main(["export", str(ISR), "--perfetto", str(out), "--no-metrics"]) == 0
    tracks, events = _decode(out)
    isr_tracks = {u for u, td in tracks.items() if td.name.startswith("ISR ")}
    assert isr_tracks
    assert sum(e.type == e.TYPE_SLICE_BEGIN and e.track_uuid in isr_tracks for _, e in events) >= 50
    assert not any(td.name == "metrics" for td in tracks.values())


def test_window_keeps_only_the_interval(ctx_export, tmp_path):
    _, events = _decode(ctx_export)
    ts = sorted(t for t, _ in events)
    a, b = ts[len(ts) // 3], ts[len(ts) // 3] + 50_000
    out = tmp_path / "w.pftrace"
    assert main(["export", str(CTX), "--perfetto", str(out), "--window", f"{a}:{b / 1000}us"]) == 0
    tracks, wev = _decode(out)
    assert wev and all(a <= t <= b for t, _ in wev)
    assert 0 < len(wev) < len(events) / 3
    counters = {u for u, td in tracks.items() if td.HasField("counter")}
    # every pin's level at the window start is there, so the counter tracks start at the window
    assert {e.track_uuid for t, e in wev if t == a and e.type == e.TYPE_COUNTER} == counters


def test_bad_window(tmp_path, capsys):
    assert main(["export", str(CTX), "--perfetto", str(tmp_path / "x"), "--window", "9:3"]) == 2
    assert "BAD_WINDOW" in capsys.readouterr().err
    with pytest.raises(Exception, match="BAD_WINDOW"):
        T.parse_window("1ms")


def test_missing_extra_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "perfetto.protos.perfetto.trace", None)
    assert main(["export", str(CTX), "--perfetto", str(tmp_path / "x.pftrace")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "crosstrace[perfetto]" in err
    assert not (tmp_path / "x.pftrace").exists()


def test_missing_extra_still_writes_the_vcd(tmp_path, capsys, monkeypatch):
    """`--perfetto x --vcd y` without the perfetto extra: the VCD is written, the Perfetto file is
    named as not written (exit 2)."""
    monkeypatch.setitem(sys.modules, "perfetto.protos.perfetto.trace", None)
    rc = main(["export", str(CTX), "--perfetto", str(tmp_path / "x.pftrace"),
               "--vcd", str(tmp_path / "y.vcd")])
    err = capsys.readouterr().err
    assert rc == 2 and "crosstrace[perfetto]" in err and "x.pftrace not written" in err
    assert (tmp_path / "y.vcd").stat().st_size > 0 and not (tmp_path / "x.pftrace").exists()


@pytest.mark.corpus
def test_multicore_recording_one_group_per_core(tmp_path):
    f = corpus_dir("systemview") / "espidf_esp32_heaplog_mcore_offsets_v360_2025.svdat"
    out = tmp_path / "mc.pftrace"
    assert main(["export", str(f), "--perfetto", str(out)]) == 0
    tracks, events = _decode(out)
    procs = {td.process.pid: td.process.process_name for td in tracks.values() if td.HasField("process")}
    assert set(procs.values()) == {"core 0", "core 1"}
    per_core = {td.thread.pid for td in tracks.values() if td.HasField("thread")}
    assert per_core == set(procs)  # tasks ran on both cores, each under its core's group
    assert not any(td.HasField("counter") for td in tracks.values())  # no pins: no counter tracks


def test_trace_processor_reads_it(ctx_export):
    """Perfetto's own trace processor, when its binary is available offline (it downloads otherwise)."""
    shell = os.environ.get("CROSSTRACE_TRACE_PROCESSOR") or shutil.which("trace_processor_shell")
    if not shell:
        pytest.skip("no trace_processor_shell binary (set CROSSTRACE_TRACE_PROCESSOR); protos checked above")
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    tp = TraceProcessor(trace=str(ctx_export), config=TraceProcessorConfig(bin_path=shell))
    try:
        n = tp.query("select count(*) as n from slice where name = 'running'").as_pandas_dataframe()["n"][0]
        c = tp.query("select count(*) as n from counter").as_pandas_dataframe()["n"][0]
    finally:
        tp.close()
    assert n >= 100 and c >= 400
