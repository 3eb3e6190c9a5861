"""Cross-validation: every metric measured from the trace and from the pins, agreeing within 2 %.

Steps (docs/methodology.md):

1. Align the clocks (:func:`analyzers._align.align`): offset, drift in ppm, one constant offset
   per site, residuals per site, unmatched markers and edges.
2. Pair instances: a trace instance spanning site occurrences ``(A, i) -> (B, k)`` is the same
   instance as the logic one spanning the matched edges ``(A, m(i)) -> (B, m(k))``.
3. Calibrate: the trace value gets ``c_B - c_A`` added — the difference of the two sites'
   constant offsets, one number per site for the whole capture (never fitted per instance); the
   raw difference is reported too. Trace intervals are *not* rescaled by the fitted drift, so a
   wrong trace clock rate shows up as disagreement.
4. ``Δ = (trace - logic) / logic`` per instance and for the means. A metric PASSes when the mean's
   ``|Δ| <= 2 %`` and at least 99 % of the paired instances agree: ``|Δ| <= 2 %``, or the two values
   differ by no more than one quantum (an instance too short to resolve 2 % is not held against it).
5. Resolution: an interval difference can be off by one trace tick plus one analyzer sample
   (``Alignment.quantum_ns``); if that bound exceeds 2 % of the median interval, the metric's
   verdict is ``UNRESOLVED`` (2 % cannot be judged with this analyzer) and the numbers are still shown.

Count-valued scalars present on both sides (frames, missed activations) must be equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trace_parsers.model import Trace

from ._align import Alignment, align
from .sites import Site, SiteEvents, load_sites, reuse_site_events, site_events
from .stats import Stats, summarize

TOLERANCE = 0.02
INSTANCE_QUANTILE = 0.99  #: share of paired instances that must be within tolerance
MAX_PLAUSIBLE_PPM = 1000.0  #: beyond this the trace's tick rate is wrong, not its crystal
#: metrics whose values are deviations near zero: a ratio is meaningless; they follow from a
#: cross-validated metric (the period) and are not judged separately
NOT_RATIO_SUFFIXES = (".jitter.abs",)


@dataclass(frozen=True)
class Agreement:
    """Trace-versus-logic agreement of one metric."""

    metric: str
    unit: str
    n_trace: int
    n_logic: int
    n_pairs: int
    unmatched_trace: int
    unmatched_logic: int
    trace_mean: float  #: calibrated
    logic_mean: float
    rel_diff_pct: float  #: (trace_mean - logic_mean) / logic_mean, calibrated
    raw_rel_diff_pct: float  #: same without calibration
    calibration_ns: float  #: c_end_site - c_start_site added to every trace instance
    instance_abs_rel_pct: Stats  #: |Δ| per paired instance, in percent
    within_tol_pct: float  #: share of paired instances with |Δ| <= tolerance
    quantum_pct: float  #: quantisation bound relative to the median logic value
    resolvable: bool
    verdict: str  #: PASS, FAIL, UNRESOLVED, NO_PAIRS

    @property
    def calibration_pct(self) -> float:
        """The site calibration relative to the logic mean: how much of the agreement rests on it."""
        return 100.0 * self.calibration_ns / self.logic_mean if self.logic_mean else float("nan")

    def as_row(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "instance_abs_rel_pct"}
        d["calibration_pct"] = self.calibration_pct
        d.update(self.instance_abs_rel_pct.as_dict("inst_abs_rel_pct_"))
        return d


@dataclass(frozen=True)
class CrossValidation:
    """Result of :func:`cross_validate`."""

    alignment: Alignment | None
    agreements: tuple[Agreement, ...] = ()
    counts: tuple[dict[str, Any], ...] = ()  #: count scalars: metric, trace, logic, verdict
    pairs: Any = None  #: pyarrow Table of paired instances (metric, instance ids, values, rel diff)
    note: str = ""
    tolerance: float = TOLERANCE

    @property
    def verdict(self) -> str:
        """PASS when every judged metric passes; FAIL if any fails; N/A when nothing was compared."""
        v = [a.verdict for a in self.agreements if a.verdict in ("PASS", "FAIL")]
        v += [c["verdict"] for c in self.counts]
        if not v:
            return "N/A"
        return "FAIL" if "FAIL" in v else "PASS"

    def table(self) -> Any:
        import pyarrow as pa

        rows = [a.as_row() for a in self.agreements]
        return pa.Table.from_pylist(rows) if rows else pa.table({"metric": pa.array([], pa.string())})

    def alignment_rows(self) -> list[dict[str, Any]]:
        if self.alignment is None:
            return []
        al = self.alignment
        return [
            {
                "site": f.site,
                "n_trace": f.n_trace,
                "n_logic": f.n_logic,
                "n_matched": f.n_matched,
                "unmatched_trace": f.unmatched_trace,
                "unmatched_logic": f.unmatched_logic,
                "site_offset_ns": f.offset_ns,
                "residual_std_ns": f.residual_std_ns,
                "residual_max_ns": f.residual_max_ns,
                "outliers": f.outliers,
                "offset_ns": al.offset_ns,
                "drift_ppm": al.drift_ppm,
                "q_trace_ns": al.q_trace_ns,
                "q_logic_ns": al.q_logic_ns,
            }
            for f in al.sites.values()
        ]


@dataclass(frozen=True)
class _Instances:
    """The site-based instances of one metric in a per-instance table."""

    unit: str
    start_site: str
    end_site: str
    value: np.ndarray
    start_idx: np.ndarray
    end_idx: np.ndarray


def _instances(table: Any) -> dict[str, _Instances]:
    """Per metric: the site-based instances of a per-instance table, in table order (the site
    and unit names are those of the metric's first instance)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: dict[str, _Instances] = {}
    if table is None or table.num_rows == 0:
        return out
    site_based = pc.fill_null(pc.not_equal(table.column("start_site"), ""), True)
    rows = np.flatnonzero(site_based.to_numpy())
    if rows.size == 0:
        return out
    metric = table.column("metric").take(pa.array(rows, pa.int64())).combine_chunks().dictionary_encode()
    codes = metric.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.argsort(codes, kind="stable")  # rows grouped by metric, in table order within
    bounds = np.searchsorted(codes[order], np.arange(len(metric.dictionary) + 1))
    cols = {c: table.column(c).to_numpy() for c in ("value", "start_idx", "end_idx")}
    for m, lo, hi in zip(metric.dictionary.to_pylist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        if hi == lo:
            continue
        sel = rows[order[lo:hi]]
        first = int(sel[0])
        out[m] = _Instances(
            str(table.column("unit")[first].as_py()),
            str(table.column("start_site")[first].as_py()),
            str(table.column("end_site")[first].as_py()),
            cols["value"][sel],
            cols["start_idx"][sel],
            cols["end_idx"][sel],
        )
    return out


def _match_pairs(
    q_start: np.ndarray, q_end: np.ndarray, ok: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pair queries ``(q_start, q_end)`` (where ``ok``) with the rows of ``(start, end)`` holding
    the same key (the last such row when several do). Returns ``(query index, row index)``.

    >>> qi, ri = _match_pairs(np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([True, True, True]),
    ...                       np.array([2, 0, 0]), np.array([3, 1, 1]))
    >>> qi.tolist(), ri.tolist()
    ([0, 2], [2, 0])
    """
    none = np.zeros(0, np.int64)
    if start.size == 0 or not ok.any():
        return none, none
    lo = min(int(start.min()), int(end.min()))
    s, e = start.astype(np.int64) - lo, end.astype(np.int64) - lo
    width = int(e.max()) + 1
    if (int(s.max()) + 1) * width >= 2**62:  # keys would not pack into int64: pair by dict
        table = {(int(a), int(b)): n for n, (a, b) in enumerate(zip(start.tolist(), end.tolist()))}
        hits = [
            (n, table[(a, b)])
            for n, (a, b, y) in enumerate(zip(q_start.tolist(), q_end.tolist(), ok.tolist()))
            if y and (a, b) in table
        ]
        return (np.array([h[0] for h in hits], np.int64), np.array([h[1] for h in hits], np.int64))
    key = s * width + e
    order = np.argsort(key, kind="stable")
    key = key[order]
    last = np.append(key[1:] != key[:-1], True)  # last row of each key (rows ascend within a key)
    key, row = key[last], order[last]
    qs, qe = q_start.astype(np.int64) - lo, q_end.astype(np.int64) - lo
    valid = ok & (qs >= 0) & (qs <= int(s.max())) & (qe >= 0) & (qe < width)
    q = np.where(valid, qs * width + qe, -1)
    pos = np.minimum(np.searchsorted(key, q), key.size - 1)
    hit = valid & (key[pos] == q)
    return np.flatnonzero(hit).astype(np.int64), row[pos[hit]].astype(np.int64)


def compare_metrics(
    trace_table: Any, logic_table: Any, alignment: Alignment, tolerance: float = TOLERANCE
) -> tuple[list[Agreement], Any]:
    """Pair the site-based instances of both tables and judge each metric."""
    import pyarrow as pa

    tr, lg = _instances(trace_table), _instances(logic_table)
    agreements: list[Agreement] = []
    pair_cols: dict[str, list[np.ndarray]] = {
        k: []
        for k in (
            "trace_start_idx",
            "logic_start_idx",
            "trace_ns",
            "trace_cal_ns",
            "logic_ns",
            "rel_diff_pct",
        )
    }
    pair_metrics: list[str] = []
    pair_counts: list[int] = []
    for m in sorted(set(tr) & set(lg)):
        if m.endswith(NOT_RATIO_SUFFIXES):
            continue
        t, g = tr[m], lg[m]
        a_site, b_site = t.start_site, t.end_site
        # trace instance (A, i) -> (B, k) is logic instance (A, m(i)) -> (B, m(k))
        mi, ok_a = alignment.map_indices(a_site, t.start_idx)
        mk, ok_b = alignment.map_indices(b_site, t.end_idx)
        ti_a, li_a = _match_pairs(mi, mk, ok_a & ok_b, g.start_idx, g.end_idx)
        fa = alignment.sites.get(a_site)
        fb = alignment.sites.get(b_site)
        cal = (fb.offset_ns if fb else 0.0) - (fa.offset_ns if fa else 0.0)
        tv = t.value[ti_a].astype(np.float64)
        lv = g.value[li_a].astype(np.float64)
        tcal = tv + cal
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = (tcal - lv) / lv
        unit = t.unit
        ref_med = float(np.median(lv)) if lv.size else float(np.median(g.value)) if g.value.size else 0.0
        qpct = 100.0 * alignment.quantum_ns / abs(ref_med) if ref_med else float("inf")
        resolvable = qpct <= 100.0 * tolerance
        if lv.size == 0:
            verdict, lm, tm, rd, raw, within = (
                "NO_PAIRS",
                float("nan"),
                float("nan"),
                float("nan"),
                float("nan"),
                float("nan"),
            )
        else:
            lm, tm = float(lv.mean()), float(tcal.mean())
            rd = 100.0 * (tm - lm) / lm if lm else float("nan")
            raw = 100.0 * (float(tv.mean()) - lm) / lm if lm else float("nan")
            # an instance agrees when within tolerance, or when the two values are closer than one
            # quantum (then the difference is below what the clocks can resolve)
            ok_inst = (np.abs(rel) <= tolerance + 1e-12) | (np.abs(tcal - lv) <= alignment.quantum_ns)
            within = 100.0 * float(np.mean(ok_inst))
            ok = abs(rd) <= 100.0 * tolerance and within >= 100.0 * INSTANCE_QUANTILE
            verdict = ("PASS" if ok else "FAIL") if resolvable else "UNRESOLVED"
        agreements.append(
            Agreement(
                m,
                unit,
                int(t.value.size),
                int(g.value.size),
                int(ti_a.size),
                int(t.value.size - ti_a.size),
                int(g.value.size - li_a.size),
                tm,
                lm,
                rd,
                raw,
                cal,
                summarize(100.0 * np.abs(rel)),
                within,
                qpct,
                bool(resolvable),
                verdict,
            )
        )
        pair_metrics.append(m)
        pair_counts.append(int(ti_a.size))
        pair_cols["trace_start_idx"].append(t.start_idx[ti_a].astype(np.int64))
        pair_cols["logic_start_idx"].append(g.start_idx[li_a].astype(np.int64))
        pair_cols["trace_ns"].append(tv)
        pair_cols["trace_cal_ns"].append(tcal)
        pair_cols["logic_ns"].append(lv)
        pair_cols["rel_diff_pct"].append(100.0 * rel)

    def column(name: str, dtype: type) -> np.ndarray:
        parts = pair_cols[name]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    rep = np.repeat(np.arange(len(pair_metrics), dtype=np.int64), pair_counts)
    pairs = pa.table(
        {
            "metric": pa.array(pair_metrics, pa.string()).take(pa.array(rep, pa.int64())),
            "trace_start_idx": pa.array(column("trace_start_idx", np.int64), pa.int64()),
            "logic_start_idx": pa.array(column("logic_start_idx", np.int64), pa.int64()),
            "trace_ns": pa.array(column("trace_ns", np.float64), pa.float64()),
            "trace_cal_ns": pa.array(column("trace_cal_ns", np.float64), pa.float64()),
            "logic_ns": pa.array(column("logic_ns", np.float64), pa.float64()),
            "rel_diff_pct": pa.array(column("rel_diff_pct", np.float64), pa.float64()),
        }
    )
    return agreements, pairs


def compare_counts(
    trace_scalars: dict[str, tuple[float, str]], logic_scalars: dict[str, tuple[float, str]]
) -> list[dict[str, Any]]:
    """Count-valued scalars measured on both sides must be equal."""
    out = []
    for m in sorted(set(trace_scalars) & set(logic_scalars)):
        (tv, tu), (lv, _) = trace_scalars[m], logic_scalars[m]
        if tu != "count":
            continue
        out.append({"metric": m, "trace": tv, "logic": lv, "verdict": "PASS" if tv == lv else "FAIL"})
    return out


def cross_validate(
    trace: Trace | None,
    capture: Trace | None,
    *,
    sites: Sequence[Site] | None = None,
    trace_table: Any = None,
    logic_table: Any = None,
    trace_scalars: dict[str, tuple[float, str]] | None = None,
    logic_scalars: dict[str, tuple[float, str]] | None = None,
    tolerance: float = TOLERANCE,
) -> CrossValidation:
    """Align, pair and judge. With either side missing the result is empty (not an error).

    ``trace_table``/``logic_table`` are the stacked per-instance tables of the analyzers; when not
    given they are computed here with every analyzer of :mod:`analyzers.run`.
    """
    from trace_parsers.errors import AnalysisError

    sites = tuple(sites) if sites is not None else load_sites()
    if trace is None or capture is None:
        return CrossValidation(None, note="trace-only capture" if capture is None else "capture-only")
    with reuse_site_events():  # the analyzers' site occurrences are also the alignment's
        if trace_table is None or logic_table is None:
            from .run import run_analyzers

            tr = run_analyzers(trace, sites, {})
            lg = run_analyzers(capture, sites, {})
            trace_table, logic_table = tr.table, lg.table
            trace_scalars, logic_scalars = tr.scalars, lg.scalars
        tse: SiteEvents = site_events(trace, sites)
        lse: SiteEvents = site_events(capture, sites)
    try:
        al = align(tse, lse)
    except AnalysisError as e:
        return CrossValidation(None, note=str(e))
    agreements, pairs = compare_metrics(trace_table, logic_table, al, tolerance)
    counts = compare_counts(trace_scalars or {}, logic_scalars or {})
    note = ""
    if abs(al.drift_ppm) > MAX_PLAUSIBLE_PPM:
        note = (
            f"the trace clock runs {al.drift_ppm:+.0f} ppm against the analyzer: more than any crystal "
            "explains — check the trace's tick rate (tick_hz)"
        )
    return CrossValidation(al, tuple(agreements), tuple(counts), pairs, note=note, tolerance=tolerance)
