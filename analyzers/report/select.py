"""What the report shows: the headline metric per test, the agreement tally, the per-instance
series. Pure data choices on the campaign tables (pandas); no HTML here.

Every column the cross-validation rewrite adds (``verdict`` in PASS/FAIL/INCOMPLETE/UNRESOLVED/
NO_PAIRS, ``raw_rel_diff_pct``, ``calibration_source``, ``expected_verdict``, ``negative_control``,
``time_scale``, the ``kernel_vs_pin`` table) is optional: campaigns written before it still render.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .figures import Bar, Series

#: The metric a test is summarised by on the first screen (else: the one most RTOSes have).
HEADLINE = {
    "ctx_switch": "ctx_switch.yield",
    "isr_latency": "isr.to_task.latency",
    "periodic": "periodic.fast.jitter.abs",
    "fft_workload": "fft.duration",
    "calib": "calib.loop",
}
#: Thread-Metric's result: time per iteration of the test's loop (all its threads), the reciprocal
#: of its iteration rate (``tm.rate``); a scalar per run, so not in comparison.csv (campaign.csv has it).
RATE_METRIC = "tm.ns_per_iter"
VERDICTS = ("PASS", "FAIL", "INCOMPLETE", "UNRESOLVED", "NO_PAIRS")
CAPTURE_KEYS = ("verdict", "expected_verdict", "negative_control", "time_scale")
SOURCE_LABEL = {"trace": "from the trace", "logic": "at the pins", "firmware": "by the firmware"}


def capture_info(out_dir: Path, caps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per capture id: the manifest entry, completed from the capture's ``result.json`` with the
    newer per-capture fields when the manifest does not carry them."""
    info: dict[str, dict[str, Any]] = {}
    for c in caps:
        entry = dict(c)
        if any(k not in entry for k in CAPTURE_KEYS):
            rj = Path(out_dir) / "captures" / str(c.get("capture", "")) / "result.json"
            try:
                res = json.loads(rj.read_text())
            except (OSError, ValueError):
                res = {}
            for k in CAPTURE_KEYS:
                entry.setdefault(k, res.get(k))
        info[str(c.get("capture"))] = entry
    return info


def is_negative_control(entry: dict[str, Any]) -> bool:
    return bool(entry.get("expected_verdict")) or bool(entry.get("negative_control"))


@dataclass
class Agreement:
    """The agreement tally over cross-validation rows (negative controls counted apart)."""

    counts: dict[str, int] = field(default_factory=dict)
    failures: Any = None  #: DataFrame of unexpected FAIL rows
    incomplete: Any = None  #: DataFrame of INCOMPLETE rows
    controls: list[dict[str, Any]] = field(default_factory=list)  #: negative-control captures
    rows: int = 0
    all_rows: Any = None  #: the cross-validation rows that are not negative controls

    @property
    def agree(self) -> bool:
        return self.rows > 0 and self.counts.get("FAIL", 0) == 0 and not any(
            not c["as_expected"] for c in self.controls
        )


def agreement(xv: Any, info: dict[str, dict[str, Any]]) -> Agreement:
    """Count verdicts of the cross-validation rows; rows of negative-control captures are not
    counted (they are expected to fail) but listed as controls, failed when they did not fail."""
    import pandas as pd

    ag = Agreement(counts=dict.fromkeys(VERDICTS, 0), failures=pd.DataFrame(), incomplete=pd.DataFrame())
    if xv is None or xv.empty or "verdict" not in xv.columns:
        return ag
    neg = {cid for cid, e in info.items() if is_negative_control(e)}
    is_neg = xv["capture"].isin(neg)
    real = xv[~is_neg]
    for v, n in real["verdict"].value_counts().items():
        ag.counts[str(v)] = ag.counts.get(str(v), 0) + int(n)
    ag.rows = len(real)
    ag.all_rows = real
    ag.failures = real[real["verdict"] == "FAIL"]
    ag.incomplete = real[real["verdict"] == "INCOMPLETE"]
    for cid in sorted(neg):
        e = info[cid]
        rows = xv[xv["capture"] == cid]
        expected = str(e.get("expected_verdict") or "FAIL")
        got = str(e.get("verdict") or ("FAIL" if (rows["verdict"] == "FAIL").any() else "PASS"))
        nc = e.get("negative_control") or {}
        ag.controls.append({
            "capture": cid,
            "expected": expected,
            "verdict": got,
            "as_expected": got == expected,
            "what": nc.get("description") or nc.get("fault") or ", ".join(f"{k}={v}" for k, v in nc.items())
            if isinstance(nc, dict) else str(nc),
            "failed_metrics": ", ".join(sorted(set(rows.loc[rows["verdict"] == "FAIL", "metric"]))),
            "raw_delta": _max_abs(rows.loc[rows["verdict"] == "FAIL"], "raw_rel_diff_pct"),
        })
    return ag


