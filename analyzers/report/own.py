"""The page of a recording of the user's own firmware (no test sites, no pins).

Per task and per ISR, from the RTOS's own events (the decoded trace the campaign kept): how often
it ran, for how long (mean, p99, max), its share of the CPU, and the CPU load over time per core.
Metrics the analyzers wrote for the capture (kernel metrics when that analyzer exists, CPU load,
kernel-event latencies) follow as a table and as distributions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from . import figures as F

BINS = 60  #: CPU-load-over-time windows per recording


def _is_idle(name: str) -> bool:
    from ..metrics.cpu_load import is_idle_name

    return bool(is_idle_name(name))


def own_recordings(inst: dict[str, Any], camp: Any, info: dict[str, dict[str, Any]]) -> list[str]:
    """Captures without pins whose instances (``inst``, ``campaign.tables.read_instances``) come from
    kernel events only (no test site)."""
    if camp is None or camp.empty:
        return []
    with_logic = {cid for cid, e in info.items()
                  if any(k.startswith("logic") for k in (e.get("sources") or {}))}
    with_logic |= set(camp.loc[camp["source"] == "logic", "capture"])
    site_based = set()
    for cid, df in inst.items():
        if "start_site" in df.columns and (df["start_site"].notna() & (df["start_site"] != "")).any():
            site_based.add(cid)
    return sorted(set(camp["capture"]) - with_logic - site_based)


def _trace(out_dir: Path, cid: str) -> Any:
    from .._io import SUFFIX, load_trace

    files = sorted((Path(out_dir) / "captures" / cid).glob(f"events-trace*{SUFFIX}"))
    return load_trace(files[0]) if files else None


def _union(iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def load_over_time(intervals: list[Any], t0: int, t1: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per core: busy share (%) in ``BINS`` windows; busy = a non-idle task running or an ISR."""
    edges = np.linspace(t0, t1, BINS + 1)
    per: dict[int, list[tuple[int, int]]] = {}
    for iv in intervals:
        kind, _, label = iv.track.partition(":")
        if (kind == "task" and iv.name == "running" and not _is_idle(label)) or kind == "isr":
            per.setdefault(iv.core, []).append((iv.start, iv.end))
    out = []
    for core, ivs in sorted(per.items()):
        busy = np.zeros(BINS)
        for s, e in _union(ivs):
            lo = np.clip(np.searchsorted(edges, s, "right") - 1, 0, BINS - 1)
            hi = np.clip(np.searchsorted(edges, e, "right") - 1, 0, BINS - 1)
            for b in range(int(lo), int(hi) + 1):
                busy[b] += max(0.0, min(e, edges[b + 1]) - max(s, edges[b]))
        out.append((f"core {core}", (edges[:-1] + edges[1:]) / 2, 100.0 * busy / np.diff(edges)))
    return out


def context_table(intervals: list[Any], window_ns: int, ticks: bool = False) -> Any:
    """One row per (core, task or ISR): activations, time per activation (µs; in ticks, and so
    named, for a recording without a tick rate) and CPU share."""
    import pandas as pd

    if ticks:
        us, ms, u, m = 1.0, 1.0, "ticks", "ticks"
    else:
        us, ms, u, m = 1e3, 1e6, "us", "ms"

    groups: dict[tuple[int, str, str], list[int]] = {}
    for iv in intervals:
        kind, _, label = iv.track.partition(":")
        if (kind == "task" and iv.name == "running") or kind == "isr":
            groups.setdefault((iv.core, kind, label), []).append(iv.end - iv.start)
    rows = []
    rate = f"per_{'mtick' if ticks else 's'}"  # activations per second (per million ticks)
    for (core, kind, label), d in sorted(groups.items()):
        a = np.asarray(d, float)
        rows.append({
            "core": core, "kind": "ISR" if kind == "isr" else "task", "name": label, "n": a.size,
            rate: a.size / window_ns * (1e6 if ticks else 1e9) if window_ns else np.nan,
            f"mean_{u}": a.mean() / us, f"p99_{u}": np.percentile(a, 99) / us, f"max_{u}": a.max() / us,
            f"total_{m}": a.sum() / ms, "cpu_pct": 100.0 * a.sum() / window_ns if window_ns else np.nan,
        })
    return pd.DataFrame(rows)


