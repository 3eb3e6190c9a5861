"""Invariance properties of the analyzers (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import _synth as S
from analyzers.crossval import cross_validate
from analyzers.metrics.periodicity import period_jitter, period_stats
from analyzers.run import run_analyzers
from analyzers.sites import DEFAULT_SITES
from trace_parsers.model import Trace


def _shift(tr: Trace, d: int) -> Trace:
    ev = tr.events.copy()
    ev["ts"] += d
    ev["ts_raw"] += np.uint64(d)
    return Trace(ev, tr.meta, tasks=tr.tasks, isrs=tr.isrs, markers=tr.markers, channels=tr.channels)


def _scenario(kind: str, seed: int) -> S.Scenario:
    return {
        "ctx": lambda: S.ctx_switch(n=30, spread_ns=200, seed=seed),
        "isr": lambda: S.isr(n=20, spread_ns=100, seed=seed),
        "per": lambda: S.periodic(n=40, jitter_ns=300, missed=[7], seed=seed),
        "fft": lambda: S.fft(n=8, lost=[2], seed=seed),
    }[kind]()


@settings(max_examples=40)
@given(
    kind=st.sampled_from(["ctx", "isr", "per", "fft"]),
    seed=st.integers(0, 1000),
    shift=st.integers(0, 10**12),
    logic=st.booleans(),
)
def test_shifting_every_timestamp_changes_no_metric(kind, seed, shift, logic):
    sc = _scenario(kind, seed)
    src = S.to_capture(sc) if logic else S.to_trace(sc)
    a = run_analyzers(src, DEFAULT_SITES, sc.options)
    b = run_analyzers(_shift(src, shift), DEFAULT_SITES, sc.options)
    assert a.stats.keys() == b.stats.keys() and a.stats
    for m in a.stats:
        assert a.stats[m] == b.stats[m], m
    assert a.scalars.keys() == b.scalars.keys()
    for m, (v, _) in a.scalars.items():
        assert np.isclose(v, b.scalars[m][0], rtol=1e-9, atol=1e-6), m
    va = a.table.column("value").to_numpy()
    vb = b.table.column("value").to_numpy()
    np.testing.assert_array_equal(va, vb)


@given(period=st.integers(1, 10**9), n=st.integers(3, 500), t0=st.integers(0, 10**12))
def test_perfectly_periodic_series_has_zero_jitter(period, n, t0):
    r = period_stats(t0 + np.arange(n, dtype=np.int64) * period, period)
    assert r["jitter_std_ns"] == 0 and r["missed"] == 0 and r["period_error_ns"] == 0
    assert abs(r["drift_ppm"]) < 1e-6


@settings(max_examples=30)
@given(period=st.integers(10_000, 10**7), n=st.integers(3, 200))
def test_periodic_trace_zero_jitter_end_to_end(period, n):
    sc = S.periodic(n=n, period_ns=period)
    _, s = period_jitter(S.to_trace(sc), options=sc.options)
    assert s.stats["periodic.fast.jitter.abs"].max == 0
    assert s.scalars["periodic.fast.jitter.std"][0] == 0


@settings(max_examples=30)
@given(
    ppm=st.floats(-200, 200),
    offset=st.integers(0, 10**9),
    seed=st.integers(0, 100),
    rate=st.sampled_from([1_000_000_000, 500_000_000, 200_000_000]),
)
def test_alignment_recovers_any_offset_and_drift(ppm, offset, seed, rate):
    sc = S.isr(n=40, spread_ns=5000, seed=seed)
    cv = cross_validate(S.to_trace(sc), S.to_capture(sc, ppm=ppm, offset_ns=offset, samplerate=rate))
    al = cv.alignment
    assert abs(al.drift_ppm - ppm) < 0.5
    assert all(f.unmatched_trace == 0 and f.unmatched_logic == 0 for f in al.sites.values())
    ag = {a.metric: a for a in cv.agreements}["isr.to_task.latency"]
    assert ag.n_pairs == 40 and ag.verdict == "PASS"


@settings(max_examples=300, deadline=None)
@given(
    logic=st.floats(50.0, 1e7),
    quantum=st.sampled_from([1.0, 2.0, 11.0, 42.7]),
    share=st.floats(0.0, 0.1),
    sign=st.sampled_from([-1.0, 1.0]),
    n=st.integers(1, 400),
)
def test_verdict_flips_at_two_percent_plus_one_quantum(logic, quantum, share, sign, n):
    """A constant difference FAILs exactly when it exceeds 2 % of the value plus one quantum."""
    from analyzers.crossval import judge

    lv = np.full(n, logic)
    delta = sign * share * logic
    j = judge(lv + delta, lv, quantum, (0, 0), (n, n))
    limit = 0.02 * logic + quantum
    if abs(delta) > limit * (1 + 1e-9):
        assert j.verdict == "FAIL"
    elif abs(delta) < limit * (1 - 1e-9):
        assert j.verdict == ("PASS" if quantum <= 0.02 * logic else "UNRESOLVED")