def _max_abs(df: Any, col: str) -> float:
    if df is None or df.empty or col not in df.columns:
        return float("nan")
    v = df[col].astype(float).to_numpy()
    v = v[np.isfinite(v)]
    return float(v[np.argmax(np.abs(v))]) if v.size else float("nan")


#: What one figure of the report is (said next to the figures, :meth:`Test.definition`; docs/
#: methodology.md "One figure per question"). :func:`tests` computes the figures; every section
#: that shows one reads it from there.
FIGURE_SHORT = "the mean of all instances in one run: one RTOS, one build variant, one time scale"

@dataclass
class Test:
    """One test (app + variant) at one time scale on the first screen."""

    app: str
    variant: str
    metric: str
    source: str
    profile: str
    bars: list[Bar]
    time_scale: str = ""
    captures: tuple[str, ...] = ()  #: the captures behind the bars
    rows: Any = None  #: the test's comparison rows of ``metric``, every source and profile

    @property
    def name(self) -> str:
        return " · ".join(p for p in (f"{self.app} {self.variant}".strip(), self.time_scale) if p)

    @property
    def csv_row(self) -> str:
        """Where the bars are in comparison.csv, in words."""
        keys = (f"app={self.app}", f"variant={self.variant}", f"time_scale={self.time_scale}",
                f"metric={self.metric}", f"source={self.source}", f"profile={self.profile}")
        return ", ".join(k for k in keys if not k.endswith("="))

    def definition(self) -> str:
        """What each figure of this test is, in one sentence (before the comparison.csv row)."""
        runs = self.rows["runs"] if self.rows is not None and "runs" in self.rows else None
        several = runs is not None and bool((runs.fillna(0) > 1).any())
        return ("each figure is the mean of all instances of " + ("each run, averaged over the RTOS's runs"
                if several else "the RTOS's one run") + ", nothing averaged across variants, time scales, "
                "tracers or analyzers; it is the comparison.csv row")

    def figure(self, label: str, source: str, profile: str = "") -> float:
        """The figure of bar ``label`` measured by ``source`` (and ``profile``): the mean of the
        comparison row, the same one :func:`tests` made the bars from; NaN when there is none."""
        r = self.rows
        if r is None or r.empty:
            return float("nan")
        rtos = label.split(" (")[0]
        hit = r[(r["source"] == source) & (r["profile"] == profile) & (r["rtos"].astype(str) == rtos)]
        if " (" in label and "tracer" in hit.columns:  # "zephyr (ctf)": the bar of one tracer
            hit = hit[hit["tracer"].astype(str) == label.split(" (", 1)[1].rstrip(")")]
        return float(hit["mean_ns"].iloc[0]) if len(hit) == 1 else float("nan")


def _pick_source(rows: Any) -> tuple[str, str]:
    """(source, profile) covering the most RTOSes; ties: pins (ideal profile first), trace, firmware."""
    order = {"logic": 0, "trace": 1, "firmware": 2}
    cands = []
    for (src, prof), g in rows.groupby(["source", "profile"], dropna=False):
        prof = "" if prof is None or (isinstance(prof, float) and math.isnan(prof)) else str(prof)
        cands.append((-g["rtos"].nunique(), order.get(str(src), 3), prof != "ideal", prof, str(src)))
    best = min(cands)
    return best[4], best[3]


def _headline_metric(app: str, rows: Any) -> str:
    """The test's metric for the first screen: :data:`HEADLINE`'s, else the measured one (some
    instance) that most RTOSes have, by name among equals."""
    pref = RATE_METRIC if app.startswith("tm_") else HEADLINE.get(app)
    if pref is not None and (rows["metric"] == pref).any():
        return pref
    if "n" in rows.columns and (rows["n"].fillna(0) > 0).any():
        rows = rows[rows["n"].fillna(0) > 0]  # a metric listed with no instance says nothing
    cover = rows.groupby("metric")["rtos"].nunique()
    return str(sorted(cover.items(), key=lambda kv: (-kv[1], kv[0]))[0][0])


