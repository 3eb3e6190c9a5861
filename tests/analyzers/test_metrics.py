"""Each analyzer recovers the known truth of a synthetic run, from the trace and from the pins."""

import numpy as np
import pytest

from analyzers import _synth as S
from analyzers._uart import decode_edges
from analyzers.metrics.context_switch import context_switch_times
from analyzers.metrics.cpu_load import cpu_load
from analyzers.metrics.isr_latency import isr_to_task_latency
from analyzers.metrics.periodicity import period_jitter, period_stats
from analyzers.metrics.workload import fft_workload, uart_text


def _values(table, metric):
    t = table.to_pandas()
    return t[t["metric"] == metric]["value"].to_numpy()


@pytest.mark.parametrize("render", ["trace", "logic"])
def test_context_switch_recovers_each_instance(render):
    sc = S.ctx_switch(n=150, spread_ns=300, seed=3)
    src = S.to_trace(sc) if render == "trace" else S.to_capture(sc, ppm=0, offset_ns=0)
    table, summary = context_switch_times(src, n_tasks=2)
    np.testing.assert_array_equal(_values(table, "ctx_switch.yield"), sc.truth["ctx_switch.yield"])
    st = summary.stats["ctx_switch.yield"]
    assert st.n == 150 and st.mean == pytest.approx(sc.truth["ctx_switch.yield"].mean())
    assert summary.n_tasks == 2 and summary.source == render
    if render == "trace":
        assert summary.stats["ctx_switch.yield.to_switch_in"].mean == 60
    else:
        assert "ctx_switch.yield.to_switch_in" not in summary.stats


def test_context_switch_tick_quantisation_is_bounded():
    sc = S.ctx_switch(n=100, spread_ns=1000, seed=4)
    tr = S.to_trace(sc, tick_hz=180_000_000)  # 5.6 ns ticks, like CYCCNT at 180 MHz
    v = _values(context_switch_times(tr).table, "ctx_switch.yield")
    assert np.max(np.abs(v - sc.truth["ctx_switch.yield"])) <= 1e9 / 180e6 + 1


def test_overflow_gap_instances_are_excluded_and_logged():
    sc = S.ctx_switch(n=100)
    tr = S.to_trace(sc, overflow_after=[60], lose=3)
    table, summary = context_switch_times(tr)
    assert summary.excluded >= 1
    assert any(d.reason == "overflow_gap" for d in summary.drop_log)
    v = _values(table, "ctx_switch.yield")
    assert v.size < 100 and np.all(v == 128)  # nothing computed across the gap


def test_periodicity_truth():
    sc = S.periodic(n=300, period_ns=1_000_000, jitter_ns=0, missed=[100, 101], drift_ppm=50)
    for src in (S.to_trace(sc), S.to_capture(sc, offset_ns=0)):
        table, s = period_jitter(src, options=sc.options)
        assert s.nominal_source["periodic.fast"] == "options"
        assert s.scalars["periodic.fast.missed"][0] == 2
        assert s.scalars["periodic.fast.drift_ppm"][0] == pytest.approx(50, abs=0.5)
        assert s.scalars["periodic.fast.period_error"][0] == pytest.approx(50, abs=1)  # 50 ppm of 1 ms
        assert s.stats["periodic.fast.period"].n == 300 - 2 - 1 - 1  # 297 intervals, one spans the miss
        assert s.excluded == 0 and any(d.reason == "missed_activation" for d in s.drop_log)


def test_periodicity_jitter_statistics():
    sc = S.periodic(n=2000, period_ns=500_000, jitter_ns=1000, seed=9)
    _, s = period_jitter(S.to_trace(sc), options=sc.options)
    per = np.diff(sc.truth["activations"])
    assert s.scalars["periodic.fast.jitter.std"][0] == pytest.approx(per.std())
    dev = np.abs(per - 500_000)
    st = s.stats["periodic.fast.jitter.abs"]
    assert st.max == dev.max() and st.p99 == pytest.approx(np.percentile(dev, 99))


def test_periodicity_without_nominal_uses_median():
    sc = S.periodic(n=50, period_ns=2_000_000)
    _, s = period_jitter(S.to_trace(sc))
    assert s.nominal_source["periodic.fast"] == "median" and s.nominal_ns["periodic.fast"] == 2_000_000


def test_period_stats_zero_jitter():
    r = period_stats(np.arange(0, 100) * 1000, 1000)
    assert r["jitter_std_ns"] == 0 and r["missed"] == 0 and r["drift_ppm"] == pytest.approx(0, abs=1e-6)


def test_isr_latency_and_duration():
    sc = S.isr(n=100, latency_ns=304, duration_ns=150, spread_ns=200, seed=2)
    table, s = isr_to_task_latency(S.to_trace(sc))
    np.testing.assert_array_equal(_values(table, "isr.to_task.latency"), sc.truth["isr.to_task.latency"])
    assert s.stats["isr.duration"].mean == 150 and s.stats["isr.duration"].n == 100
    assert s.stats["isr.to_task.switch_in"].n == 100
    _, s2 = isr_to_task_latency(S.to_capture(sc, offset_ns=0))
    assert s2.stats["isr.to_task.latency"].mean == pytest.approx(sc.truth["isr.to_task.latency"].mean())
    assert "isr.duration" not in s2.stats