def at_a_glance(g: Any, ticks: bool = False) -> tuple[Any, str]:
    """What SystemView's and Tracealyzer's summaries show first, from the capture's campaign rows
    ``g`` (machine-wide rows): per task its CPU share and response time (mean, p99, max), per ISR
    its CPU share, rate and duration (p99, max); and a sentence on the share of the span lost to
    overflows (``cpu.load.unknown``). Empty when the analysis wrote no kernel metrics."""
    import pandas as pd

    g = g[(g["source"] == "trace") & (g["core"].fillna(-1) == -1)] if "core" in g.columns else g
    by = {str(r.metric): r for r in g.itertuples()}
    scale, u = (1.0, "ticks") if ticks else (1e3, "us")
    rows = []
    for prefix, kind in (("task.", "task"), ("isr.", "ISR")):
        timed = re.compile(rf"{re.escape(prefix)}(.+)\.(?:response_time|duration)")
        names = sorted({m[len(f"cpu.load.{prefix}"):] for m in by if m.startswith(f"cpu.load.{prefix}")}
                       | {h.group(1) for h in map(timed.fullmatch, by) if h})
        for name in names:
            cpu = by.get(f"cpu.load.{prefix}{name}")
            row: dict[str, Any] = {"kind": kind, "name": name,
                                   "cpu_pct": float(cpu.mean) if cpu is not None else np.nan}
            if kind == "task":
                rt = by.get(f"task.{name}.response_time")
                row.update({f"response_mean_{u}": rt.mean / scale if rt is not None else np.nan,
                            f"response_p99_{u}": rt.p99 / scale if rt is not None else np.nan,
                            f"response_max_{u}": rt.max / scale if rt is not None else np.nan})
            else:
                rate, dur = by.get(f"isr.{name}.rate"), by.get(f"isr.{name}.duration")
                row.update({f"rate_{rate.unit if rate is not None else 'per_s'}":
                            float(rate.mean) if rate is not None else np.nan,
                            f"duration_p99_{u}": dur.p99 / scale if dur is not None else np.nan,
                            f"duration_max_{u}": dur.max / scale if dur is not None else np.nan})
            rows.append(row)
    lost = by.get("cpu.load.unknown")
    words = (f"{float(lost.mean):.1f} % of the span is unknown (data lost to overflows, or before the "
             "first switch-in): every share above is of the whole span." if lost is not None else "")
    return pd.DataFrame(rows), words


def page(out_dir: Path, cid: str, g: Any, instances: Any, table: Any) -> list[str]:
    """The body parts of one recording's page (``table`` renders a DataFrame)."""
    from ..export.timeline import kernel_intervals

    body: list[str] = []
    tr = _trace(out_dir, cid)
    ticks = tr is not None and not tr.meta.tick_hz  # no tick rate: ts is in ticks, and stays so
    if tr is not None:
        body.append(_facts(cid, tr, ticks))
    glance, lost = at_a_glance(g, ticks)
    if not glance.empty:
        body.append("<h3>At a glance</h3>" + table(glance, list(glance.columns), left=("kind", "name"))
                    + (f"<p class='muted'>{lost}</p>" if lost else ""))
    if tr is not None and len(tr):
        ivs, _, _, _ = kernel_intervals(tr)
        t0, t1 = int(tr.columns["ts"][0]), int(tr.columns["ts"][-1])
        t_scale, t_unit = (1.0, "ticks") if ticks else (1e6, "ms")
        charts = [F.line_chart(load_over_time(ivs, t0, t1), "%", "CPU load over time per core (busy %)",
                               t_scale=t_scale, t_unit=t_unit)]
        ctx = context_table(ivs, t1 - t0, ticks=ticks)
        if not ctx.empty:
            top = ctx.sort_values("cpu_pct", ascending=False).head(16)
            charts.append(F.percent_bars([(f"core {r.core} {r.kind} {r.name}", float(r.cpu_pct))
                                          for r in top.itertuples()], "CPU share per task and ISR [%]"))
        body.append("<div class='figs'>" + "".join(f"<div>{c}</div>" for c in charts if c) + "</div>")
        if not ctx.empty:
            body.append("<h3>Per task and per ISR</h3>" + table(ctx, list(ctx.columns),
                                                              left=("kind", "name")))
    else:
        body.append("<p class='muted'>The decoded events were not kept: per-task timing unavailable.</p>")
    if instances is not None and not instances.empty:
        body += _distributions(instances, cid, ticks)
    if not g["metric"].str.startswith(("kernel.", "task.")).any():
        body.append("<p class='muted'>Kernel metrics (<code>analyzers.metrics.kernel</code>) were not "
                    "part of this analysis; the table above is rebuilt from the kernel events.</p>")
    return body


