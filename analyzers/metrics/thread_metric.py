"""Thread-Metric rates from the ``tm.count`` / ``tm.isr`` / ``tm.report`` sites (firmware/thread_metric).

Every counting thread of a Thread-Metric test fires ``tm.count`` on every ``N``-th iteration
(``N`` = option ``CT_TM_SITE_EVERY``); with ``T`` counting threads (``CT_TM_THREADS``) the ``T``
sites of one *round* (N iterations of every thread) fire in a fixed order of thread ids
(``CT_TM_ORDER``, e.g. ``"0-4-3-2-1"``). Per-instance metrics, all intervals in ns so that the
trace and the pins are judged on raw differences, each spanning site occurrences:

- ``tm.round`` — ``tm.count`` occurrence ``k -> k+T`` for ``k = 0, T, 2T, ...``: ``T * N``
  iterations of the whole test.
- ``tm.thread<id>.round`` (``T > 1``) — ``k -> k+T`` for every ``k`` in that thread's slot: ``N``
  iterations of that thread.
- ``tm.isr.interval`` — ``tm.isr`` ``k -> k+1``: ``N`` runs of the interrupt handler.
- ``tm.period`` — ``tm.report`` ``k -> k+1``: one reporting period.

Scalars (from the instance means): ``tm.rate`` (iterations per second of the source's clock, all
threads), ``tm.ns_per_iter`` (ns per iteration of one thread = instructions per test cycle at QEMU
``-icount shift=0``), the same per thread and for the handler, and the determinism check
``tm.determinism.bad_rounds``: rounds that do not hold exactly one site of each thread (the suite's
"all counters within one count" at the resolution of the sites: a thread ``N/2`` iterations or more
behind or ahead shows; ``tm.determinism.ok`` is 1 or 0). The firmware prints the suite's own check
(``CT_INFO tm.determinism.errors``) from the counters themselves.

>>> import numpy as np
>>> [a.tolist() for a in rounds(np.arange(12), 5)]
[[0, 5], [5, 10]]
>>> [a.tolist() for a in rounds(np.arange(12), 5, slot=1, stride=5)]
[[1, 6], [6, 11]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_parsers.errors import AnalysisError
from trace_parsers.model import Trace

from ..sites import Site, is_logic, load_sites, site_events
from .base import Result, Series, Summary, make_table, summary_fields
from .stats import DropLog, drop_gap_instances

COUNT, ISR, REPORT = "tm.count", "tm.isr", "tm.report"


def tm_options(options: dict[str, Any]) -> tuple[int, int, list[int]] | None:
    """``(N, T, order)`` from run.json options, or None when the run is not a Thread-Metric run."""
    if "CT_TM_SITE_EVERY" not in options:
        return None
    n = int(options["CT_TM_SITE_EVERY"])
    t = int(options.get("CT_TM_THREADS", 1))
    order = [int(x) for x in str(options.get("CT_TM_ORDER", "-".join(map(str, range(t))))).split("-")]
    if n < 1 or t < 1 or len(order) != t or sorted(order) != list(range(t)):
        raise AnalysisError(
            f"CT_TM_SITE_EVERY={n}, CT_TM_THREADS={t}, CT_TM_ORDER={order}: expected N >= 1 and an "
            f"order listing each of the {t} thread ids once",
            code="BAD_OPTION",
        )
    return n, t, order


def rounds(
    t: np.ndarray, step: int, slot: int = 0, stride: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end occurrence indices ``k -> k+step`` for ``k = slot, slot+stride, ...``."""
    stride = step if stride is None else stride
    start = np.arange(slot, t.size - step, stride, dtype=np.int64)
    return start, start + step


