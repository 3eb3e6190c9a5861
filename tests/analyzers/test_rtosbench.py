"""analyzers/metrics/rtosbench.py: RTOSBench's T1/T2 events (firmware/apps/rtosbench), on synthetic runs with
known truth laid out as the upstream tests order them (orphan T1 and T2 events included), cross-validated
trace against pins, and failing when the trace clock is wrong or a mark is missing."""

import numpy as np
import pytest

from analyzers import _synth as S
from analyzers.crossval import cross_validate
from analyzers.metrics.registry import cross_validated, lookup
from analyzers.metrics.rtosbench import TESTS, pair_ends, rtosbench

T1, E0, E1 = "tm.count", "tm.isr", "tm.report"


def two_counter_run(n=30, unblock_ns=900, block_ns=1500, clock=1.0, skip=()):
    """mutex.c's order: phase 1 (counter 0, "unblock"): orphan T2 of counter 1, T1, T2 of counter 0;
    phase 2 (counter 1, "block"): T1, T2 of counter 1, orphan T1 of counter 0."""
    sc = S.Scenario("rtosbench", options={"CT_RB_TEST": "mutex", "CT_RB_ITER": n})
    t, marks = 40_000, []
    for k in range(n):
        marks += [(t, E1), (t + 40, T1), (t + 40 + unblock_ns + (k % 2), E0)]
        t += 4_000
    for _ in range(n):
        marks += [(t, T1), (t + block_ns, E1), (t + block_ns + 40, T1)]
        t += 4_000
    sc.marks = [(round(clock * m), s) for i, (m, s) in enumerate(marks) if i not in skip]
    return sc


def round_robin_run(n=25, switch_ns=700):
    """round_robin.c: task 0's T1 before each yield, task 1's T2 after its yield returns, one round later:
    T1(0), T1(1), T2(0), T1(2), T2(1), ...; the first T1 and the last T2 have no partner."""
    sc = S.Scenario("rtosbench", options={"CT_RB_TEST": "round_robin", "CT_RB_ITER": n})
    t, marks = 30_000, [(29_000, T1)]
    for _ in range(n - 1):
        marks += [(t, T1), (t + switch_ns, E0)]
        t += 3_000
    marks += [(t, E0)]
    sc.marks = marks
    return sc


def test_metrics_are_registered_and_cross_validated():
    for test, names in TESTS.items():
        for name in names:
            d = lookup(f"rb.{test}.{name}")
            assert d is not None and d.module == "analyzers.metrics.rtosbench" and d.unit == "ns"
            assert cross_validated(f"rb.{test}.{name}")


def test_pair_ends_takes_the_latest_start_since_the_previous_end():
    starts = np.array([10, 20, 35, 50])
    ends = np.array([30, 40, 45, 60])
    all_ends = ends
    i, j = pair_ends(starts, ends, all_ends)
    # 30 <- 20; 40 <- 35; 45: no start after 40 -> orphan; 60 <- 50
    assert starts[i].tolist() == [20, 35, 50] and ends[j].tolist() == [30, 40, 60]


def test_two_counters_with_orphans_pass_trace_against_pins():
    sc = two_counter_run()
    tr, cap = S.to_trace(sc), S.to_capture(sc, ppm=20, jitter_ns=1)
    rt, rl = rtosbench(tr, options=sc.options), rtosbench(cap, options=sc.options)
    st = rt.summary.stats
    assert st["rb.mutex.unblock"].n == 30 and st["rb.mutex.unblock"].mean == pytest.approx(900.5)
    assert st["rb.mutex.block"].n == 30 and st["rb.mutex.block"].mean == pytest.approx(1500)
    assert not rt.summary.drop_log
    cv = cross_validate(tr, cap, trace_table=rt.table, logic_table=rl.table)
    verdicts = {a.metric: a.verdict for a in cv.agreements}
    assert verdicts["rb.mutex.unblock"] == "PASS" and verdicts["rb.mutex.block"] == "PASS"


def test_round_robin_pairs_each_switch_one_round_late():
    sc = round_robin_run()
    r = rtosbench(S.to_trace(sc), options=sc.options)
    st = r.summary.stats["rb.round_robin.switch"]
    assert st.n == 24 and st.mean == pytest.approx(700) and not r.summary.drop_log


def test_a_trace_clock_5_percent_fast_fails():
    """Fault injection: the trace's times run 5 % fast; the pins keep true time."""
    true, fast = two_counter_run(), two_counter_run(clock=1.05)
    tr, cap = S.to_trace(fast), S.to_capture(true)
    rt, rl = rtosbench(tr, options=fast.options), rtosbench(cap, options=true.options)
    cv = cross_validate(tr, cap, trace_table=rt.table, logic_table=rl.table)
    assert {a.metric: a.verdict for a in cv.agreements}["rb.mutex.block"] == "FAIL"


def test_a_missing_mark_is_logged_and_other_runs_are_left_alone():
    sc = two_counter_run(skip=(4,))  # the T1 of the second unblock
    r = rtosbench(S.to_trace(sc), options=sc.options)
    assert r.summary.stats["rb.mutex.unblock"].n == 29
    assert [(d.metric, d.reason) for d in r.summary.drop_log] == [("rb.mutex.unblock", "unexpected_count")]
    for opts in ({"CT_NTASKS": 2}, {"CT_FG_TEST": "A"}, {"CT_RB_TEST": "jitter"}):
        assert rtosbench(S.to_trace(sc), options=opts).table.num_rows == 0
