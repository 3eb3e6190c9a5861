"""Calibration run (``firmware/apps/calib``): a fixed loop between two sites.

The calib app toggles site ``calib.loop`` once per iteration of its site-cost loop
(``CT_ITERATIONS`` toggles), then twice per iteration of the fixed loop (a site, a
``2·CT_CALIB_LOOP``-instruction spin, a site). Metric:

- ``calib.loop`` — occurrence ``N + 2k`` to ``N + 2k + 1`` of site ``calib.loop`` (``N`` =
  ``CT_ITERATIONS``): the spin plus the cost of one site. Both sources; cross-validated — a known
  interval that checks the clock conversion end to end. A source that did not record exactly
  ``3·N`` occurrences yields no instances (drop-log reason ``unexpected_count``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from trace_parsers.model import Trace

from ..sites import Site, is_logic, load_sites, site_events
from .base import Result, Series, Summary, make_table, summary_fields
from .stats import DropLog, drop_gap_instances

LOOP = "calib.loop"


def calib_loop(trace: Trace, *, sites: Sequence[Site] | None = None, iterations: int = 100,
               store: Any = None) -> Result:
    """The fixed-loop intervals of a calib run (trace or logic capture; ``store``: the source's
    spill the table goes to, or None: in memory)."""
    sites = tuple(sites) if sites is not None else load_sites()
    se = site_events(trace, sites)
    drop_log = DropLog()
    series: list[Series] = []
    t = se.times("calib.loop")
    n = int(iterations)
    if t.size == 3 * n and n > 0:
        i = n + 2 * np.arange(n, dtype=np.int64)
        start, end = t[i], t[i + 1]
        keep = drop_gap_instances(LOOP, start, end, se.gaps, drop_log)
        series.append(
            Series(
                LOOP,
                "ns",
                start[keep],
                end[keep],
                (end - start)[keep].astype(np.float64),
                "calib.loop",
                i[keep],
                "calib.loop",
                i[keep] + 1,
            )
        )
    elif t.size:
        drop_log.add(LOOP, "unexpected_count", int(t[0]), int(t[-1]), int(t.size))
    source = "logic" if is_logic(trace) else "trace"
    return Result(make_table(series, source, store),
                  Summary(source=source, **summary_fields(series, drop_log)))


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any], store: Any = None) -> Result:
    return calib_loop(trace, sites=sites, iterations=int(options.get("CT_ITERATIONS", 100)), store=store)