def time_scale_order(label: str) -> float:
    """Sort key of a time-scale label: the finest virtual-lab scale first, real time last."""
    try:
        return float(str(label).split()[0])
    except (ValueError, IndexError):
        return math.inf


def _with_axes(df: Any) -> Any:
    """``variant``/``profile`` without nulls, and ``time_scale``/``tracer`` columns (empty when the
    table predates them)."""
    df = df.assign(variant=df["variant"].fillna(""), profile=df["profile"].fillna(""))
    for col in ("time_scale", "tracer"):
        df[col] = df[col].fillna("") if col in df.columns else ""
    return df


def tests(comp: Any, camp: Any, info: dict[str, dict[str, Any]]) -> list[Test]:
    """Per test (app, variant) and time scale: its headline metric, one source and analyzer
    profile, a bar per RTOS (mean, p50/p99/max from the campaign rows, cycles or instructions,
    multiple of the fastest). Nothing is averaged across time scales, profiles or tracers."""
    if comp is None or comp.empty or camp is None or camp.empty:
        return []
    comp, camp = _with_axes(_with_rates(comp, camp, info)), _with_axes(camp)
    out = []
    keys = sorted(comp.groupby(["app", "variant", "time_scale"]).groups,
                  key=lambda k: (k[0], _natural(k[1]), time_scale_order(k[2])))
    for app, variant, ts in keys:
        rows = comp[(comp["app"] == app) & (comp["variant"] == variant) & (comp["time_scale"] == ts)]
        metric = _headline_metric(str(app), rows)
        every = rows[rows["metric"] == metric]
        src, prof = _pick_source(every)
        rows = every[(every["source"] == src) & (every["profile"] == prof)].sort_values("mean_ns")
        cr = camp[(camp["app"] == app) & (camp["variant"] == variant) & (camp["metric"] == metric)
                  & (camp["source"] == src) & (camp["profile"] == prof) & (camp["time_scale"] == ts)]
        several = rows["rtos"].duplicated(keep=False)
        bars = [_bar(r, cr, info, bool(dup)) for r, dup in zip(rows.itertuples(), several)]
        out.append(Test(str(app), str(variant), metric, src, prof, bars, str(ts),
                        tuple(sorted(cr["capture"].astype(str).unique())), every))
    return sorted(out, key=lambda t: len(t.bars) < 2)  # comparisons first, single-RTOS tests after


def _with_rates(comp: Any, camp: Any, info: dict[str, dict[str, Any]]) -> Any:
    """``comp`` and Thread-Metric's time per iteration (:data:`RATE_METRIC`, one value per run in
    campaign.csv), compared by the same function as comparison.csv's rows."""
    import pandas as pd

    from ..campaign.tables import comparison_table

    r = camp[(camp["metric"] == RATE_METRIC) & (camp["unit"] == "ns")]
    if r.empty or (comp["metric"] == RATE_METRIC).any():
        return comp
    return pd.concat([comp, comparison_table(r.assign(kind="summary"), list(info.values()))],
                     ignore_index=True)


def _bar(r: Any, cr: Any, info: dict[str, dict[str, Any]], name_tracer: bool) -> Bar:
    """One RTOS's bar (its tracer named when the same RTOS has several in the test)."""
    tracer = str(getattr(r, "tracer", "") or "")
    c = cr[(cr["rtos"] == r.rtos) & ((cr["tracer"] == tracer) if tracer else True)]
    unit = getattr(r, "cycles_unit", None)
    if isinstance(unit, str) and unit:
        cyc = float(r.mean_cycles)
    else:  # a comparison table written before cycles_unit
        npi = _ns_per_insn(list(c["capture"]), info)
        cyc, unit = (r.mean_ns / npi, "insn") if npi else (getattr(r, "mean_cycles", float("nan")), "cycles")
    return Bar(
        label=f"{r.rtos} ({tracer})" if name_tracer and tracer else str(r.rtos), mean=float(r.mean_ns),
        x_fastest=float(r.x_fastest), cycles=float(cyc), cycles_unit=unit,
        n=int(c["n"].sum()) if not c.empty else int(getattr(r, "n", 0)),
        p50=float(c["p50"].mean()) if not c.empty else float("nan"),
        p99=float(c["p99"].mean()) if not c.empty else float("nan"),
        max=float(c["max"].max()) if not c.empty else float("nan"),
        rate=1e9 / float(r.mean_ns) if r.metric == RATE_METRIC and r.mean_ns > 0 else float("nan"),
    )


