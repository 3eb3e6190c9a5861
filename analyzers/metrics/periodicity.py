"""Periodicity of a periodic task: activation times against the nominal period.

For each periodic site (``periodic.fast``, ``periodic.slow``; one ``ct_site`` per activation):

- ``periodic.<name>.period`` — per instance: time between consecutive activations (ns).
  Measured on both sources; cross-validated.
- ``periodic.<name>.jitter.abs`` — per instance: ``|period - nominal|`` (ns); its statistics give
  p50/p99/max of the absolute deviation.
- scalars: ``periodic.<name>.period_error`` (mean period - nominal, ns), ``…period_error_pct``,
  ``…drift_ppm`` (slope of a least-squares line through activation time vs. activation number,
  relative to the nominal period), ``…jitter.std`` (population std of the periods, ns),
  ``…missed`` (activations that never happened: an interval of ``k`` nominal periods, ``k >= 2``
  after rounding, counts ``k - 1`` and is excluded from the statistics, with a drop-log entry).

The nominal period comes from ``nominal_period_ns``, else from run.json options
(``CT_PERIOD_<NAME>_NS|_US|_MS``, ``CT_<NAME>_PERIOD_NS|_US|_MS``, or ``CT_PERIOD_NS|_US|_MS``), else
the median period (then period error and drift are relative to that estimate and
``nominal_source`` says so).

A perfectly periodic series has zero jitter:

>>> import numpy as np
>>> from analyzers.metrics.periodicity import period_stats
>>> r = period_stats(np.arange(0, 10_000, 1000), 1000)
>>> r["jitter_std_ns"], r["missed"]
(0.0, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_parsers.model import Trace

from ..sites import Site, is_logic, load_sites, site_events
from .base import Result, Series, Summary, make_table, summary_fields
from .stats import DropLog, drop_gap_instances, pct

PERIODIC_SITES = ("periodic.fast", "periodic.slow")
_UNIT_NS = {"NS": 1, "US": 1_000, "MS": 1_000_000}


def nominal_from_options(site: str, options: dict[str, Any]) -> int | None:
    """Nominal period (ns) of ``site`` from run.json options, or None."""
    short = site.split(".")[-1].upper()
    for unit, mul in _UNIT_NS.items():
        for key in (f"CT_PERIOD_{short}_{unit}", f"CT_{short}_PERIOD_{unit}", f"CT_PERIOD_{unit}"):
            if key in options and options[key] not in (None, ""):
                return int(round(float(options[key]) * mul))
    return None


def period_stats(activations: np.ndarray, nominal_ns: float) -> dict[str, Any]:
    """Period error, drift, jitter and missed activations of sorted activation times (ns)."""
    t = np.asarray(activations, dtype=np.int64)
    per = np.diff(t).astype(np.float64)
    k = np.rint(per / nominal_ns) if nominal_ns > 0 else np.ones_like(per)
    missed_mask = k >= 2
    missed = int(np.sum(k[missed_mask] - 1))
    good = per[~missed_mask]
    out: dict[str, Any] = {"periods": per, "missed_mask": missed_mask, "missed": missed}
    if good.size:
        out["period_error_ns"] = float(good.mean() - nominal_ns)
        out["period_error_pct"] = pct(out["period_error_ns"], nominal_ns)  # NaN for a 0 nominal
        out["jitter_std_ns"] = float(good.std())
    else:
        out["period_error_ns"] = out["period_error_pct"] = out["jitter_std_ns"] = float("nan")
    if t.size >= 3:
        # activation number including the missed ones, so a skipped period does not bend the line
        n = np.concatenate([[0], np.cumsum(np.maximum(k, 1))])
        # closed-form least squares (no LAPACK: its threads would change the last digits)
        nc = n - n.mean()
        y = (t - t[0]).astype(np.float64)
        slope = float(np.sum(nc * (y - y.mean())) / np.sum(nc * nc))
        out["drift_ppm"] = float((slope / nominal_ns - 1.0) * 1e6) if nominal_ns > 0 else float("nan")
    else:
        out["drift_ppm"] = float("nan")
    return out


@dataclass(frozen=True)
class PeriodicitySummary(Summary):
    nominal_ns: dict[str, float] = field(default_factory=dict)
    nominal_source: dict[str, str] = field(default_factory=dict)  #: "argument", "options", "median"


def period_jitter(
    trace: Trace,
    *,
    sites: Sequence[Site] | None = None,
    nominal_period_ns: dict[str, float] | float | None = None,
    options: dict[str, Any] | None = None,
    store: Any = None,
) -> Result:
    """Periodicity metrics of every periodic site present in a trace or logic capture (``store``:
    the source's spill the table goes to, or None: in memory)."""
    sites = tuple(sites) if sites is not None else load_sites()
    options = options or {}
    se = site_events(trace, sites)
    drop_log = DropLog()
    series: list[Series] = []
    scalars: dict[str, tuple[float, str]] = {}
    nominal: dict[str, float] = {}
    nsrc: dict[str, str] = {}
    for site in PERIODIC_SITES:
        t = se.times(site)
        if t.size < 2:
            continue
        short = site.split(".")[-1]
        base = f"periodic.{short}"
        if isinstance(nominal_period_ns, dict) and site in nominal_period_ns:
            nom, src = float(nominal_period_ns[site]), "argument"
        elif isinstance(nominal_period_ns, (int, float)):
            nom, src = float(nominal_period_ns), "argument"
        elif (o := nominal_from_options(site, options)) is not None:
            nom, src = float(o), "options"
        else:
            nom, src = float(np.median(np.diff(t))), "median"
        nominal[site], nsrc[site] = nom, src
        r = period_stats(t, nom)
        idx = np.arange(t.size - 1, dtype=np.int64)
        start, end, per = t[:-1], t[1:], r["periods"]
        keep = drop_gap_instances(f"{base}.period", start, end, se.gaps, drop_log)
        missed = r["missed_mask"]
        for i in np.flatnonzero(missed & keep).tolist():
            drop_log.add(
                f"{base}.period",
                "missed_activation",
                int(start[i]),
                int(end[i]),
                int(np.rint(per[i] / nom)) - 1,
            )
        keep &= ~missed
        series.append(
            Series(
                f"{base}.period",
                "ns",
                start[keep],
                end[keep],
                per[keep],
                site,
                idx[keep],
                site,
                idx[keep] + 1,
            )
        )
        series.append(
            Series(
                f"{base}.jitter.abs",
                "ns",
                start[keep],
                end[keep],
                np.abs(per[keep] - nom),
                site,
                idx[keep],
                site,
                idx[keep] + 1,
            )
        )
        good = per[keep]
        if good.size:
            scalars[f"{base}.period_error"] = (float(good.mean() - nom), "ns")
            scalars[f"{base}.period_error_pct"] = (pct(float(good.mean() - nom), nom), "pct")
            scalars[f"{base}.jitter.std"] = (float(good.std()), "ns")
        scalars[f"{base}.drift_ppm"] = (r["drift_ppm"], "ppm")
        scalars[f"{base}.missed"] = (float(r["missed"]), "count")
        scalars[f"{base}.nominal"] = (nom, "ns")
    source = "logic" if is_logic(trace) else "trace"
    fields = summary_fields(series, drop_log)
    fields["excluded"] = sum(e.count for e in drop_log.entries if e.reason == "overflow_gap")
    summary = PeriodicitySummary(
        source=source, scalars=scalars, nominal_ns=nominal, nominal_source=nsrc, **fields
    )
    return Result(make_table(series, source, store), summary)


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any], store: Any = None) -> Result:
    return period_jitter(trace, sites=sites, options=options, store=store)