def test_fft_workload_frames_and_uart():
    sc = S.fft(n=20, lost=[4, 11])
    _, st = fft_workload(S.to_trace(sc))
    assert st.stats["fft.duration"].mean == sc.truth["fft.duration"]
    assert st.stats["fft.sample_to_uart"].mean == sc.truth["fft.sample_to_uart"]
    assert st.scalars["fft.frames"][0] == 20 and st.scalars["fft.frames_lost"][0] == 2
    cap = S.to_capture(sc, offset_ns=0)
    _, sl = fft_workload(cap, reference_text=sc.uart_text)
    assert sl.scalars["fft.uart.lines"][0] == 18 and sl.scalars["fft.uart.matched"][0] == 18
    assert sl.scalars["fft.uart.framing_errors"][0] == 0
    assert uart_text(cap)[0] == sc.uart_text


def test_uart_decode_roundtrip_with_coarse_sampling():
    text = "CT_RESULT fft.duration n=20 min=1 mean=1.00 max=1 unit=ticks\r\n"
    edges = S.uart_edges(text, 1000, baud=115200)
    ts = (np.array([t for t, _ in edges]) // 250) * 250  # 4 MHz analyzer
    data, starts, err = decode_edges(ts, np.array([lv for _, lv in edges]), 1, 115200)
    assert data.decode() == text and err == 0 and starts.size == len(text)


def test_cpu_load_shares():
    sc = S.isr(n=50, latency_ns=300, duration_ns=150, period_ns=100_000)
    table, s = cpu_load(S.to_trace(sc))
    total = sum(s.busy_ns.values())
    assert total == s.window_ns
    # per period: ISR 150 ns, worker from its switch-in (t+270) to idle (t+1300) = 1030 ns
    assert s.busy_ns["isr.TIM5"] == 50 * 150
    assert s.scalars["cpu.load.task.worker"][0] == pytest.approx(100 * 50 * 1030 / s.window_ns, rel=1e-9)
    assert s.scalars["cpu.load.total"][0] == pytest.approx(
        100 - s.scalars["cpu.load.idle"][0] - s.scalars["cpu.load.unknown"][0]
    )
    assert set(table.column("metric").to_pylist()) >= {"cpu.busy.isr.TIM5", "cpu.busy.idle"}


def test_cpu_load_marker_only_trace_is_empty():
    _, s = cpu_load(S.to_trace(S.periodic(n=10)))
    assert s.scalars == {} and s.window_ns == 0


def test_tracex_next_context_without_switch_events():
    from trace_parsers.model import CtxType, EventKind, Trace, TraceMeta, empty_events, fill_ts

    # yield (site 1) by task 1, a kernel call by task 1, then task 2's first record 184 ticks later
    rows = []
    for k in range(20):
        t0 = 1000 * k
        a, b = (1, 2) if k % 2 == 0 else (2, 1)
        rows += [
            (t0, EventKind.MARK, a, 1),
            (t0 + 60, EventKind.API_CALL, a, 0),
            (t0 + 184, EventKind.MARK, b, 2),
        ]
    ev = empty_events(len(rows))
    ev["ts_raw"] = [r[0] for r in rows]
    ev["kind"] = [r[1] for r in rows]
    ev["ctx_type"] = CtxType.TASK
    ev["ctx_id"] = [r[2] for r in rows]
    ev["marker"] = [r[3] for r in rows]
    fill_ts(ev, 1_000_000_000)
    _, s = context_switch_times(Trace(ev, TraceMeta("tracex", tick_hz=1_000_000_000)))
    assert s.stats["ctx_switch.yield.to_switch_in"].n == 20
    assert s.stats["ctx_switch.yield.to_switch_in"].mean == 184 == s.stats["ctx_switch.yield"].mean


def test_calib_loop_pairs_the_fixed_loop_sites():
    from analyzers.metrics.calib import calib_loop

    n = 10
    sc = S.Scenario("calib", options={"CT_ITERATIONS": n})
    t = 1000
    for _ in range(n):  # the site-cost loop: one toggle per iteration
        sc.marks.append((t, "calib.loop"))
        t += 300
    for k in range(n):  # the fixed loop: site, spin, site
        sc.marks += [(t, "calib.loop"), (t + 2000 + k, "calib.loop")]
        t += 5000
    for src in (S.to_trace(sc), S.to_capture(sc, offset_ns=0)):
        table, s = calib_loop(src, iterations=n)
        assert _values(table, "calib.loop").tolist() == [2000.0 + k for k in range(n)]
    _, s = calib_loop(S.to_trace(sc), iterations=n + 1)  # wrong count: nothing guessed
    assert s.stats == {} and s.drop_log[0].reason == "unexpected_count"


def test_period_stats_with_a_zero_nominal_period_gives_nan_not_an_exception():
    """Two activations at the same time give a nominal period of 0 (found by the chunking property):
    the error in percent is undefined (NaN), never a ZeroDivisionError escaping the analysis."""
    import math

    from analyzers.metrics.periodicity import period_stats

    got = period_stats(np.array([0, 0]), 0.0)
    assert got["period_error_ns"] == 0.0 and math.isnan(got["period_error_pct"])
    assert math.isnan(period_stats(np.array([0, 0, 0]), 0.0)["drift_ppm"])