def _ns_per_insn(caps: list[str], info: dict[str, dict[str, Any]]) -> float | None:
    vals = {(info.get(c, {}).get("time_scale") or {}).get("ns_per_insn") for c in caps}
    if len(vals) == 1:
        (v,) = vals
        return float(v) if v else None
    return None


def _natural(s: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


def headline_test(ts: list[Test]) -> Test | None:
    """The test the first sentence answers: the context switch (else the first compared test) at
    the time scale where most RTOSes were measured (the finest on a tie), its first variant."""
    pick = [t for t in ts if t.metric == HEADLINE["ctx_switch"] and len(t.bars) > 1]
    if not pick:
        pick = [t for t in ts if len(t.bars) > 1][:1] or ts[:1]
    if not pick:
        return None
    return min(pick, key=lambda t: (-len(t.bars), time_scale_order(t.time_scale), _natural(t.variant)))


def headline(ts: list[Test]) -> dict[str, Any] | None:
    """The first sentence: which RTOS is faster in :func:`headline_test` (one variant, one time
    scale, one source and profile: nothing averaged), and by how much."""
    t = headline_test(ts)
    if t is None:
        return None
    bars = sorted(t.bars, key=lambda b: b.mean)
    return {
        "metric": t.metric,
        "source": t.source,
        "profile": t.profile,
        "variant": t.variant,
        "time_scale": t.time_scale,
        "captures": t.captures,
        "ranking": [{"rtos": b.label, "mean_ns": b.mean, "cycles": b.cycles, "cycles_unit": b.cycles_unit,
                     "x": b.mean / bars[0].mean} for b in bars],
    }


def _site_metrics(df: Any) -> Any:
    """The ns instances measured between test sites (kernel-event metrics per task and ISR are
    shown on the recordings' own pages and in the statistics tables)."""
    df = df[(df["unit"] == "ns") & ~df["metric"].str.startswith(("cpu.", "kernel."))]
    if "start_site" in df.columns:
        df = df[df["start_site"].notna() & (df["start_site"] != "")]
    return df


def series(inst: dict[str, Any], camp: Any, max_metrics: int = 80, *, only: Any = None,
           every_scale: bool = False) -> dict[str, list[Series]]:
    """chart title -> one :class:`Series` per RTOS (trace instances where the capture has a trace,
    else the first pin profile), for the distribution charts. One chart per metric, variant (build
    configuration) and time scale: only the runs of one RTOS that share all three are pooled.
    ``inst``: each capture's instances (``campaign.tables.read_instances``); ``only``: a compiled
    pattern the metrics must match; ``every_scale``: name the time scale in every title, not only
    when the campaign has several."""
    import pandas as pd

    if camp is None or camp.empty:
        return {}
    cols = [c for c in ("rtos", "variant", "time_scale", "tracer") if c in camp.columns]
    ident = _with_axes(camp.drop_duplicates("capture")).set_index("capture")[cols]
    pieces: dict[tuple[Any, Any, Any], dict[tuple[str, Any], list[tuple[str, Any]]]] = {}
    for cid, df in inst.items():  # each capture's values grouped in place: no row gets copied
        if df.empty or cid not in ident.index:
            continue
        df = _site_metrics(df)
        if only is not None and not df.empty:
            df = df[df["metric"].astype(str).map(lambda m: bool(only.fullmatch(m)))]
        if df.empty:
            continue
        src = "trace" if (df["source"] == "trace").any() else "logic"
        df = df[df["source"] == src]
        if src == "logic":
            df = df[df["profile"] == sorted(df["profile"].unique())[0]]
        row = ident.loc[cid]
        if pd.isna(row["variant"]) or pd.isna(row["time_scale"]) or pd.isna(row["tracer"]):
            continue  # (grouping by them left such rows out)
        by = (str(row["rtos"] or "?"), row["tracer"])
        for metric, g in df.groupby("metric", observed=True):
            key = (str(metric), row["variant"], row["time_scale"])
            pieces.setdefault(key, {}).setdefault(by, []).append((cid, g))
    if not pieces:
        return {}
    several_ts = every_scale or len({k[2] for k in pieces}) > 1
    out: dict[str, list[Series]] = {}
    keys = sorted(pieces, key=lambda k: (k[0], _natural(k[1]), time_scale_order(k[2])))
    for key in keys[:max_metrics]:
        metric, variant, ts = key
        title = " · ".join(str(p) for p in (metric, variant, ts if several_ts else "") if p)
        tracers: dict[str, int] = {}
        for r, _t in pieces[key]:
            tracers[r] = tracers.get(r, 0) + 1
        out[title] = [_pooled(f"{r} ({t})" if tracers[r] > 1 else r, parts)
                      for (r, t), parts in sorted(pieces[key].items())]
    return out


def _pooled(label: str, parts: list[tuple[str, Any]]) -> Series:
    """One chart series from the instances of one RTOS and tracer, capture after capture."""
    caps = sorted({cid for cid, _ in parts})
    return Series(label, np.concatenate([g["value"].to_numpy(float) for _, g in parts]),
                  np.concatenate([g["start_ts"].to_numpy(float) for _, g in parts]),
                  np.concatenate([g["instance"].to_numpy(np.int64) for _, g in parts]),
                  capture=", ".join(caps) if len(caps) <= 1 else "")


def outliers(inst: dict[str, Any], per_metric: int = 3) -> Any:
    """The largest instances per metric and capture beyond Tukey's upper fence, with the window to
    export around each (ns on the exported file's time axis: the trace clock, else the capture's).
    ``inst``: each capture's instances (``campaign.tables.read_instances``)."""
    import pandas as pd

    rows = []
    for cid, df in inst.items():
        df = _site_metrics(df)
        if df.empty:
            continue
        src = "trace" if (df["source"] == "trace").any() else "logic"
        df = df[df["source"] == src]
        if src == "logic":
            df = df[df["profile"] == sorted(df["profile"].unique())[0]]
        for metric, g in df.groupby("metric", observed=True):
            v = g["value"].to_numpy(float)
            if v.size < 8:
                continue
            q1, q3 = np.percentile(v, [25, 75])
            fence = q3 + 3 * max(q3 - q1, 1e-9 * abs(q3))
            top = g[g["value"] > fence].nlargest(per_metric, "value")
            for r in top.itertuples():
                rows.append({"capture": cid, "metric": metric, "source": src, "instance": int(r.instance),
                             "value_ns": float(r.value), "median_ns": float(np.median(v)),
                             "window": window_for(int(r.start_ts), int(r.end_ts)), "why": "outlier"})
    return pd.DataFrame(rows)


def window_for(start_ns: int, end_ns: int) -> str:
    """``START:END`` (ns) around an instance: the instance plus its own length (at least 20 µs)
    on either side."""
    pad = max(end_ns - start_ns, 20_000)
    return f"{max(start_ns - pad, 0)}:{end_ns + pad}"


def failure_windows(out_dir: Path, rows: Any, instances: dict[str, Any]) -> Any:
    """The window to export for each FAIL / INCOMPLETE comparison: around the first unmatched
    occurrence, else around the paired instance with the largest |Δ| (trace clock, ns)."""
    import pandas as pd

    out = []
    if rows is None or rows.empty:
        return pd.DataFrame()
    for r in rows.to_dict("records"):
        cap_dir = Path(out_dir) / "captures" / str(r["capture"])
        why, win, inst, val = str(r.get("verdict")), None, -1, float("nan")
        first = r.get("first_unmatched_trace_ns")
        if first is not None and np.isfinite(float(first)):
            win, why = window_for(int(first), int(first)), f"{why}: first unmatched trace occurrence"
        elif (cap_dir / "pairs.parquet").is_file() and str(r["capture"]) in instances:
            pairs = pd.read_parquet(cap_dir / "pairs.parquet")
            pairs = pairs[(pairs["metric"] == r["metric"]) & (pairs["profile"] == r.get("profile", ""))]
            if not pairs.empty:
                worst = pairs.loc[pairs["rel_diff_pct"].abs().idxmax()]
                ins = instances[str(r["capture"])]
                hit = ins[(ins["metric"] == r["metric"]) & (ins["source"] == "trace")
                          & (ins["start_idx"] == worst["trace_start_idx"])]
                if not hit.empty:
                    h = hit.iloc[0]
                    win = window_for(int(h.start_ts), int(h.end_ts))
                    inst, val = int(h.instance), float(h.value)
                    why = f"{why}: largest |Δ| {float(worst['rel_diff_pct']):+.2f} %"
        if win is not None:
            out.append({"capture": r["capture"], "metric": r["metric"], "source": "trace", "instance": inst,
                        "value_ns": val, "median_ns": float("nan"), "window": win, "why": why})
    return pd.DataFrame(out)
