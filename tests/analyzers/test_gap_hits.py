"""The gap test of every metric (``stats.gap_hits``) against a brute-force loop over the gaps."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.metrics.stats import GapDrops, gap_hits


def _brute(start, end, gaps):
    touches = [any(s <= g1 and e >= g0 for g0, g1 in gaps) for s, e in zip(start, end)]
    per = [sum(1 for s, e in zip(start, end) if s <= g1 and e >= g0) for g0, g1 in gaps]
    return touches, per


_times = st.lists(st.integers(0, 200), min_size=0, max_size=40)


@settings(max_examples=300, deadline=None)
@given(_times, st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=8), st.booleans())
def test_equals_the_brute_force_loop(points, raw_gaps, ordered):
    pts = sorted(points)
    start = np.array(pts[0::2], np.int64)
    end = start + np.array([(p * 7) % 50 for p in pts[0::2]], np.int64)
    gaps = [(a, a + w) for a, w in raw_gaps]
    if ordered:  # as overflow_gaps makes them: in time order, each from the last event before it
        edges = sorted(a for a, _ in raw_gaps)
        gaps = [(x, y) for x, y in zip(edges, edges[1:])]
    t, n = gap_hits(start, end, gaps)
    want_t, want_n = _brute(start.tolist(), end.tolist(), gaps)
    assert t.tolist() == want_t and n.tolist() == want_n


def test_batches_log_what_one_call_logs():
    from analyzers.metrics.stats import DropLog, drop_gap_instances

    rng = np.random.default_rng(1)
    s = np.sort(rng.integers(0, 10_000, 500))
    e = s + rng.integers(0, 300, 500)
    gaps = [(g, g + 40) for g in range(100, 10_000, 700)]
    one = DropLog()
    keep = drop_gap_instances("m", s, e, gaps, one)
    drops, parts = GapDrops("m", gaps), []
    for k in range(0, 500, 37):
        parts.append(drops.keep(s[k:k + 37], e[k:k + 37]))
    batched = DropLog()
    drops.log(batched)
    assert np.concatenate(parts).tolist() == keep.tolist() and batched.entries == one.entries
    assert not keep.all()  # the data touches gaps: the check can fail
