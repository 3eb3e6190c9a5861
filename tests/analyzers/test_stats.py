"""Statistics, drop log and OVERFLOW gaps."""

import math

import numpy as np
import pytest

from analyzers.metrics.base import pair_next
from analyzers.metrics.stats import DropLog, in_gaps, overflow_gaps, summarize
from trace_parsers.model import EventKind, Trace, TraceMeta, empty_events, fill_ts


def test_summarize_matches_numpy():
    rng = np.random.default_rng(1)
    v = rng.normal(100, 7, 1001)
    s = summarize(v)
    assert s.n == 1001
    assert s.mean == pytest.approx(v.mean())
    assert s.std == pytest.approx(v.std())
    assert (s.min, s.max) == (v.min(), v.max())
    assert s.p1 == pytest.approx(np.percentile(v, 1))
    assert s.p50 == pytest.approx(np.median(v))
    assert s.p99 == pytest.approx(np.percentile(v, 99))


def test_summarize_empty_and_nan():
    assert summarize([]).n == 0 and math.isnan(summarize([]).mean)
    assert summarize([1.0, float("nan"), 3.0]).n == 2


def _trace_with_overflow():
    ev = empty_events(4)
    ev["ts_raw"] = [0, 100, 500, 600]
    ev["kind"] = [EventKind.MARK, EventKind.MARK, EventKind.OVERFLOW, EventKind.MARK]
    fill_ts(ev, 1_000_000_000)
    return Trace(ev, TraceMeta("synthetic", tick_hz=1_000_000_000))


def test_overflow_gap_runs_from_previous_event():
    assert overflow_gaps(_trace_with_overflow()) == [(100, 500)]
    assert overflow_gaps(None) == []


def test_in_gaps_inclusive():
    m = in_gaps(np.array([0, 90, 450, 510]), np.array([50, 110, 460, 600]), [(100, 500)])
    assert m.tolist() == [False, True, True, False]


def test_drop_log_counts():
    d = DropLog()
    d.add("m", "overflow_gap", 1, 2, 3)
    d.add("m", "no_end_event", count=0)  # zero counts are not logged
    d.add("x", "no_end_event", count=2)
    assert len(d) == 2 and d.count("m") == 3 and d.count(reason="no_end_event") == 2


def test_pair_next_skips_starts_without_end():
    ia, jb, u = pair_next(np.array([0, 10, 20, 30]), np.array([5, 12, 40]))
    assert ia.tolist() == [0, 1, 3] and jb.tolist() == [0, 1, 2] and u == 1
