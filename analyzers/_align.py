"""Clock alignment: map trace time onto logic-analyzer time by matching site events to pin edges.

Model (house style §4.4): ``ts_logic ≈ a + b · ts_trace + c_site`` — one offset ``a``, one drift
``b`` (reported as ``(b - 1)·1e6`` ppm) and one constant per site ``c_site`` (the instrumentation
distance between the trace timestamp and the pin store, constant by construction, qemu-lab.md §6).

Matching (occurrence *k* of a site in the trace is edge *k* on its channel, but either side may
miss some: a wrapped TraceX buffer loses the start, an OVERFLOW loses a stretch):

1. *Anchors*: for each site, the first few trace intervals are searched for among the edge
   intervals (within the tolerance of :func:`interval_tolerance`); a unique hit fixes the index
   shift of that stretch. Without any anchor, sites seen equally often on both sides are paired
   by index.
2. A fit over the anchor pairs gives a first ``a, b, c_site``.
3. Every trace occurrence is mapped with that fit and paired with the nearest edge when it lies
   within 45 % of the local edge spacing; pairs must be one-to-one and monotonic.
4. The final fit leaves out pairs farther than ``max(6·1.4826·MAD, 3·quantum)`` from the fit
   (iterated); then every occurrence is paired again under the final fit. Outlying pairs stay
   paired (and are counted): a real disagreement must show in the metrics, not vanish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from trace_parsers.errors import AnalysisError

from .sites import SiteEvents

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
    offset_ns: float  #: c_site: constant offset of this site relative to the global fit
    residual_std_ns: float  #: spread of the residuals after removing a, b and c_site
    residual_max_ns: float  #: max |residual| after removing a, b and c_site
    outliers: int = 0  #: pairs beyond the robust limit (kept as pairs, not used for the fit)


@dataclass(frozen=True)
class Alignment:
    """``ts_logic ≈ offset_ns + slope · ts_trace + sites[s].offset_ns``."""

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

    def to_logic(self, site: str, ts_trace: np.ndarray) -> np.ndarray:
        c = self.sites[site].offset_ns if site in self.sites else 0.0
        return self.offset_ns + self.slope * np.asarray(ts_trace, dtype=np.float64) + c

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


def _fit(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float, np.ndarray]:
    """Least squares ``y = a + b·x + c_g`` (c_g sums to zero over groups by taking a = median c);
    returns ``(a, b, c per group)``."""
    sxx = sxy = 0.0
    means = []
    for x, y in groups:
        if x.size == 0:
            means.append((0.0, 0.0))
            continue
        mx, my = float(x.mean()), float((y - x).mean())
        xc = x - mx
        sxx += float(np.sum(xc * xc))  # not np.dot: BLAS threads would change the last digits
        sxy += float(np.sum(xc * ((y - x) - my)))
        means.append((mx, my))
    beta = sxy / sxx if sxx > 0 else 0.0  # slope of (y - x) on x, i.e. b - 1
    cs = np.array([my - beta * mx for mx, my in means])
    present = np.array([x.size > 0 for x, _ in groups])
    a = float(np.median(cs[present])) if present.any() else 0.0
    return a, 1.0 + beta, cs - a


def align(trace: SiteEvents, logic: SiteEvents, sites: Sequence[str] | None = None) -> Alignment:
    """Fit the trace clock to the analyzer clock from the sites both sources saw.

    Raises :class:`~trace_parsers.errors.AnalysisError` when no site has events on both sides.
    """
    names = [
        s
        for s in (sites or sorted(set(trace.ts) & set(logic.ts)))
        if trace.times(s).size and logic.times(s).size
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
        groups = [(t_f[s][i], e_f[s][j]) for s, (i, j) in anchors.items()]
        a0, b0, c = _fit(groups)
        cmap = dict(zip(anchors, c.tolist()))
    elif same := [s for s in names if t_f[s].size == e_f[s].size]:
        # no distinctive pattern: sites seen equally often on both sides are paired by index
        # (this also recovers a trace whose clock rate is grossly wrong, which patterns cannot)
        a0, b0, c = _fit([(t_f[s], e_f[s]) for s in same])
        cmap = dict(zip(same, c.tolist()))
    else:
        a0 = float(np.median([e_f[s][0] - t_f[s][0] for s in names]))
        b0, cmap = 1.0, {}

    # 3: pair every occurrence with the nearest edge under the first fit
    pairs = {s: _pair_nearest(t_f[s], e_f[s], a0 + b0 * t_f[s] + cmap.get(s, 0.0), q) for s in names}

    # 4: robust fit (outliers do not move the clock model) ...
    keep = {s: np.ones(pairs[s][0].size, dtype=bool) for s in names}
    a, b, c = a0, b0, np.zeros(len(names))
    lim = 3.0 * q
    for _ in range(5):
        groups = [(t_f[s][pairs[s][0][keep[s]]], e_f[s][pairs[s][1][keep[s]]]) for s in names]
        if sum(g[0].size for g in groups) == 0:
            raise AnalysisError("no trace occurrence could be paired with a pin edge")
        a, b, c = _fit(groups)
        res_all = [e_f[s][pairs[s][1]] - (a + b * t_f[s][pairs[s][0]] + c[k]) for k, s in enumerate(names)]
        flat = np.concatenate([r[keep[s]] for r, s in zip(res_all, names)])
        mad = float(np.median(np.abs(flat - np.median(flat)))) if flat.size else 0.0
        lim = max(6.0 * 1.4826 * mad, 3.0 * q)
        new = {s: np.abs(r) <= lim for r, s in zip(res_all, names)}
        if all(np.array_equal(new[s], keep[s]) for s in names):
            break
        keep = new
    # ... but pairing does: re-pair under the final fit and keep outlying pairs, so a real
    # disagreement shows up in the metrics instead of being discarded
    fits: dict[str, SiteFit] = {}
    final_pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    outliers = 0
    for k, s in enumerate(names):
        it, jl = _pair_nearest(t_f[s], e_f[s], a + b * t_f[s] + c[k], q)
        r = e_f[s][jl] - (a + b * t_f[s][it] + c[k])
        n_out = int(np.count_nonzero(np.abs(r) > lim))
        outliers += n_out
        final_pairs[s] = (it, jl)
        fits[s] = SiteFit(
            s,
            int(t_f[s].size),
            int(e_f[s].size),
            int(it.size),
            int(t_f[s].size - it.size),
            int(e_f[s].size - it.size),
            float(c[k]),
            float(r.std()) if r.size else float("nan"),
            float(np.abs(r).max()) if r.size else float("nan"),
            n_out,
        )
    n = sum(f.n_matched for f in fits.values())
    return Alignment(float(a), float(b), n, fits, final_pairs, trace.tick_ns, logic.tick_ns, outliers)


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
