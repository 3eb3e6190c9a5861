"""The fine-grained kernel benchmarks (``firmware/apps/finegrained``, Belleza & de Freitas 2018).

Tests A–F time two kernel calls per iteration between toggles of one site (``tm.count``: every
GPIOG pin already carries a site, the app reuses the Thread-Metric counting site; the Thread-Metric
analyzer runs only for runs with ``CT_TM_SITE_EVERY``). With ``N`` = ``CT_FG_BATCHES`` ·
``CT_FG_SAMPLES`` iterations the site fires ``4N`` times: the first call of iteration ``k`` spans
occurrences ``4k → 4k+1``, the second ``4k+2 → 4k+3``. Metrics ``fg.<test>.<call>`` (ns, both
sources, cross-validated instance by instance), the calls of :data:`OPS` in that order. A source
that did not record exactly ``4N`` occurrences yields no instances (drop-log reason
``unexpected_count``). Tests G and H are measured by the existing metrics ``isr.to_task.latency``
(sites ``isr.enter`` → ``isr.task_wake``) and ``periodic.fast.period`` / ``.jitter.abs``.

>>> import numpy as np
>>> [s.tolist() for s in pair_bounds(np.arange(8), 2, 1)]
[[2, 6], [3, 7]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from trace_parsers.model import Trace

from ..sites import Site, is_logic, load_sites, site_events
from .base import Result, Series, Summary, make_table, summary_fields
from .stats import DropLog, drop_gap_instances

SITE = "tm.count"
#: test letter -> its two kernel calls, in the order they fire within one iteration
OPS: dict[str, tuple[str, str]] = {
    "A": ("suspend", "resume"),
    "B": ("give", "take"),
    "C": ("take", "give"),
    "D": ("send", "receive"),
    "E": ("receive", "send"),
    "F": ("alloc", "free"),
}


def pair_bounds(t: np.ndarray, n: int, op: int) -> tuple[np.ndarray, np.ndarray]:
    """Occurrence indices (start, end) of call ``op`` (0 or 1) in each of ``n`` iterations."""
    start = 4 * np.arange(n, dtype=np.int64) + 2 * op
    return start, start + 1


def fg_options(options: dict[str, Any]) -> tuple[str, int] | None:
    """``(test letter, iterations)`` of a fine-grained A–F run, else None."""
    test = str(options.get("CT_FG_TEST", ""))
    if test not in OPS:
        return None
    return test, int(options.get("CT_FG_BATCHES", 1)) * int(options.get("CT_FG_SAMPLES", 1))


def finegrained(trace: Trace, *, sites: Sequence[Site] | None = None,
                options: dict[str, Any] | None = None, store: Any = None) -> Result:
    """The ``fg.<test>.<call>`` instances of a trace or logic capture (empty for other runs;
    ``store``: the source's spill the table goes to, or None: in memory)."""
    sites = tuple(sites) if sites is not None else load_sites()
    source = "logic" if is_logic(trace) else "trace"
    opts = fg_options(options or {})
    drop_log = DropLog()
    series: list[Series] = []
    if opts is not None:
        test, n = opts
        se = site_events(trace, sites)
        t = se.times(SITE)
        for op, name in enumerate(OPS[test]):
            metric = f"fg.{test}.{name}"
            if t.size != 4 * n or n <= 0:
                if t.size:
                    drop_log.add(metric, "unexpected_count", int(t[0]), int(t[-1]), int(t.size))
                continue
            i0, i1 = pair_bounds(t, n, op)
            start, end = t[i0], t[i1]
            keep = drop_gap_instances(metric, start, end, se.gaps, drop_log)
            series.append(Series(metric, "ns", start[keep], end[keep], (end - start)[keep].astype(np.float64),
                                 SITE, i0[keep], SITE, i1[keep]))
    return Result(make_table(series, source, store),
                  Summary(source=source, **summary_fields(series, drop_log)))


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any], store: Any = None) -> Result:
    return finegrained(trace, sites=sites, options=options, store=store)