def _at(t: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``t[idx]``; for evenly spaced ``idx`` (:func:`rounds`) a strided view of ``t``, not a copy
    (a long capture's rounds are millions of instances).

    >>> t = np.arange(10) * 10
    >>> _at(t, np.array([1, 4, 7])).tolist(), np.shares_memory(_at(t, np.array([1, 4, 7])), t)
    ([10, 40, 70], True)
    >>> _at(t, np.array([1, 4, 8])).tolist()
    [10, 40, 80]
    """
    n = int(idx.size)
    if n >= 2:
        lo, step = int(idx[0]), int(idx[1] - idx[0])
        if step > 0 and int(idx[-1]) - lo == step * (n - 1) and bool(np.all(np.diff(idx) == step)):
            return t[lo: int(idx[-1]) + 1: step]
    return t[idx]


def _series(
    metric: str, site: str, t: np.ndarray, i0: np.ndarray, i1: np.ndarray, se, log: DropLog
) -> Series:
    start, end = _at(t, i0), _at(t, i1)
    keep = drop_gap_instances(metric, start, end, se.gaps, log)
    if keep.all():  # nothing dropped: the instances without copies of their times
        return Series(metric, "ns", start, end, (end - start).astype(np.float64), site, i0, site, i1)
    return Series(
        metric,
        "ns",
        start[keep],
        end[keep],
        (end - start)[keep].astype(np.float64),
        site,
        i0[keep],
        site,
        i1[keep],
    )


def round_sizes(count_ts: np.ndarray, t: int) -> np.ndarray:
    """Sizes of the rounds: ``tm.count`` sites grouped by time, a new round starting after a gap
    longer than the geometric mean of a typical gap between rounds and a typical gap inside one.
    In a deterministic run every complete round holds one site of each of the ``t`` threads; the
    first and last round may be cut by the start and end of the recording.

    >>> round_sizes(np.array([0, 1, 2, 100, 101, 102, 200, 201, 300, 301, 302]), 3).tolist()
    [3, 3, 2, 3]
    """
    ts = np.asarray(count_ts, dtype=np.float64)
    if t < 2 or ts.size < 2 * t:
        return np.ones(ts.size, dtype=np.int64)
    g = np.diff(ts)
    hi = float(np.quantile(g, 1.0 - 0.5 / t))  # inside the 1/t share of gaps between rounds
    lo = float(np.quantile(g, 0.5 * (t - 1) / t))  # inside the share of gaps within a round
    cut = np.flatnonzero(g > np.sqrt(max(hi, 1e-9) * max(lo, 1e-9)))
    return np.diff(np.concatenate([[0], cut + 1, [ts.size]])).astype(np.int64)


def bad_rounds(count_ts: np.ndarray, t: int) -> int:
    """Complete rounds (not the first or last) without exactly one site per thread: a thread fell
    behind (or ran ahead) by about N/2 iterations or more; 0 in a deterministic run.

    >>> bad_rounds(np.array([0, 1, 2, 100, 101, 102, 200, 201, 300, 301, 302, 400, 401, 402]), 3)
    1
    """
    sizes = round_sizes(count_ts, t)[1:-1]
    return int(np.count_nonzero(sizes != t))


@dataclass(frozen=True)
class ThreadMetricSummary(Summary):
    site_every: int = 0
    threads: int = 0
    order: tuple[int, ...] = field(default_factory=tuple)


def thread_metric(
    trace: Trace, *, sites: Sequence[Site] | None = None, options: dict[str, Any] | None = None,
    store: Any = None,
) -> Result:
    """Thread-Metric metrics of a trace or logic capture (empty for other runs; ``store``: the
    source's spill the table goes to, or None: in memory)."""
    sites = tuple(sites) if sites is not None else load_sites()
    source = "logic" if is_logic(trace) else "trace"
    opts = tm_options(options or {})
    if opts is None:
        return Result(make_table([], source, store), ThreadMetricSummary(source=source))
    n, t, order = opts
    se = site_events(trace, sites)
    log = DropLog()
    series: list[Series] = []
    scalars: dict[str, tuple[float, str]] = {}
    tc = se.times(COUNT)
    series.append(_series("tm.round", COUNT, tc, *rounds(tc, t), se, log))
    if t > 1:
        for slot, tid in enumerate(order):
            series.append(_series(f"tm.thread{tid}.round", COUNT, tc, *rounds(tc, t, slot, t), se, log))
    ti = se.times(ISR)
    series.append(_series("tm.isr.interval", ISR, ti, *rounds(ti, 1), se, log))
    tr = se.times(REPORT)
    series.append(_series("tm.period", REPORT, tr, *rounds(tr, 1), se, log))
    for s in series:
        if not len(s):
            continue
        mean = float(np.mean(s.value))
        iters = n * (t if s.metric == "tm.round" else 1)
        base = s.metric.rsplit(".", 1)[0]
        if s.metric == "tm.period":
            continue
        scalars[f"{base}.rate"] = (iters * 1e9 / mean, "1/s")
        scalars[f"{base}.ns_per_iter"] = (mean / iters, "ns")
    bad = bad_rounds(tc, t)
    scalars["tm.determinism.bad_rounds"] = (float(bad), "count")
    scalars["tm.determinism.ok"] = (float(bad == 0), "count")
    fields = summary_fields(series, log)
    summary = ThreadMetricSummary(
        source=source, scalars=scalars, site_every=n, threads=t, order=tuple(order), **fields
    )
    return Result(make_table(series, source, store), summary)


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any], store: Any = None) -> Result:
    return thread_metric(trace, sites=sites, options=options, store=store)
