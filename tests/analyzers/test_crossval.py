"""Clock alignment and trace-versus-capture agreement on synthetic runs with known truth."""

import numpy as np
import pytest

from analyzers import _synth as S
from analyzers.crossval import Calibration, cross_validate
from analyzers.crossval.align import align
from analyzers.sites import DEFAULT_SITES, logic_site_events, trace_site_events
from trace_parsers.errors import AnalysisError


def _mixed(seed=0):
    """Context switches with varying duration and an ISR scenario merged into one run."""
    a = S.ctx_switch(n=120, spread_ns=400, seed=seed)
    b = S.isr(n=60, spread_ns=300, seed=seed)
    a.marks = sorted(a.marks + [(t + 5_000_000, s) for t, s in b.marks])
    a.kernel = sorted(a.kernel + [(t + 5_000_000, *r) for t, *r in b.kernel])
    a.isrs = b.isrs
    return a


@pytest.mark.parametrize("ppm", [-80.0, 0.0, 35.0])
def test_alignment_recovers_offset_drift_and_reports_site_bias(ppm):
    sc = _mixed()
    tr = S.to_trace(sc, site_offset_ns={"ctx.switch_in": -14, "isr.enter": 10})
    cap = S.to_capture(sc, ppm=ppm, offset_ns=123_456, samplerate=1_000_000_000)
    al = align(trace_site_events(tr, DEFAULT_SITES), logic_site_events(cap, DEFAULT_SITES))
    assert al.drift_ppm == pytest.approx(ppm, abs=0.5)
    assert al.n_pairs == 2 * 120 + 2 * 60
    # one offset for every site: a site's constant shows as its bias, relative to the others
    c = {s: f.bias_ns for s, f in al.sites.items()}
    assert c["ctx.switch_in"] - c["ctx.yield"] == pytest.approx(14, abs=1.5)
    assert c["isr.task_wake"] - c["isr.enter"] == pytest.approx(10, abs=1.5)
    assert al.offset_ns == pytest.approx(123_456 + (-0.5 * 14 + 0.25 * 10) / 1, abs=12)
    assert all(f.residual_max_ns <= 16 for f in al.sites.values())
    assert all(f.unmatched_trace == 0 and f.unmatched_logic == 0 for f in al.sites.values())


def test_wrapped_trace_and_missing_edges_make_the_verdict_incomplete():
    sc = _mixed(seed=1)
    tr = S.to_trace(sc)
    ev = tr.events
    first_kept = np.searchsorted(ev["ts"], sc.marks[40][0])  # the ring buffer lost the first 40 marks
    tr = type(tr)(ev[first_kept:].copy(), tr.meta, tasks=tr.tasks, isrs=tr.isrs, markers=tr.markers)
    cap = S.to_capture(sc, ppm=20, drop_edges={"isr.enter": [5, 6]})
    cv = cross_validate(tr, cap)
    f = cv.alignment.sites
    assert f["isr.enter"].unmatched_trace == 2 and f["isr.enter"].unmatched_logic == 0
    assert f["ctx.yield"].unmatched_logic == 20 and f["ctx.yield"].unmatched_trace == 0
    assert cv.alignment.drift_ppm == pytest.approx(20, abs=1)
    ag = {a.metric: a for a in cv.agreements}
    # the paired values agree, but lost instances are never ignored
    y = ag["ctx_switch.yield"]
    assert y.n_pairs == 100 and y.unmatched_logic == 20 and y.verdict == "INCOMPLETE"
    assert abs(y.rel_diff_pct) < 0.1
    assert y.first_unmatched_logic_ns == pytest.approx(cap.events["ts"].min(), abs=1e6)
    i = ag["isr.to_task.latency"]  # instances touching a missing edge are not paired with a wrong one
    assert i.n_pairs == 58 and i.unmatched_trace == 2 and i.verdict == "INCOMPLETE"
    assert cv.verdict == "INCOMPLETE" and any("isr.enter" in p for p in cv.problems)


def test_one_lost_instance_is_tolerated_two_are_not():
    sc = S.isr(n=150, spread_ns=300)
    tr = S.to_trace(sc)
    one = cross_validate(tr, S.to_capture(sc, drop_edges={"isr.task_wake": [70]}))
    two = cross_validate(tr, S.to_capture(sc, drop_edges={"isr.task_wake": [70, 90]}))
    assert {a.metric: a.verdict for a in one.agreements}["isr.to_task.latency"] == "PASS"
    assert {a.metric: a.verdict for a in two.agreements}["isr.to_task.latency"] == "INCOMPLETE"
    assert one.verdict == "PASS" and two.verdict == "INCOMPLETE"