def _distributions(instances: Any, cid: str, ticks: bool) -> list[str]:
    """Box plot and scatter of the recording's time metrics, one pair per unit family: the
    metrics whose medians lie within a factor of 30 of each other share an axis (durations of a
    few µs never share one with 600 ms periods), each in the unit that suits it."""
    unit = "ticks" if ticks else "ns"
    df = instances[(instances["unit"] == unit) & ~instances["metric"].str.startswith("cpu.")]
    ser = [F.Series(str(m), d["value"].to_numpy(float), d["start_ts"].to_numpy(float),
                    d["instance"].to_numpy("int64"), capture=cid)
           for m, d in df.groupby("metric", observed=True)]
    ser = sorted((s for s in ser if s.values.size > 1 and np.isfinite(s.values).any()),
                 key=lambda s: float(np.nanmedian(s.values)))
    groups: list[list[F.Series]] = []
    for s in ser:
        med = abs(float(np.nanmedian(s.values))) or 1.0
        first = abs(float(np.nanmedian(groups[-1][0].values))) or 1.0 if groups else 0.0
        if groups and len(groups[-1]) < 8 and med <= 30 * first:
            groups[-1].append(s)
        else:
            groups.append([s])
    out = []
    for g in groups[:4]:
        top = max(float(np.nanmax(np.abs(s.values))) for s in g)
        scale, u = ((1.0, "ticks") if ticks else (1e6, "ms") if top >= 1e7 else (1e3, "µs"))
        t_scale, t_unit = (1.0, "ticks") if ticks else (1e6, "ms")
        figs = (F.box_plot(g, unit_scale=scale, unit=u),
                F.scatter(g, unit_scale=scale, unit=u, t_scale=t_scale, t_unit=t_unit))
        out.append("<div class='figs'>" + "".join(f"<div>{f}</div>" for f in figs if f) + "</div>")
    return out


def _facts(cid: str, tr: Any, ticks: bool) -> str:
    """What the recording is, first: its name, RTOS, clock, span, events, and the data lost."""
    from html import escape

    from trace_parsers.model import EventKind

    m = tr.meta
    ts = tr.columns["ts"]
    span = int(ts[-1]) - int(ts[0]) if len(ts) else 0
    lost = int((tr.columns["kind"] == EventKind.OVERFLOW).sum()) if len(ts) else 0
    data_loss = [d for d in tr.diagnostics if d.severity.name == "DATA_LOSS"]
    parts = [f"<b>{escape(cid)}</b>", f"RTOS {escape(str(m.rtos or 'unknown'))}",
             f"clock {m.tick_hz:,} Hz" if m.tick_hz else "clock unknown: times in ticks",
             f"span {F.fmt_num(span, 'ticks')}" if ticks else f"span {F.fmt_num(span / 1e6, 'ms')}",
             f"{len(ts):,} events", f"{m.cores} core{'s' if m.cores != 1 else ''}",
             (f"<span class='FAIL'>data lost: {lost} overflow gap{'s' if lost != 1 else ''}"
              f"{', ' + ', '.join(sorted({d.code for d in data_loss})) if data_loss else ''}</span>")
             if lost or data_loss else "no data lost"]
    return "<p>" + " · ".join(parts) + "</p>"
