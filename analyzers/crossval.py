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
from .sites import Site, SiteEvents, load_sites, site_events
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


def _instances(table: Any) -> dict[str, dict[str, np.ndarray]]:
    """Per metric: columns of the site-based instances of a per-instance table."""
    out: dict[str, dict[str, np.ndarray]] = {}
    if table is None or table.num_rows == 0:
        return out
    cols = {
        c: table.column(c).to_numpy(zero_copy_only=False)
        for c in ("metric", "value", "unit", "start_site", "start_idx", "end_site", "end_idx")
    }
    site_based = cols["start_site"] != ""
    for m in np.unique(cols["metric"][site_based]).tolist():
        sel = site_based & (cols["metric"] == m)
        out[m] = {k: v[sel] for k, v in cols.items()}
    return out


def compare_metrics(
    trace_table: Any, logic_table: Any, alignment: Alignment, tolerance: float = TOLERANCE
) -> tuple[list[Agreement], Any]:
    """Pair the site-based instances of both tables and judge each metric."""
    import pyarrow as pa

    tr, lg = _instances(trace_table), _instances(logic_table)
    agreements: list[Agreement] = []
    pair_cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "metric",
            "trace_start_idx",
            "logic_start_idx",
            "trace_ns",
            "trace_cal_ns",
            "logic_ns",
            "rel_diff_pct",
        )
    }
    for m in sorted(set(tr) & set(lg)):
        if m.endswith(NOT_RATIO_SUFFIXES):
            continue
        t, g = tr[m], lg[m]
        a_site, b_site = str(t["start_site"][0]), str(t["end_site"][0])
        ma, mb = alignment.map_index(a_site), alignment.map_index(b_site)
        lkey = {(int(i), int(k)): n for n, (i, k) in enumerate(zip(g["start_idx"], g["end_idx"]))}
        ti, li = [], []
        for n, (i, k) in enumerate(zip(t["start_idx"].tolist(), t["end_idx"].tolist())):
            if i in ma and k in mb and (ma[i], mb[k]) in lkey:
                ti.append(n)
                li.append(lkey[(ma[i], mb[k])])
        ti_a, li_a = np.asarray(ti, dtype=np.int64), np.asarray(li, dtype=np.int64)
        fa = alignment.sites.get(a_site)
        fb = alignment.sites.get(b_site)
        cal = (fb.offset_ns if fb else 0.0) - (fa.offset_ns if fa else 0.0)
        tv = t["value"][ti_a].astype(np.float64)
        lv = g["value"][li_a].astype(np.float64)
        tcal = tv + cal
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = (tcal - lv) / lv
        unit = str(t["unit"][0])
        ref_med = (
            float(np.median(lv)) if lv.size else float(np.median(g["value"])) if g["value"].size else 0.0
        )
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
                int(t["value"].size),
                int(g["value"].size),
                int(ti_a.size),
                int(t["value"].size - ti_a.size),
                int(g["value"].size - li_a.size),
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
        pair_cols["metric"] += [m] * int(ti_a.size)
        pair_cols["trace_start_idx"] += t["start_idx"][ti_a].tolist()
        pair_cols["logic_start_idx"] += g["start_idx"][li_a].tolist()
        pair_cols["trace_ns"] += tv.tolist()
        pair_cols["trace_cal_ns"] += tcal.tolist()
        pair_cols["logic_ns"] += lv.tolist()
        pair_cols["rel_diff_pct"] += (100.0 * rel).tolist()
    pairs = pa.table(
        {
            "metric": pa.array(pair_cols["metric"], pa.string()),
            "trace_start_idx": pa.array(pair_cols["trace_start_idx"], pa.int64()),
            "logic_start_idx": pa.array(pair_cols["logic_start_idx"], pa.int64()),
            "trace_ns": pa.array(pair_cols["trace_ns"], pa.float64()),
            "trace_cal_ns": pa.array(pair_cols["trace_cal_ns"], pa.float64()),
            "logic_ns": pa.array(pair_cols["logic_ns"], pa.float64()),
            "rel_diff_pct": pa.array(pair_cols["rel_diff_pct"], pa.float64()),
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
