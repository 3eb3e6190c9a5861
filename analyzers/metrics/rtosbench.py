"""RTOSBench's tests in TRACING mode (``firmware/apps/rtosbench``): each time counter of a test is a T1
event and a T2 event, and the port turns each into a site toggle (one pin edge, one trace marker): T1 of
every counter is ``tm.count``, T2 of counter 0 is ``tm.isr``, T2 of counter 1 ``tm.report`` (every GPIOG
pin already carries a site; the Thread-Metric analyzer only reads runs with ``CT_TM_SITE_EVERY``).

The upstream tests write some T1 and T2 events that close no interval (``mutex.c``'s sender writes
T2 of one counter and T1 of the other back to back in both phases; ``round_robin.c``'s first T1 and last
T2), so an instance is a T2 paired with the latest T1 before it, provided no other T2 (of either counter)
lies between them: :func:`pair_ends`. Metrics ``rb.<test>.<name>`` (ns, both sources, instance by
instance); a source that pairs another count than the test's iterations (``CT_RB_ITER``; round robin: one
fewer, as upstream's statistics skip the first) logs ``unexpected_count``. RTOSBench's jitter test has
no T1/T2: its monitor's wake-ups are site ``periodic.fast`` (``periodic.fast.period``, ``.jitter.abs``).

>>> import numpy as np
>>> [a.tolist() for a in pair_ends(np.array([1, 5, 6]), np.array([3, 7, 8]), np.array([3, 7, 8]))]
[[0, 2], [0, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from trace_parsers.model import Trace

from ..sites import Site, is_logic, load_sites, site_events
from .base import Result, Series, Summary, make_table, summary_fields
from .stats import DropLog, drop_gap_instances

T1 = "tm.count"
T2 = ("tm.isr", "tm.report")  #: the T2 site of counter 0, 1
#: test (option ``CT_RB_TEST``) -> metric name of each time counter, in declaration order
TESTS: dict[str, tuple[str, ...]] = {
    "round_robin": ("switch",),
    "interrupt_processing": ("latency",),
    "mutex": ("unblock", "block"),
    "mq": ("unblock", "block"),
    "sem": ("unblock", "block"),
}


def pair_ends(starts: np.ndarray, ends: np.ndarray, all_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(i, j)``: ``ends[j]`` closes the interval opened by ``starts[i]``, the latest start before
    it, when no time of ``all_ends`` (every counter's T2, sorted) lies strictly between the two."""
    starts, ends, all_ends = (np.asarray(a, dtype=np.int64) for a in (starts, ends, all_ends))
    i = np.searchsorted(starts, ends, side="left") - 1
    k = np.searchsorted(all_ends, ends, side="left") - 1
    prev = np.where(k >= 0, all_ends[np.maximum(k, 0)], np.iinfo(np.int64).min)
    ok = (i >= 0) & (starts[np.maximum(i, 0)] >= prev) if starts.size else np.zeros(ends.size, bool)
    j = np.flatnonzero(ok)
    return i[j], j


def expected_count(test: str, iterations: int) -> int:
    return iterations - 1 if test == "round_robin" else iterations


def rtosbench(trace: Trace, *, sites: Sequence[Site] | None = None,
              options: dict[str, Any] | None = None, store: Any = None) -> Result:
    """The ``rb.<test>.<name>`` instances of a trace or logic capture (empty for other runs;
    ``store``: the source's spill the table goes to, or None: in memory)."""
    sites = tuple(sites) if sites is not None else load_sites()
    source = "logic" if is_logic(trace) else "trace"
    options = options or {}
    test = str(options.get("CT_RB_TEST", ""))
    drop_log = DropLog()
    series: list[Series] = []
    if test in TESTS:
        se = site_events(trace, sites)
        starts = se.times(T1)
        ends = [se.times(s) for s in T2]
        all_ends = np.sort(np.concatenate(ends))
        want = expected_count(test, int(options.get("CT_RB_ITER", 1000)))
        for c, name in enumerate(TESTS[test]):
            metric = f"rb.{test}.{name}"
            i, j = pair_ends(starts, ends[c], all_ends)
            start, end = starts[i], ends[c][j]
            if i.size != want and (starts.size or ends[c].size):
                first = int(start[0]) if i.size else -1
                drop_log.add(metric, "unexpected_count", first, int(end[-1]) if j.size else -1,
                             abs(int(i.size) - want))
            keep = drop_gap_instances(metric, start, end, se.gaps, drop_log)
            series.append(Series(metric, "ns", start[keep], end[keep], (end - start)[keep].astype(np.float64),
                                 T1, i[keep], T2[c], j[keep]))
    return Result(make_table(series, source, store),
                  Summary(source=source, **summary_fields(series, drop_log)))


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any], store: Any = None) -> Result:
    return rtosbench(trace, sites=sites, options=options, store=store)
