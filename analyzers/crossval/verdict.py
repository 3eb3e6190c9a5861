"""Verdicts: one metric measured from the trace and from the pins, judged on its raw difference.

For every metric with instances on both sides (docs/methodology.md, "Cross-validation"):

1. Pair instances: a trace instance spanning site occurrences ``(A, i) -> (B, k)`` is the same
   instance as the logic one spanning the matched edges ``(A, m(i)) -> (B, m(k))``.
2. ``raw Δ = mean(trace) - mean(logic)`` with nothing added. The declared calibration
   (:mod:`.calibration`, an input from an independent source, 0 by default) gives the calibrated
   ``Δ = mean(trace + c_B - c_A) - mean(logic)``; both are reported, the verdict is on the latter
   (equal to the raw one when nothing is declared). Trace intervals are *not* rescaled by the
   fitted drift, so a wrong trace clock rate shows up as disagreement.
3. ``FAIL`` when ``|Δ| > tolerance · |mean(logic)| + quantum`` (the quantum, one trace tick plus
   one analyzer sample, is the most an interval can be off by quantisation alone), or when fewer
   than 99 % of the paired instances agree within ``tolerance · |logic| + quantum``.
4. ``INCOMPLETE`` when more instances are unpaired, on either side, than
   ``max(1, 0.5 % of that side's instances)``: lost or extra instances are never ignored.
5. ``UNRESOLVED`` when the quantum exceeds ``tolerance`` of the median instance (2 % cannot be
   judged with this analyzer) and nothing above failed.

Count-valued scalars present on both sides (frames, missed activations) must be equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..metrics.stats import Stats, summarize
from ..options import DEFAULT_TOLERANCE
from ..sites import SiteEvents
from .align import Alignment
from .calibration import Calibration

TOLERANCE = DEFAULT_TOLERANCE
INSTANCE_QUANTILE = 0.99  #: share of paired instances that must be within tolerance
UNPAIRED_SHARE = 0.005  #: unpaired instances allowed per side, relative to that side's count
#: metrics whose values are deviations near zero: a ratio is meaningless; they follow from a
#: cross-validated metric (the period) and are not judged separately
NOT_RATIO_SUFFIXES = (".jitter.abs",)
#: verdicts from worst to best; a capture takes the worst of its metrics (UNRESOLVED only when
#: nothing was judged)
SEVERITY = ("FAIL", "INCOMPLETE", "PASS", "UNRESOLVED", "N/A")


def unpaired_limit(n: int) -> int:
    """How many instances of ``n`` may stay unpaired: ``max(1, 0.5 % of n)``.

    >>> unpaired_limit(10), unpaired_limit(200), unpaired_limit(100_000)
    (1, 1, 500)
    """
    return max(1, int(UNPAIRED_SHARE * n))


def combine(verdicts: list[str]) -> str:
    """The verdict of a set of verdicts: the worst judged one; ``N/A`` when there is none.

    >>> combine(["PASS", "UNRESOLVED"]), combine(["PASS", "INCOMPLETE", "FAIL"]), combine([])
    ('PASS', 'FAIL', 'N/A')
    """
    known = [v for v in verdicts if v in SEVERITY]
    return min(known, key=SEVERITY.index) if known else "N/A"


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
    first_unmatched_trace_ns: float  #: trace time of the first unpaired trace instance (NaN: none)
    first_unmatched_logic_ns: float  #: analyzer time of the first unpaired logic instance
    trace_mean: float  #: raw (nothing added)
    trace_cal_mean: float  #: with the declared calibration
    logic_mean: float
    raw_diff_ns: float  #: trace_mean - logic_mean
    raw_rel_diff_pct: float  #: raw_diff_ns / logic_mean
    rel_diff_pct: float  #: the same after calibration: what is judged
    calibration_ns: float  #: c_start_site - c_end_site added to every trace instance
    calibration_source: str  #: where the constants come from ("none", "declared: ...")
    limit_pct: float  #: tolerance plus one quantum, relative to the logic mean
    instance_abs_rel_pct: Stats  #: |Δ| per paired instance, in percent
    within_tol_pct: float  #: share of paired instances within tolerance + one quantum
    quantum_ns: float
    quantum_pct: float  #: quantisation bound relative to the median logic value
    resolvable: bool
    verdict: str  #: PASS, FAIL, INCOMPLETE, UNRESOLVED
    reason: str = ""

    @property
    def calibration_pct(self) -> float:
        """The calibration relative to the logic mean: how much of the agreement rests on it."""
        return 100.0 * self.calibration_ns / self.logic_mean if self.logic_mean else float("nan")

    def as_row(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "instance_abs_rel_pct"}
        d["calibration_pct"] = self.calibration_pct
        d.update(self.instance_abs_rel_pct.as_dict("inst_abs_rel_pct_"))
        return d


@dataclass(frozen=True)
class Judgement:
    verdict: str
    reason: str
    within_pct: float
    resolvable: bool
    quantum_pct: float


def judge(
    trace_values: np.ndarray,
    logic_values: np.ndarray,
    quantum_ns: float,
    unmatched: tuple[int, int],
    counts: tuple[int, int],
    tolerance: float = TOLERANCE,
) -> Judgement:
    """The verdict on paired (calibrated) trace and logic values; ``unmatched`` and ``counts`` are
    ``(trace, logic)`` unpaired and total instance counts.

    >>> x = np.full(100, 1000.0)
    >>> [judge(x * f, x, 2.0, (0, 0), (100, 100)).verdict for f in (1.01, 1.03)]
    ['PASS', 'FAIL']
    >>> judge(x, x, 2.0, (0, 2), (100, 102)).verdict
    'INCOMPLETE'
    """
    tv, lv = np.asarray(trace_values, np.float64), np.asarray(logic_values, np.float64)
    ref_med = float(np.median(lv)) if lv.size else 0.0
    qpct = 100.0 * quantum_ns / abs(ref_med) if ref_med else float("inf")
    resolvable = qpct <= 100.0 * tolerance
    lost = [
        f"{u} of {n} {side} instances unpaired (limit {unpaired_limit(n)})"
        for side, u, n in zip(("trace", "logic"), unmatched, counts)
        if u > unpaired_limit(n)
    ]
    if lv.size == 0:
        why = "no instance pairs: " + "; ".join(lost)
        return Judgement("INCOMPLETE", why, float("nan"), resolvable, qpct)
    diff = float(tv.mean() - lv.mean())
    limit = tolerance * abs(float(lv.mean())) + quantum_ns
    ok_inst = np.abs(tv - lv) <= tolerance * np.abs(lv) + quantum_ns + 1e-9
    within = 100.0 * float(np.mean(ok_inst))
    if abs(diff) > limit:
        why = f"mean differs by {diff:+.6g} ns, more than {tolerance:.1%} + one quantum ({limit:.6g} ns)"
        return Judgement("FAIL", why, within, resolvable, qpct)
    if lost:
        return Judgement("INCOMPLETE", "; ".join(lost), within, resolvable, qpct)
    if not resolvable:
        why = f"one quantum ({quantum_ns:g} ns) is {qpct:.2f} % of the median: 2 % cannot be judged"
        return Judgement("UNRESOLVED", why, within, resolvable, qpct)
    if within < 100.0 * INSTANCE_QUANTILE:
        why = f"only {within:.2f} % of instances agree (need {100 * INSTANCE_QUANTILE:.0f} %)"
        return Judgement("FAIL", why, within, resolvable, qpct)
    return Judgement("PASS", "", within, resolvable, qpct)


@dataclass(frozen=True)
class _Instances:
    """The site-based instances of one metric in a per-instance table."""

    unit: str
    start_site: str
    end_site: str
    value: np.ndarray
    start_idx: np.ndarray
    end_idx: np.ndarray


#: the columns of a per-instance table :func:`_instances` reads
READ_COLUMNS = ("metric", "unit", "value", "start_site", "start_idx", "end_site", "end_idx")


@dataclass(frozen=True)
class SiteInstances:
    """What :func:`compare_metrics` reads of a per-instance table, made once
    (:func:`site_instances`): per metric, its site-based instances (24 bytes each)."""

    by_metric: dict[str, _Instances]

    @property
    def num_rows(self) -> int:
        return sum(int(i.value.size) for i in self.by_metric.values())


def site_instances(table: Any, rows: Any = None) -> SiteInstances | None:
    """The site-based instances of ``table`` (an Arrow table or a spilled one, read back batch by
    batch: never whole) per metric, as :func:`compare_metrics` pairs them. ``rows``: applied to
    the table (each batch of a spilled one) first, e.g. ``campaign.instances.site_based_rows``."""
    from ..metrics import spill

    rows = rows or (lambda t: t)
    if table is None or isinstance(table, SiteInstances):
        return table
    if not spill.is_spilled(table):
        return SiteInstances(_instances(rows(table)))
    from .._memory import release_memory

    parts: dict[str, list[_Instances]] = {}
    cols = [c for c in table.column_names if c in READ_COLUMNS]
    release_memory()  # what the analysis freed, before the instances are laid out after it
    for batch in table.batches(spill.BATCH_ROWS, columns=cols):
        for m, inst in _instances(rows(batch)).items():
            parts.setdefault(m, []).append(inst)
        del batch
        release_memory()  # the batch's pages, between the instances kept (else the heap keeps them)
    return SiteInstances({m: _stacked(p) for m, p in parts.items()})


def _stacked(parts: list[_Instances]) -> _Instances:
    """One metric's instances found batch by batch, in order (names from the first batch).
    Empties ``parts`` and joins one column at a time, letting go of that column's pieces before
    the next: the peak is the pieces plus one column (32 bytes per instance, not 48)."""
    if len(parts) == 1:
        return parts.pop()
    unit, start_site, end_site = parts[0].unit, parts[0].start_site, parts[0].end_site
    pieces = {k: [getattr(p, k) for p in parts] for k in _STACKED}
    parts.clear()
    cat = {k: np.concatenate(pieces.pop(k)) for k in _STACKED}
    return _Instances(unit, start_site, end_site, **cat)


_STACKED = ("value", "start_idx", "end_idx")


def _instances(table: Any) -> dict[str, _Instances]:
    """Per metric: the site-based instances of a per-instance table, in table order (the site
    and unit names are those of the metric's first instance)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: dict[str, _Instances] = {}
    if isinstance(table, SiteInstances):
        return dict(table.by_metric)
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


def first_missing(n: int, present: np.ndarray) -> int | None:
    """The smallest of ``0 .. n-1`` not in ``present`` (``np.setdiff1d(np.arange(n), present)[0]``
    with one byte per index, no sort), or None.

    >>> first_missing(5, np.array([0, 1, 3, 7, -1])), first_missing(2, np.array([1, 0]))
    (2, None)
    """
    todo = np.ones(n, dtype=bool)
    p = np.asarray(present, dtype=np.int64)
    todo[p[(p >= 0) & (p < n)]] = False
    i = int(np.argmax(todo)) if n else 0
    return i if n and todo[i] else None


def _first_unpaired_ns(se: SiteEvents, inst: _Instances, paired: np.ndarray) -> float:
    """Start time (in that source's clock) of the first instance not in ``paired``."""
    first = first_missing(inst.value.size, paired)
    if first is None:
        return float("nan")
    t = se.times(inst.start_site)
    i = int(inst.start_idx[first])
    return float(t[i]) if 0 <= i < t.size else float("nan")


def _one_sided(m: str, inst: _Instances, side: str, other: SiteEvents, se: SiteEvents) -> Agreement | None:
    """A metric measured on one side only: INCOMPLETE when the other side saw both of its sites
    (the instances are missing there), ``None`` when it could not see them (nothing to judge)."""
    if inst.start_site not in other.ts or inst.end_site not in other.ts:
        return None
    n = int(inst.value.size)
    first = _first_unpaired_ns(se, inst, np.zeros(0, np.int64))
    nan = float("nan")
    return Agreement(
        m, inst.unit, n if side == "trace" else 0, n if side == "logic" else 0, 0,
        n if side == "trace" else 0, n if side == "logic" else 0,
        first if side == "trace" else nan, first if side == "logic" else nan,
        nan, nan, nan, nan, nan, nan, 0.0, "none", nan, summarize(np.zeros(0)), nan, nan, nan, False,
        "INCOMPLETE", f"{n} {side} instances, none on the other side although it saw both sites",
    )  # fmt: skip


def compare_metrics(
    trace_table: Any,
    logic_table: Any,
    alignment: Alignment,
    tolerance: float = TOLERANCE,
    calibration: Calibration | None = None,
    site_events: tuple[SiteEvents, SiteEvents] | None = None,
) -> tuple[list[Agreement], Any]:
    """Pair the site-based instances of both tables and judge each metric."""
    cal_in = calibration or Calibration.none()
    tse, lse = site_events or (SiteEvents("trace"), SiteEvents("logic"))
    tr, lg = _instances(trace_table), _instances(logic_table)
    agreements: list[Agreement] = []
    pairs = _PairColumns()
    for m in sorted(set(tr) | set(lg)):
        if m.endswith(NOT_RATIO_SUFFIXES):
            continue
        if m not in lg or m not in tr:
            side = ("trace", tr[m], lse, tse) if m in tr else ("logic", lg[m], tse, lse)
            one = _one_sided(m, side[1], side[0], side[2], side[3])
            agreements += [one] if one is not None else []
            continue
        t, g = tr[m], lg[m]
        # trace instance (A, i) -> (B, k) is logic instance (A, m(i)) -> (B, m(k))
        mi, ok_a = alignment.map_indices(t.start_site, t.start_idx)
        mk, ok_b = alignment.map_indices(t.end_site, t.end_idx)
        ti, li = _match_pairs(mi, mk, ok_a & ok_b, g.start_idx, g.end_idx)
        cal = cal_in.interval_ns(t.start_site, t.end_site)
        tv, lv = t.value[ti].astype(np.float64), g.value[li].astype(np.float64)
        tcal = tv + cal
        unmatched = (int(t.value.size - ti.size), int(g.value.size - li.size))
        n = (int(t.value.size), int(g.value.size))
        j = judge(tcal, lv, alignment.quantum_ns, unmatched, n, tolerance)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = (tcal - lv) / lv
            lm = float(lv.mean()) if lv.size else float("nan")
            tm, tcm = (float(tv.mean()), float(tcal.mean())) if tv.size else (float("nan"),) * 2

        def pct(d: float, lm: float = lm) -> float:
            return 100.0 * d / lm if lm else float("nan")
        agreements.append(
            Agreement(
                m, t.unit, int(t.value.size), int(g.value.size), int(ti.size), *unmatched,
                _first_unpaired_ns(tse, t, ti), _first_unpaired_ns(lse, g, li),
                tm, tcm, lm, tm - lm, pct(tm - lm), pct(tcm - lm), cal, cal_in.source,
                pct(tolerance * abs(lm) + alignment.quantum_ns), summarize(100.0 * np.abs(rel)),
                j.within_pct, alignment.quantum_ns, j.quantum_pct, j.resolvable, j.verdict, j.reason,
            )  # fmt: skip
        )
        pairs.add(m, t.start_idx[ti], g.start_idx[li], tv, tcal, lv, 100.0 * rel)
    return agreements, pairs.table()


class _PairColumns:
    """The paired instances of every metric, stacked into one table."""

    NAMES = ("trace_start_idx", "logic_start_idx", "trace_ns", "trace_cal_ns", "logic_ns", "rel_diff_pct")

    def __init__(self) -> None:
        self.metrics: list[str] = []
        self.counts: list[int] = []
        self.cols: dict[str, list[np.ndarray]] = {k: [] for k in self.NAMES}

    def add(self, metric: str, *arrays: np.ndarray) -> None:
        self.metrics.append(metric)
        self.counts.append(int(arrays[0].size))
        for k, a in zip(self.NAMES, arrays):
            self.cols[k].append(np.asarray(a))

    def table(self) -> Any:
        import pyarrow as pa

        def column(name: str) -> Any:
            dtype, pat = (np.int64, pa.int64()) if name.endswith("_idx") else (np.float64, pa.float64())
            parts = self.cols[name]
            return pa.array(np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype), pat)

        rep = np.repeat(np.arange(len(self.metrics), dtype=np.int64), self.counts)
        names = pa.array(self.metrics, pa.string()).take(pa.array(rep, pa.int64()))
        return pa.table({"metric": names, **{k: column(k) for k in self.NAMES}})


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


