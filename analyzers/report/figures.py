"""Charts for the report: hand-written inline SVG, one function per chart kind.

Every chart is a self-contained ``<svg>`` string (``viewBox`` scaled to the page width); marks that
name something carry a ``data-tip`` attribute which the page's small script (:data:`SCRIPT`) shows
on hover, and a ``<title>`` so the name is there without the script too. Nothing is loaded from
anywhere: the report stays one offline file.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PALETTE = ("#1f6feb", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7b83", "#57606a")
#: one colour per RTOS, the same in every report chart and in the notebooks (other labels: PALETTE)
RTOS_COLOURS = {"baremetal": PALETTE[0], "freertos": PALETTE[1], "threadx": PALETTE[2], "zephyr": PALETTE[3]}
_COLOURS: dict[str, str] = {}
MAX_POINTS = 400  #: per scatter series (the extremes are always kept) and box-plot outliers per box
#: points of one scatter chart over all its series (each series keeps at least MIN_POINTS): with six
#: RTOSes a chart held 2,400 hoverable points, ~0.7 MB, and the bundled campaign's report 27 MB
CHART_POINTS, MIN_POINTS = 1200, 100
W = 640  #: viewBox width of the distribution charts

#: Tooltips, sortable and searchable tables. Plain DOM, no library.
SCRIPT = r"""
(function(){
var tip=document.createElement('div');tip.id='tip';document.body.appendChild(tip);
document.addEventListener('mouseover',function(e){var t=e.target.closest&&e.target.closest('[data-tip]');
 if(!t){tip.style.display='none';return;}tip.textContent=t.getAttribute('data-tip');tip.style.display='block';});
document.addEventListener('mousemove',function(e){if(tip.style.display!=='block')return;
 var x=e.clientX+14,y=e.clientY+14;if(x+tip.offsetWidth>innerWidth)x=e.clientX-tip.offsetWidth-8;
 if(y+tip.offsetHeight>innerHeight)y=e.clientY-tip.offsetHeight-8;tip.style.left=x+'px';tip.style.top=y+'px';});
function cell(r,i){var c=r.cells[i];if(!c)return '';var v=c.getAttribute('data-v');
 return v!==null?v:c.textContent;}
document.querySelectorAll('table.sortable').forEach(function(tb){
 tb.querySelectorAll('th').forEach(function(th,i){th.title='click to sort';
  th.addEventListener('click',function(){
  var rows=Array.prototype.slice.call(tb.rows,1),asc=th.getAttribute('data-dir')!=='asc';
  rows.sort(function(a,b){var x=cell(a,i),y=cell(b,i),fx=parseFloat(x),fy=parseFloat(y);
   var r=(!isNaN(fx)&&!isNaN(fy))?fx-fy:x.localeCompare(y);return asc?r:-r;});
  rows.forEach(function(r){tb.tBodies[0].appendChild(r);});th.setAttribute('data-dir',asc?'asc':'desc');});});});
document.querySelectorAll('input.filter').forEach(function(inp){inp.addEventListener('input',function(){
 var q=inp.value.toLowerCase(),tb=document.getElementById(inp.getAttribute('data-table'));
 Array.prototype.slice.call(tb.rows,1).forEach(function(r){
  r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});});
})();
"""


def set_colours(labels: Sequence[str]) -> None:
    """Give every label (RTOS) the same colour in every chart of the page: a known RTOS its
    :data:`RTOS_COLOURS` entry, any other label the next palette colour no RTOS uses."""
    _COLOURS.clear()
    _COLOURS.update(RTOS_COLOURS)
    free = [c for c in PALETTE if c not in RTOS_COLOURS.values()]
    others = sorted(set(labels) - set(RTOS_COLOURS))
    _COLOURS.update({lb: free[i % len(free)] for i, lb in enumerate(others)})


def colour(label: str, k: int) -> str:
    return _COLOURS.get(label) or _COLOURS.get(label.split(" (")[0]) or PALETTE[k % len(PALETTE)]


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def fmt_num(v: float, unit: str = "") -> str:
    """Compact human number: 3 significant digits, thousands separators for large values."""
    if v is None or not math.isfinite(float(v)):
        return "–"
    v = float(v)
    s = f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return f"{s} {unit}".rstrip()


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step + 1e-9) + 1)]


def _svg(w: float, h: float, body: Sequence[str], label: str) -> str:
    return (
        f"<svg class='chart' viewBox='0 0 {w:.0f} {h:.0f}' role='img' aria-label='{esc(label)}' "
        f"xmlns='http://www.w3.org/2000/svg'>" + "".join(body) + "</svg>"
    )


def _mark(tag: str, tip: str, title: bool = True, **attrs: Any) -> str:
    """A hoverable mark: its tip shown by the report's script (``data-tip``) and, with ``title``, also
    as the SVG ``<title>`` (the browser's own tooltip, read by screen readers). A scatter's hundreds
    of points go without: the chart is labelled as a whole, and the text once per point halves it."""
    a = " ".join(f"{k.replace('_', '-')}='{v}'" for k, v in attrs.items())
    inner = f"<title>{esc(tip)}</title>" if title else ""
    return f"<{tag} {a} data-tip='{esc(tip)}'>{inner}</{tag}>"


def _axis_x(x0: float, x1: float, y: float, lo: float, hi: float, unit: str) -> list[str]:
    out = [f"<line x1='{x0}' y1='{y}' x2='{x1}' y2='{y}' class='ax'/>"]
    for t in _ticks(lo, hi):
        x = x0 + (t - lo) / (hi - lo or 1) * (x1 - x0)
        out.append(f"<line x1='{x:.1f}' y1='{y}' x2='{x:.1f}' y2='{y + 4}' class='ax'/>")
        out.append(f"<text x='{x:.1f}' y='{y + 15}' class='tk' text-anchor='middle'>{fmt_num(t)}</text>")
    out.append(f"<text x='{x1}' y='{y + 28}' class='tk' text-anchor='end'>{esc(unit)}</text>")
    return out


def _axis_y(x: float, y0: float, y1: float, lo: float, hi: float) -> list[str]:
    out = [f"<line x1='{x}' y1='{y0}' x2='{x}' y2='{y1}' class='ax'/>"]
    for t in _ticks(lo, hi, 4):
        y = y0 - (t - lo) / (hi - lo or 1) * (y0 - y1)
        out.append(f"<line x1='{x - 4}' y1='{y:.1f}' x2='{x}' y2='{y:.1f}' class='ax'/>")
        out.append(f"<text x='{x - 6}' y='{y + 4:.1f}' class='tk' text-anchor='end'>{fmt_num(t)}</text>")
    return out


@dataclass
class Bar:
    """One RTOS in a comparison chart (values in ns)."""

    label: str
    mean: float
    p50: float = float("nan")
    p99: float = float("nan")
    max: float = float("nan")
    x_fastest: float = float("nan")
    cycles: float = float("nan")
    cycles_unit: str = "cycles"
    n: int = 0
    note: str = ""
    rate: float = float("nan")  #: iterations per second (Thread-Metric), shown before the time


def comparison_chart(bars: Sequence[Bar], title: str, subtitle: str = "") -> str:
    """Horizontal bars of each RTOS's mean (µs), p50/p99/max whiskers, and the value in cycles and as
    a multiple of the fastest written beside it (the style of published RTOS comparisons). The
    ``subtitle`` (a second line under the title) keeps long titles inside the chart."""
    if not bars:
        return ""
    rh, top, left, right = 26, 36 if subtitle else 22, 74, 200
    w = 500
    h = top + rh * len(bars) + 26
    finite = [v for b in bars for v in (b.mean, b.max) if math.isfinite(v)]
    hi = (max(finite) if finite else 0.0) / 1e3 * 1.05 or 1.0
    sx = lambda v: left + v / hi * (w - left - right)  # noqa: E731
    body = [f"<text x='0' y='14' class='ct'>{esc(title)}</text>"]
    if subtitle:
        body.append(f"<text x='0' y='29' class='tk'>{esc(subtitle)}</text>")
    for i, b in enumerate(bars):
        y = top + i * rh
        col = colour(b.label, i)
        m = b.mean / 1e3
        tip = (
            f"{b.label}: mean {fmt_num(b.mean, 'ns')} ({fmt_num(b.cycles, b.cycles_unit)}), "
            f"p50 {fmt_num(b.p50, 'ns')}, p99 {fmt_num(b.p99, 'ns')}, max {fmt_num(b.max, 'ns')}, "
            f"n={b.n}" + (f", {b.x_fastest:.2f}× the fastest" if math.isfinite(b.x_fastest) else "")
            + (f", {b.rate:,.0f} iterations/s" if math.isfinite(b.rate) else "") + b.note
        )
        body.append(f"<text x='{left - 6}' y='{y + 18}' class='lb' text-anchor='end'>{esc(b.label)}</text>")
        if math.isfinite(m):
            body.append(_mark("rect", tip, x=left, y=y + 5, width=f"{max(sx(m) - left, 1):.1f}", height=18,
                              fill=col, opacity="0.85"))
        lo_w, hi_w = b.p50 / 1e3, (b.max if math.isfinite(b.max) else b.p99) / 1e3
        if math.isfinite(lo_w) and math.isfinite(hi_w):
            body.append(f"<line x1='{sx(lo_w):.1f}' y1='{y + 14}' x2='{sx(hi_w):.1f}' y2='{y + 14}' "
                        "class='wh'/>")
            for v, tag in ((b.p50, "p50"), (b.p99, "p99"), (b.max, "max")):
                if math.isfinite(v):
                    x = sx(v / 1e3)
                    body.append(_mark("line", f"{b.label} {tag}: {fmt_num(v, 'ns')}", x1=f"{x:.1f}",
                                      y1=y + 8, x2=f"{x:.1f}", y2=y + 20, class_="wh"))
        first = f"{b.rate:,.0f}/s" if math.isfinite(b.rate) else fmt_num(m, "µs")
        txt = " · ".join(p for p in (first, fmt_num(b.cycles, b.cycles_unit),
                                     f"{b.x_fastest:.2f}×" if math.isfinite(b.x_fastest) else "")
                         if p and p != "–") or "no instances"
        body.append(f"<text x='{w - right + 8}' y='{y + 18}' class='vl'>{esc(txt)}</text>")
    body += _axis_x(left, w - right, top + rh * len(bars) + 2, 0.0, hi, "µs")
    return _svg(w, h + 10, body, title)


@dataclass
class Series:
    """Per-instance values of one RTOS/capture for the distribution charts (ns)."""

    label: str
    values: np.ndarray
    times: np.ndarray = field(default_factory=lambda: np.zeros(0))  #: instance start, ns
    instances: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    capture: str = ""


def histogram(series: Sequence[Series], unit_scale: float = 1e3, unit: str = "µs", bins: int = 40) -> str:
    """Overlaid histograms, one colour per series; hovering a bin names its range and count."""
    vals = [s.values[np.isfinite(s.values)] / unit_scale for s in series]
    if not any(v.size for v in vals):
        return ""
    lo = min(float(v.min()) for v in vals if v.size)
    hi = max(float(v.max()) for v in vals if v.size)
    if hi <= lo:
        lo, hi = lo - 0.5 * (abs(lo) * 0.01 or 1e-3), hi + 0.5 * (abs(hi) * 0.01 or 1e-3)
    edges = np.linspace(lo, hi, bins + 1)
    counts = [np.histogram(v, edges)[0] for v in vals]
    cmax = max(int(c.max()) for c in counts) or 1
    x0, x1, y0, y1 = 48, W - 10, 170, 14
    sx = lambda v: x0 + (v - lo) / (hi - lo) * (x1 - x0)  # noqa: E731
    body = []
    for k, (s, c) in enumerate(zip(series, counts)):
        col = colour(s.label, k)
        for i, n in enumerate(c.tolist()):
            if n == 0:
                continue
            hgt = n / cmax * (y0 - y1)
            tip = f"{s.label}: {n} instances in [{fmt_num(edges[i])}, {fmt_num(edges[i + 1])}) {unit}"
            body.append(_mark("rect", tip, x=f"{sx(edges[i]):.1f}", y=f"{y0 - hgt:.1f}",
                              width=f"{max(sx(edges[i + 1]) - sx(edges[i]) - 0.5, 0.8):.1f}",
                              height=f"{hgt:.1f}", fill=col, opacity="0.55"))
    body += _axis_x(x0, x1, y0, lo, hi, unit) + _axis_y(x0, y0, y1, 0, cmax)
    body.append(_legend(series, x0 + 8, y1 + 4))
    return _svg(W, y0 + 32, body, "histogram")


def _legend(series: Sequence[Series], x: float, y: float) -> str:
    out = []
    for k, s in enumerate(series):
        col = colour(s.label, k)
        out.append(f"<rect x='{x}' y='{y + 14 * k}' width='10' height='10' fill='{col}'/>"
                   f"<text x='{x + 14}' y='{y + 9 + 14 * k}' class='tk'>{esc(s.label)} "
                   f"(n={s.values.size})</text>")
    return "".join(out)


def _instance_tip(s: Series, i: int, v: float, unit: str, window: Any = None) -> str:
    at = fmt_num(s.times[i], "ticks") if unit == "ticks" else fmt_num(s.times[i] / 1e3, "µs")
    t = f" at t={at}" if i < s.times.size else ""
    inst = f" #{int(s.instances[i])}" if i < s.instances.size else ""
    cap = f" ({s.capture})" if s.capture else ""
    win = f" — window {window(s, i)}" if window is not None and i < s.times.size else ""
    return f"{s.label}{cap} instance{inst}{t}: {fmt_num(v)} {unit}{win}"


def box_plot(series: Sequence[Series], unit_scale: float = 1e3, unit: str = "µs", window: Any = None) -> str:
    """Tukey box plots (box p25–p75, median, whiskers to 1.5 IQR); every point beyond the whiskers
    is drawn and named (instance, timestamp and the export window around it) on hover."""
    ser = [s for s in series if np.isfinite(s.values).any()]
    if not ser:
        return ""
    allv = np.concatenate([s.values[np.isfinite(s.values)] for s in ser]) / unit_scale
    lo, hi = float(allv.min()), float(allv.max())
    if hi <= lo:
        lo, hi = lo - (abs(lo) * 0.01 or 1e-3), hi + (abs(hi) * 0.01 or 1e-3)
    x0, x1, y0, y1 = 48, W - 10, 170, 10
    sy = lambda v: y0 - (v - lo) / (hi - lo) * (y0 - y1)  # noqa: E731
    slot = (x1 - x0) / len(ser)
    body = _axis_y(x0, y0, y1, lo, hi)
    for k, s in enumerate(ser):
        ok = np.isfinite(s.values)
        v = s.values / unit_scale
        q1, med, q3 = np.percentile(v[ok], [25, 50, 75])
        iqr = q3 - q1
        wlo, whi = float(v[ok][v[ok] >= q1 - 1.5 * iqr].min()), float(v[ok][v[ok] <= q3 + 1.5 * iqr].max())
        cx, bw, col = x0 + slot * (k + 0.5), min(slot * 0.4, 60), colour(s.label, k)
        tip = (f"{s.label}: median {fmt_num(med)} {unit}, IQR {fmt_num(q1)}–{fmt_num(q3)}, "
               f"whiskers {fmt_num(wlo)}–{fmt_num(whi)} {unit}, n={int(ok.sum())}")
        body.append(f"<line x1='{cx}' y1='{sy(wlo):.1f}' x2='{cx}' y2='{sy(whi):.1f}' stroke='{col}'/>")
        body.append(_mark("rect", tip, x=f"{cx - bw / 2:.1f}", y=f"{sy(q3):.1f}", width=f"{bw:.1f}",
                          height=f"{max(sy(q1) - sy(q3), 1):.1f}", fill=col, fill_opacity="0.35", stroke=col))
        body.append(f"<line x1='{cx - bw / 2:.1f}' y1='{sy(med):.1f}' x2='{cx + bw / 2:.1f}' "
                    f"y2='{sy(med):.1f}' stroke='{col}' stroke-width='2'/>")
        out_idx = np.flatnonzero(ok & ((v < wlo) | (v > whi)))
        if out_idx.size > MAX_POINTS:
            out_idx = out_idx[np.argsort(-np.abs(v[out_idx] - med))[:MAX_POINTS]]
        for i in out_idx.tolist():
            body.append(_mark("circle", _instance_tip(s, i, float(v[i]), unit, window), cx=f"{cx:.1f}",
                              cy=f"{sy(v[i]):.1f}", r=3, fill="none", stroke=col))
        fit = max(int(slot / 5.6), 4)  # characters that fit under the box: the tail names it best
        lb = s.label if len(s.label) <= fit else "…" + s.label[-(fit - 1):]
        body.append(f"<text x='{cx:.1f}' y='{y0 + 15}' class='tk' text-anchor='middle'>{esc(lb)}"
                    f"<title>{esc(s.label)}</title></text>")
    body.append(f"<text x='4' y='{y1 + 4}' class='tk'>{esc(unit)}</text>")
    return _svg(W, y0 + 24, body, "box plot")


def _thin(v: np.ndarray, n: int) -> np.ndarray:
    """Indices of at most ``n`` points, evenly spaced, always keeping the largest and smallest."""
    ok = np.flatnonzero(np.isfinite(v))
    if ok.size <= n:
        return ok
    ext = ok[np.argsort(v[ok])]
    keep = np.concatenate([ext[: n // 10], ext[-(n // 10):], ok[:: max(ok.size // (n - n // 5), 1)]])
    return np.unique(keep)


def scatter(series: Sequence[Series], unit_scale: float = 1e3, unit: str = "µs", window: Any = None,
            t_scale: float = 1e6, t_unit: str = "ms") -> str:
    """Value against time (instance start from the recording's start, in ``t_unit``: ms, or ticks
    for a recording without a tick rate) per series, so drift and outliers are visible; hovering a
    point names the instance and its timestamp."""
    ser = [s for s in series if s.times.size == s.values.size and np.isfinite(s.values).any()]
    if not ser:
        return ""
    tmin = min(float(s.times.min()) for s in ser)
    tmax = max(float(s.times.max()) for s in ser)
    allv = np.concatenate([s.values[np.isfinite(s.values)] for s in ser]) / unit_scale
    lo, hi = float(allv.min()), float(allv.max())
    if hi <= lo:
        lo, hi = lo - (abs(lo) * 0.01 or 1e-3), hi + (abs(hi) * 0.01 or 1e-3)
    if tmax <= tmin:
        tmax = tmin + 1
    x0, x1, y0, y1 = 48, W - 10, 170, 10
    sx = lambda t: x0 + (t - tmin) / (tmax - tmin) * (x1 - x0)  # noqa: E731
    sy = lambda v: y0 - (v - lo) / (hi - lo) * (y0 - y1)  # noqa: E731
    body = _axis_y(x0, y0, y1, lo, hi) + _axis_x(x0, x1, y0, 0.0, (tmax - tmin) / t_scale, t_unit)
    per = max(MIN_POINTS, min(MAX_POINTS, CHART_POINTS // len(ser)))
    for k, s in enumerate(ser):
        col = colour(s.label, k)
        v = s.values / unit_scale
        for i in _thin(v, per).tolist():
            body.append(_mark("circle", _instance_tip(s, i, float(v[i]), unit, window), title=False,
                              cx=f"{sx(float(s.times[i])):.1f}", cy=f"{sy(v[i]):.1f}", r=2.2, fill=col,
                              fill_opacity="0.7"))
    body.append(f"<text x='4' y='{y1 + 4}' class='tk'>{esc(unit)}</text>")
    return _svg(W, y0 + 32, body, "scatter")


def line_chart(lines: Sequence[tuple[str, np.ndarray, np.ndarray]], unit: str, title: str,
               t_scale: float = 1e6, t_unit: str = "ms") -> str:
    """One polyline per ``(label, t, value)``, e.g. CPU load over time per core (``t`` in ns shown
    in ``t_unit``, or in ticks with ``t_scale=1``); points hoverable."""
    lines = [(lb, np.asarray(t, float), np.asarray(v, float)) for lb, t, v in lines if len(t)]
    if not lines:
        return ""
    tmin = min(float(t.min()) for _, t, _ in lines)
    tmax = max(float(t.max()) for _, t, _ in lines)
    tmax = tmax if tmax > tmin else tmin + 1
    hi = max(float(np.nanmax(v)) for _, _, v in lines) or 1.0
    x0, x1, y0, y1 = 48, W - 10, 170, 22
    sx = lambda t: x0 + (t - tmin) / (tmax - tmin) * (x1 - x0)  # noqa: E731
    sy = lambda v: y0 - v / hi * (y0 - y1)  # noqa: E731
    body = [f"<text x='0' y='12' class='ct'>{esc(title)}</text>"]
    body += _axis_y(x0, y0, y1, 0.0, hi) + _axis_x(x0, x1, y0, 0.0, (tmax - tmin) / t_scale, t_unit)
    for k, (lb, t, v) in enumerate(lines):
        col = PALETTE[k % len(PALETTE)]
        pts = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in zip(t.tolist(), v.tolist()))
        body.append(f"<polyline points='{pts}' fill='none' stroke='{col}' stroke-width='1.5'/>")
        for a, b in list(zip(t.tolist(), v.tolist()))[:: max(len(t) // 200, 1)]:
            at = fmt_num((a - tmin) / t_scale, t_unit)
            body.append(_mark("circle", f"{lb} at {at}: {fmt_num(b)} {unit}",
                              cx=f"{sx(a):.1f}", cy=f"{sy(b):.1f}", r=2.5, fill=col))
    body.append(_legend([Series(lb, v) for lb, _, v in lines], x1 - 160, y1))
    return _svg(W, y0 + 32, body, title)


def percent_bars(items: Sequence[tuple[str, float]], title: str) -> str:
    """Horizontal bars of percentages (e.g. CPU load per task and ISR), hoverable."""
    if not items:
        return ""
    rh, top, left, w = 18, 20, 150, 620
    body = [f"<text x='0' y='12' class='ct'>{esc(title)}</text>"]
    for i, (lb, v) in enumerate(items):
        y = top + i * rh
        width = max(min(v, 100.0), 0.0) / 100 * (w - left - 60)
        body.append(f"<text x='{left - 6}' y='{y + 12}' class='tk' text-anchor='end'>{esc(lb)}</text>")
        body.append(_mark("rect", f"{lb}: {v:.2f} %", x=left, y=y + 2, width=f"{max(width, 1):.1f}",
                          height=13, fill=PALETTE[i % len(PALETTE)]))
        body.append(f"<text x='{left + width + 4:.1f}' y='{y + 12}' class='tk'>{v:.2f} %</text>")
    return _svg(w, top + rh * len(items) + 6, body, title)


def _spread(ys: Sequence[float], gap: float) -> list[float]:
    """Label positions ``ys`` moved apart (keeping their order) so that no two are closer than ``gap``."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    out = list(ys)
    for a, b in zip(order, order[1:]):
        out[b] = max(out[b], out[a] + gap)
    return out


def xy_chart(lines: Sequence[tuple[str, Sequence[float], Sequence[float]]], x_label: str, y_unit: str,
             title: str) -> str:
    """One line with hoverable points per ``(label, x, y)`` (e.g. switch time against the number
    of tasks per RTOS), each in its RTOS colour; y from 0."""
    arrs = [(lb, np.asarray(x, float), np.asarray(y, float)) for lb, x, y in lines if len(x)]
    if not arrs:
        return ""
    xs = np.concatenate([x for _, x, _ in arrs])
    xlo, xhi = float(xs.min()), float(xs.max())
    xhi = xhi if xhi > xlo else xlo + 1
    hi = max(float(np.nanmax(y)) for _, _, y in arrs) * 1.1 or 1.0
    x0, x1, y0, y1 = 56, W - 150, 180, 38
    sx = lambda v: x0 + (v - xlo) / (xhi - xlo) * (x1 - x0)  # noqa: E731
    sy = lambda v: y0 - v / hi * (y0 - y1)  # noqa: E731
    body = [f"<text x='0' y='12' class='ct'>{esc(title)}</text>"]
    body += _axis_y(x0, y0, y1, 0.0, hi) + [f"<line x1='{x0}' y1='{y0}' x2='{x1}' y2='{y0}' class='ax'/>"]
    for v in sorted(set(xs.tolist())):
        body.append(f"<text x='{sx(v):.1f}' y='{y0 + 15}' class='tk' text-anchor='middle'>"
                    f"{fmt_num(v)}</text>")
    body.append(f"<text x='{x1}' y='{y0 + 28}' class='tk' text-anchor='end'>{esc(x_label)}</text>")
    body.append(f"<text x='4' y='{y1 - 10}' class='tk'>{esc(y_unit)}</text>")
    ends = _spread([sy(float(y[-1])) + 4 for _, _, y in arrs], 13.0)
    for k, (lb, x, y) in enumerate(arrs):
        col = colour(lb, k)
        pts = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in zip(x.tolist(), y.tolist()))
        body.append(f"<polyline points='{pts}' fill='none' stroke='{col}' stroke-width='2'/>")
        for a, b in zip(x.tolist(), y.tolist()):
            body.append(_mark("circle", f"{lb}, {x_label} {fmt_num(a)}: {fmt_num(b, y_unit)}",
                              cx=f"{sx(a):.1f}", cy=f"{sy(b):.1f}", r=3.5, fill=col))
        body.append(f"<text x='{x1 + 8}' y='{ends[k]:.1f}' class='lb' fill='{col}'>{esc(lb)}</text>")
    return _svg(W, y0 + 34, body, title)


def ecdf(series: Sequence[Series], title: str, unit_scale: float = 1e3, unit: str = "µs") -> str:
    """Empirical CDFs on one axis, one step line per series (share of instances ≤ x), each in its
    RTOS colour and named with its n; at most :data:`MAX_POINTS` steps per line (extremes kept)."""
    vals = [np.sort(s.values[np.isfinite(s.values)]) / unit_scale for s in series]
    if not any(v.size for v in vals):
        return ""
    lo, hi = min(float(v[0]) for v in vals if v.size), max(float(v[-1]) for v in vals if v.size)
    if hi <= lo:
        lo, hi = lo - (abs(lo) * 0.01 or 1e-3), hi + (abs(hi) * 0.01 or 1e-3)
    x0, x1, y0, y1 = 48, W - 10, 196, 40
    sx = lambda v: x0 + (v - lo) / (hi - lo) * (x1 - x0)  # noqa: E731
    sy = lambda f: y0 - f * (y0 - y1)  # noqa: E731
    body = [f"<text x='0' y='12' class='ct'>{esc(title)}</text>"]
    body += _axis_x(x0, x1, y0, lo, hi, unit) + _axis_y(x0, y0, y1, 0.0, 1.0)
    for k, (s, v) in enumerate(zip(series, vals)):
        if not v.size:
            continue
        col = colour(s.label, k)
        steps = np.linspace(0, v.size - 1, MAX_POINTS).astype(int)
        keep = np.unique(np.concatenate([[0, v.size - 1], steps]))
        pts = [f"{sx(lo):.1f},{sy(0):.1f}"]
        for i in keep.tolist():
            pts += [f"{sx(v[i]):.1f},{sy(i / v.size):.1f}", f"{sx(v[i]):.1f},{sy((i + 1) / v.size):.1f}"]
        body.append(f"<polyline points='{' '.join(pts)}' fill='none' stroke='{col}' stroke-width='1.8'/>")
        for q in (0.5, 0.99, 1.0):
            i = min(int(math.ceil(q * v.size)) - 1, v.size - 1)
            tip = f"{s.label}: {q:.0%} of {v.size} periods within {fmt_num(v[i])} {unit}"
            body.append(_mark("circle", tip, cx=f"{sx(v[i]):.1f}", cy=f"{sy((i + 1) / v.size):.1f}", r=3,
                              fill=col))
    body.append(_legend([s for s, v in zip(series, vals) if v.size], x1 - 170, y1 + 70))
    body.append(f"<text x='4' y='{y1 - 14}' class='tk'>share of periods ≤ x</text>")
    return _svg(W, y0 + 32, body, title)