def test_raw_difference_is_judged_and_declared_calibration_is_an_input():
    sc = S.fft(n=40)
    late = 0.05 * 35_350  # the trace record of fft.stop is 5 % of the duration late
    tr = S.to_trace(sc, site_offset_ns={"fft.stop": int(late)})
    cap = S.to_capture(sc, ppm=10, samplerate=500_000_000)
    d = {a.metric: a for a in cross_validate(tr, cap).agreements}["fft.duration"]
    assert d.verdict == "FAIL" and d.calibration_ns == 0 and d.calibration_source == "none"
    assert d.raw_rel_diff_pct == pytest.approx(5.0, abs=0.02) and d.rel_diff_pct == d.raw_rel_diff_pct
    cal = Calibration.from_run({"calibration": {"source": "bench", "sites": {"fft.stop": int(late)}}})
    cv = cross_validate(tr, cap, calibration=cal)
    d = {a.metric: a for a in cv.agreements}["fft.duration"]
    assert d.verdict == "PASS" and d.calibration_ns == -int(late)
    assert d.calibration_source == "declared: bench"
    assert d.raw_rel_diff_pct == pytest.approx(5.0, abs=0.02) and abs(d.rel_diff_pct) < 0.01
    assert cv.verdict == "PASS" and {c["metric"] for c in cv.counts} >= {"fft.frames", "fft.frames_lost"}


def test_wrong_trace_clock_fails():
    sc = S.fft(n=30)
    tr = S.to_trace(sc, tick_hz=168_000_000)
    # the reader believed the trace ran at 180 MHz: every trace interval is 7 % short
    from trace_parsers.model import fill_ts

    fill_ts(tr.events, 180_000_000)
    cv = cross_validate(tr, S.to_capture(sc))
    d = {a.metric: a for a in cv.agreements}["fft.duration"]
    assert d.verdict == "FAIL" and d.rel_diff_pct == pytest.approx(-6.67, abs=0.1)
    assert cv.verdict == "FAIL" and "tick_hz" in cv.note
    assert cv.alignment.drift_ppm == pytest.approx(1e6 * (180 / 168 - 1), rel=1e-3)


def test_coarse_analyzer_cannot_resolve_two_percent():
    sc = S.ctx_switch(n=80, switch_ns=500, spread_ns=100)
    cv = cross_validate(S.to_trace(sc), S.to_capture(sc, samplerate=24_000_000))  # 41.7 ns samples
    d = {a.metric: a for a in cv.agreements}["ctx_switch.yield"]
    assert not d.resolvable and d.verdict == "UNRESOLVED" and d.quantum_pct > 2


def test_per_instance_disagreement_fails():
    sc = S.ctx_switch(n=100, switch_ns=5_000)
    cap = S.to_capture(sc)
    sc2 = S.ctx_switch(n=100, switch_ns=5_000)
    sw = [i for i, (_, s) in enumerate(sc2.marks) if s == "ctx.switch_in"]
    late = set(sw[::10])  # every tenth switch-in is 400 ns (8 %) later in the trace only
    sc2.marks = [(t + (400 if i in late else 0), s) for i, (t, s) in enumerate(sc2.marks)]
    cv = cross_validate(S.to_trace(sc2), cap)
    d = {a.metric: a for a in cv.agreements}["ctx_switch.yield"]
    assert abs(d.rel_diff_pct) < 2  # the mean alone would pass
    assert d.within_tol_pct < 99 and d.verdict == "FAIL"


def test_one_sided_folders_are_not_errors():
    sc = S.periodic(n=10)
    assert cross_validate(S.to_trace(sc), None).verdict == "N/A"
    assert cross_validate(None, S.to_capture(sc)).agreements == ()


def test_no_common_site_is_an_analysis_error():
    a, b = S.periodic(n=10), S.fft(n=3)
    with pytest.raises(AnalysisError, match="no instrumentation site"):
        align(
            trace_site_events(S.to_trace(a), DEFAULT_SITES), logic_site_events(S.to_capture(b), DEFAULT_SITES)
        )
    assert "no instrumentation site" in cross_validate(S.to_trace(a), S.to_capture(b)).note


def test_periodic_only_alignment_without_anchor():
    sc = S.periodic(n=100, jitter_ns=0)  # constant intervals: no pattern anchor, count fallback
    cv = cross_validate(S.to_trace(sc), S.to_capture(sc, ppm=5))
    ag = {a.metric: a for a in cv.agreements}
    assert ag["periodic.fast.period"].verdict == "PASS" and ag["periodic.fast.period"].n_pairs == 99
