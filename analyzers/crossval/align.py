"""Clock alignment: map trace time onto logic-analyzer time by matching site events to pin edges.

Model: ``ts_logic ≈ a + b · ts_trace`` — one offset ``a`` and one drift ``b`` (reported as
``(b - 1)·1e6`` ppm), shared by every site. The fit explains the two clocks and nothing else: a
constant discrepancy at one site (a late pin store, a late trace record) is *not* absorbed by the
fit. It shows as that site's ``bias_ns`` (the mean residual of its pairs under the shared fit),
which is reported and never used to correct anything: per-site constants are inputs from an
independent source (:mod:`analyzers.crossval.calibration`), never fitted from the capture judged.

Matching (occurrence *k* of a site in the trace is edge *k* on its channel, but either side may
miss some: a wrapped TraceX buffer loses the start, an OVERFLOW loses a stretch):

1. *Anchors*: for each site, the first few trace intervals are searched for among the edge
   intervals (within the tolerance of :func:`interval_tolerance`); a unique hit fixes the index
   shift of that stretch. Without any anchor, sites seen equally often on both sides are paired
   by index.
2. A fit over the anchor pairs gives a first ``a, b``.
3. Every trace occurrence is mapped with that fit and paired with the nearest edge when it lies
   within 45 % of the local edge spacing; pairs must be one-to-one and monotonic.
4. The final fit leaves out pairs whose residual is farther than ``max(6·1.4826·MAD, 3·quantum)``
   from the median residual (iterated); then every occurrence is paired again under the final
   fit. Outlying pairs stay paired (and are counted): a real disagreement must show in the
   metrics, not vanish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from trace_parsers.errors import AnalysisError

from ..sites import SiteEvents

PATTERN = 8  #: intervals per anchor pattern


@dataclass(frozen=True)
class SiteFit:
    """Per-site outcome of the alignment."""

    site: str
    n_trace: int
    n_logic: int
    n_matched: int
    unmatched_trace: int
    unmatched_logic: int
    bias_ns: float  #: mean residual of this site's pairs under the shared fit (reported, never applied)
    residual_std_ns: float  #: spread of this site's residuals under the shared fit
    residual_max_ns: float  #: max |residual| under the shared fit
    outliers: int = 0  #: pairs beyond the robust limit (kept as pairs, not used for the fit)


@dataclass(frozen=True)
class Alignment:
    """``ts_logic ≈ offset_ns + slope · ts_trace`` (one offset and one drift for every site)."""

    offset_ns: float
    slope: float
    n_pairs: int
    sites: dict[str, SiteFit] = field(default_factory=dict)
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    q_trace_ns: float = 1.0  #: trace timestamp quantum (one tick)
    q_logic_ns: float = 1.0  #: analyzer quantum (one sample period)
    outliers: int = 0  #: pairs left out of the fit as outliers (still paired)

    @property
    def drift_ppm(self) -> float:
        return (self.slope - 1.0) * 1e6

    @property
    def quantum_ns(self) -> float:
        """Worst-case error of one interval difference: one trace tick plus one sample."""
        return self.q_trace_ns + self.q_logic_ns

    def to_logic(self, ts_trace: np.ndarray) -> np.ndarray:
        """Trace times mapped onto the analyzer's clock by the shared fit."""
        return self.offset_ns + self.slope * np.asarray(ts_trace, dtype=np.float64)

    def map_index(self, site: str) -> dict[int, int]:
        """Trace occurrence index -> logic edge index for ``site``."""
        it, il = self.pairs.get(site, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        return dict(zip(it.tolist(), il.tolist()))

    def map_indices(self, site: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`map_index` for an array: the logic edge index of each trace occurrence in
        ``idx`` (-1 where it has none) and the mask of those that have one.

        >>> al = Alignment(0.0, 1.0, 2, pairs={"s": (np.array([0, 2]), np.array([1, 4]))})
        >>> [a.tolist() for a in al.map_indices("s", np.array([2, 1, 0]))]
        [[4, -1, 1], [True, False, True]]
        """
        idx = np.asarray(idx, dtype=np.int64)
        it, il = self.pairs.get(site, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        it, il = np.asarray(it, dtype=np.int64), np.asarray(il, dtype=np.int64)
        if it.size == 0:
            return np.full(idx.size, -1, np.int64), np.zeros(idx.size, dtype=bool)
        if it.size > 1 and not bool(np.all(it[1:] > it[:-1])):
            # as in the dict of map_index: the last pair of a repeated occurrence wins
            it, last = np.unique(it[::-1], return_index=True)
            il = il[::-1][last]
        pos = np.minimum(np.searchsorted(it, idx), it.size - 1)
        ok = it[pos] == idx
        return np.where(ok, il[pos], -1), ok


def interval_tolerance(d: np.ndarray, quantum_ns: float) -> np.ndarray:
    """How far an edge interval may differ from its trace interval and still match: two quanta,
    40 ns of instrumentation spread, and 0.5 % for clock drift and per-site effects."""
    return 2.0 * quantum_ns + 40.0 + 5e-3 * np.abs(d)


def _anchor(t: np.ndarray, e: np.ndarray, quantum_ns: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Unique index shift k with t[i] <-> e[i + k] from the first PATTERN trace intervals."""
    if t.size < 3 or e.size < 3:
        return None
    dt, de = np.diff(t).astype(np.float64), np.diff(e).astype(np.float64)
    p = min(PATTERN, dt.size)
    if de.size < p:
        return None
    # try pattern windows from the start and the end of the trace: a suffix survives a wrap
    for s0 in sorted({0, dt.size - p}):
        pat = dt[s0 : s0 + p]
        if np.ptp(pat) <= float(interval_tolerance(np.array([pat.mean()]), quantum_ns)[0]):
            continue  # constant intervals: every shift matches, no anchor from this window
        win = np.lib.stride_tricks.sliding_window_view(de, p)
        ok = np.all(np.abs(win - pat) <= interval_tolerance(pat, quantum_ns), axis=1)
        hits = np.flatnonzero(ok)
        if hits.size != 1:
            continue
        k = int(hits[0]) - s0
        i = np.arange(max(0, -k), min(t.size, e.size - k))
        return i, i + k
    return None


def _fit(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """Least squares ``y = a + b·x`` over the pairs of every group together; returns ``(a, b)``.

    >>> x = np.array([0.0, 1e6, 2e6]); a, b = _fit([(x, 5.0 + 1.00005 * x)])
    >>> round(a, 6), round((b - 1) * 1e6, 3)
    (5.0, 50.0)
    """
    xs = [x for x, _ in groups if x.size]
    if not xs:
        return 0.0, 1.0
    x = np.concatenate(xs)
    d = np.concatenate([y - x for x, y in groups if x.size])  # fit y - x: keeps the digits
    mx, md = float(np.sum(x) / x.size), float(np.sum(d) / d.size)
    xc = x - mx
    sxx = float(np.sum(xc * xc))  # not np.dot: BLAS threads would change the last digits
    beta = float(np.sum(xc * (d - md))) / sxx if sxx > 0 else 0.0  # slope of (y - x) on x: b - 1
    return md - beta * mx, 1.0 + beta


def align(trace: SiteEvents, logic: SiteEvents, sites: Sequence[str] | None = None) -> Alignment:
    """Fit the trace clock to the analyzer clock from the sites both sources saw.

    Raises :class:`~trace_parsers.errors.AnalysisError` when no site has events on both sides.
    """
    names = [
        s
        for s in (sites or sorted(set(trace.ts) & set(logic.ts)))
        if trace.count(s) and logic.count(s)
    ]
    if not names:
        raise AnalysisError(
            "no instrumentation site has events in both the trace and the capture: "
            f"trace sites {sorted(trace.ts)}, capture channels {sorted(logic.ts)}"
        )
    q = trace.tick_ns + logic.tick_ns
    t_f = {s: trace.times(s).astype(np.float64) for s in names}
    e_f = {s: logic.times(s).astype(np.float64) for s in names}

    # 1-2: anchors and a first fit
    found = {s: _anchor(trace.times(s), logic.times(s), q) for s in names}
    anchors = {s: v for s, v in found.items() if v is not None}
    if anchors:
        a0, b0 = _fit([(t_f[s][i], e_f[s][j]) for s, (i, j) in anchors.items()])
    elif same := [s for s in names if t_f[s].size == e_f[s].size]:
        # no distinctive pattern: sites seen equally often on both sides are paired by index
        # (this also recovers a trace whose clock rate is grossly wrong, which patterns cannot)
        a0, b0 = _fit([(t_f[s], e_f[s]) for s in same])
    else:
        a0, b0 = float(np.median([e_f[s][0] - t_f[s][0] for s in names])), 1.0

    # 3: pair every occurrence with the nearest edge under the first fit
    pairs = {s: _pair_nearest(t_f[s], e_f[s], a0 + b0 * t_f[s], q) for s in names}
    a, b, lim = _robust_fit(names, t_f, e_f, pairs, (a0, b0), q)
    # re-pair under the final fit and keep outlying pairs, so a real disagreement shows up in the
    # metrics instead of being discarded
    fits: dict[str, SiteFit] = {}
    final_pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for s in names:
        it, jl = _pair_nearest(t_f[s], e_f[s], a + b * t_f[s], q)
        r = e_f[s][jl] - (a + b * t_f[s][it])
        final_pairs[s] = (it, jl)
        fits[s] = SiteFit(
            s,
            int(t_f[s].size),
            int(e_f[s].size),
            int(it.size),
            int(t_f[s].size - it.size),
            int(e_f[s].size - it.size),
            float(r.mean()) if r.size else float("nan"),
            float(r.std()) if r.size else float("nan"),
            float(np.abs(r).max()) if r.size else float("nan"),
            int(np.count_nonzero(np.abs(r) > lim)),
        )
    n = sum(f.n_matched for f in fits.values())
    outliers = sum(f.outliers for f in fits.values())
    return Alignment(float(a), float(b), n, fits, final_pairs, trace.tick_ns, logic.tick_ns, outliers)


def _robust_fit(
    names: Sequence[str],
    t_f: dict[str, np.ndarray],
    e_f: dict[str, np.ndarray],
    pairs: dict[str, tuple[np.ndarray, np.ndarray]],
    first: tuple[float, float],
    q: float,
) -> tuple[float, float, float]:
    """Refit ``a, b`` leaving out pairs farther than ``max(6·1.4826·MAD, 3·quantum)`` from the fit,
    until the kept set settles (outliers do not move the clock model). Returns ``(a, b, limit)``."""
    keep = {s: np.ones(pairs[s][0].size, dtype=bool) for s in names}
    (a, b), lim = first, 3.0 * q
    for _ in range(5):
        groups = [(t_f[s][pairs[s][0][keep[s]]], e_f[s][pairs[s][1][keep[s]]]) for s in names]
        if sum(g[0].size for g in groups) == 0:
            raise AnalysisError("no trace occurrence could be paired with a pin edge")
        a, b = _fit(groups)
        res_all = {s: e_f[s][pairs[s][1]] - (a + b * t_f[s][pairs[s][0]]) for s in names}
        flat = np.concatenate([res_all[s][keep[s]] for s in names])
        mid = float(np.median(flat)) if flat.size else 0.0
        mad = float(np.median(np.abs(flat - mid))) if flat.size else 0.0
        lim = max(6.0 * 1.4826 * mad, 3.0 * q)
        new = {s: np.abs(res_all[s] - mid) <= lim for s in names}
        if all(np.array_equal(new[s], keep[s]) for s in names):
            break
        keep = new
    return a, b, lim


def _pair_nearest(t: np.ndarray, e: np.ndarray, pred: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Pair each predicted time with the nearest edge if within 45 % of the local edge spacing
    (at least 3 quanta); one-to-one and monotonic."""
    if e.size == 0 or t.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if e.size == 1:
        j = np.zeros(t.size, dtype=np.int64)
    else:
        j = np.clip(np.searchsorted(e, pred), 1, e.size - 1)
        j = np.where(np.abs(e[j - 1] - pred) <= np.abs(e[j] - pred), j - 1, j)
    gap = np.diff(e) if e.size > 1 else np.array([np.inf])
    spacing = np.minimum(np.append(gap, np.inf)[j], np.insert(gap, 0, np.inf)[j])
    res = e[j] - pred
    ok = np.abs(res) <= np.maximum(0.45 * spacing, 3 * q)
    it = np.flatnonzero(ok)
    jl = j[ok]
    if it.size > 1 and not bool(np.all(jl[1:] > jl[:-1])):  # (usually one-to-one and monotonic)
        # one-to-one: for each edge keep the closest trace occurrence
        order = np.lexsort((np.abs(res[ok]), jl))
        it, jl = it[order], jl[order]
        first = np.ones(jl.size, dtype=bool)
        first[1:] = jl[1:] != jl[:-1]
        it, jl = it[first], jl[first]
        o = np.argsort(it)
        it, jl = it[o], jl[o]
        mono = np.ones(it.size, dtype=bool)
        mono[1:] = np.diff(jl) > 0
        it, jl = it[mono], jl[mono]
    return it.astype(np.int64), jl.astype(np.int64)
