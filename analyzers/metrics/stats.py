"""Statistics shared by every analyzer: one summary shape, OVERFLOW gaps and the drop log.

Every metric reports the same statistics (:class:`Stats`): ``n, mean, std, min, p1, p50, p99, max``.
Instances that overlap a data-loss gap (an ``OVERFLOW`` event of the trace) are excluded and
counted; :class:`DropLog` says what was excluded and why (MNE ``drop_log``).

Worked example::

    >>> s = summarize([10, 12, 14])
    >>> (s.n, s.mean, s.min, s.max)
    (3, 12.0, 10.0, 14.0)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace

#: The statistics every metric reports, in column order.
STAT_FIELDS = ("n", "mean", "std", "min", "p1", "p50", "p99", "max")


@dataclass(frozen=True)
class Stats:
    """Summary statistics of one metric's instances (float64; unit given by the metric)."""

    n: int
    mean: float
    std: float
    min: float
    p1: float
    p50: float
    p99: float
    max: float

    def as_dict(self, prefix: str = "") -> dict[str, float | int]:
        return {prefix + k: getattr(self, k) for k in STAT_FIELDS}


EMPTY_STATS = Stats(
    0, float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), float("nan")
)


def summarize(values: Iterable[float] | np.ndarray) -> Stats:
    """n, mean, population std, min, p1, p50, p99, max of ``values`` (NaN when empty).

    Percentiles use linear interpolation (NumPy's default).

    >>> summarize([]).n
    0
    >>> summarize([5, 5, 5]).std
    0.0
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return EMPTY_STATS
    p1, p50, p99 = np.percentile(v, [1, 50, 99])
    return Stats(
        int(v.size),
        float(v.mean()),
        float(v.std()),
        float(v.min()),
        float(p1),
        float(p50),
        float(p99),
        float(v.max()),
    )


@dataclass(frozen=True)
class Drop:
    """One exclusion: which metric, what interval, why and how many instances."""

    metric: str
    reason: str
    start_ts: int
    end_ts: int
    count: int
    core: int = -1  #: the core, where the exclusion is of one core (-1: not per core)
    #: for ``overflow_gap``: ``(start_ts, end_ts, count)`` of each gap that excluded some (the row
    #: stands for all of them, ``count`` their sum); one row per gap in ``drop_log.parquet``
    gaps: tuple[tuple[int, int, int], ...] = ()


@dataclass
class DropLog:
    """What was excluded from the statistics and why."""

    entries: list[Drop] = field(default_factory=list)

    def add(self, metric: str, reason: str, start_ts: int = -1, end_ts: int = -1, count: int = 1,
            core: int = -1) -> None:
        if count > 0:
            self.entries.append(Drop(metric, reason, int(start_ts), int(end_ts), int(count), int(core)))

    def add_gaps(self, metric: str, gaps: Sequence[tuple[int, int]], counts: np.ndarray) -> None:
        """The instances of ``metric`` each data-loss gap excluded: one entry for every gap."""
        counts = np.asarray(counts, dtype=np.int64)
        hit = np.flatnonzero(counts > 0)
        if not hit.size:
            return
        g = np.asarray(gaps, dtype=np.int64).reshape(-1, 2)[hit]
        per = tuple(zip(g[:, 0].tolist(), g[:, 1].tolist(), counts[hit].tolist()))
        total = int(counts[hit].sum())
        self.entries.append(Drop(metric, "overflow_gap", per[0][0], per[-1][1], total, -1, per))

    def count(self, metric: str | None = None, reason: str | None = None) -> int:
        return sum(
            e.count
            for e in self.entries
            if (metric is None or e.metric == metric) and (reason is None or e.reason == reason)
        )

    def extend(self, other: DropLog) -> None:
        self.entries.extend(other.entries)

    def to_rows(self) -> list[dict[str, Any]]:
        return [dataclasses.asdict(e) for e in self.entries]

    def __len__(self) -> int:
        return len(self.entries)


def overflow_gaps(trace: Trace | None) -> list[tuple[int, int]]:
    """Data-loss intervals ``(start_ts, end_ts)`` of a trace.

    An ``OVERFLOW`` row marks where the source lost packets: the gap runs from the last event
    before it to the OVERFLOW row itself (the source reports the loss when recording resumes).
    """
    if trace is None or len(trace) == 0:
        return []
    ev = trace.columns
    idx = np.flatnonzero(ev["kind"] == EventKind.OVERFLOW)
    gaps = []
    for i in idx.tolist():
        start = int(ev["ts"][i - 1]) if i > 0 else int(ev["ts"][0])
        gaps.append((start, int(ev["ts"][i])))
    return gaps


def gap_hits(start: np.ndarray, end: np.ndarray,
             gaps: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(touches, per_gap)``: which instances ``[start, end]`` touch a gap (inclusive), and how
    many instances touch each gap. Gaps in time order (starts and ends non-decreasing, as
    :func:`overflow_gaps` makes them) take two sorted searches; others one pass per gap.

    >>> t, n = gap_hits(np.array([0, 5, 20]), np.array([4, 12, 30]), [(4, 6), (10, 11), (25, 26)])
    >>> t.tolist(), n.tolist()
    ([True, True, True], [2, 1, 1])
    """
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    g = np.asarray(gaps, dtype=np.int64).reshape(-1, 2)
    per_gap = np.zeros(len(g), dtype=np.int64)
    touches = np.zeros(start.shape, dtype=bool)
    if not len(g) or not start.size:
        return touches, per_gap
    if np.any(np.diff(g[:, 0]) < 0) or np.any(np.diff(g[:, 1]) < 0):
        for k, (g0, g1) in enumerate(g.tolist()):
            hit = (start <= g1) & (end >= g0)
            per_gap[k] = int(np.count_nonzero(hit))
            touches |= hit
        return touches, per_gap
    # an instance touches the gaps from the first ending at or after its start to the last
    # starting at or before its end (none when that range is empty)
    lo = np.searchsorted(g[:, 1], start, side="left")
    hi = np.searchsorted(g[:, 0], end, side="right") - 1
    touches = lo <= hi
    diff = np.zeros(len(g) + 1, dtype=np.int64)
    np.add.at(diff, lo[touches], 1)
    np.add.at(diff, hi[touches] + 1, -1)
    return touches, np.cumsum(diff[:-1])


def in_gaps(start: np.ndarray, end: np.ndarray, gaps: Sequence[tuple[int, int]]) -> np.ndarray:
    """Boolean mask: instance ``[start, end]`` touches one of ``gaps`` (inclusive)."""
    return gap_hits(start, end, gaps)[0]


def drop_gap_instances(
    metric: str, start: np.ndarray, end: np.ndarray, gaps: Sequence[tuple[int, int]], drop_log: DropLog
) -> np.ndarray:
    """Mask of instances to keep; those across an OVERFLOW gap are logged in ``drop_log``."""
    bad, per_gap = gap_hits(start, end, gaps)
    drop_log.add_gaps(metric, gaps, per_gap)
    return ~bad


class GapDrops:
    """:func:`drop_gap_instances` over a series given batch by batch: :meth:`keep` per batch, then
    :meth:`log` once, which logs what one call on the whole series would have logged."""

    def __init__(self, metric: str, gaps: Sequence[tuple[int, int]]) -> None:
        self.metric = metric
        self.gaps = np.asarray(gaps, dtype=np.int64).reshape(-1, 2)  # converted once, not per batch
        self.counts = np.zeros(len(self.gaps), dtype=np.int64)

    def keep(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        bad, per_gap = gap_hits(start, end, self.gaps)
        self.counts += per_gap
        return ~bad

    def log(self, drop_log: DropLog) -> None:
        drop_log.add_gaps(self.metric, self.gaps, self.counts)


def pct(x: float, ref: float) -> float:
    """``100 * x / ref`` (NaN when ``ref`` is 0)."""
    return 100.0 * x / ref if ref else float("nan")
