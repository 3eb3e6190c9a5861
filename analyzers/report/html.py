"""Page assembly: one function per section of the report.

The first screen answers the question the user came with — which RTOS is faster, by how much, and
do the trace and the pins agree — with a sentence, the agreement tally and one chart per test.
Everything else follows in collapsed sections whose tables can be searched and sorted.
"""

from __future__ import annotations

import html
import itertools
import math
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from . import figures as F
from . import select as S

STAT_COLS = ("n", "mean", "std", "min", "p1", "p50", "p99", "max")
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;padding:14px 22px;
max-width:1500px;color:#1b1f24;background:#fff}
h1{font-size:1.35em;margin:0 0 2px}h2{border-bottom:2px solid #d0d7de;padding-bottom:3px;margin-top:26px;
font-size:1.2em}h3{margin:14px 0 4px;font-size:1em}
.answer{font-size:1.15em;margin:6px 0 8px;line-height:1.4}.answer b{font-size:1.1em}
.top{display:grid;grid-template-columns:minmax(260px,1fr) 2.2fr;gap:14px;align-items:start}
@media (max-width:900px){.top{grid-template-columns:minmax(0,1fr)}body{padding:10px 12px}}
.top>*,.grid>*,.figs>*{min-width:0}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(330px,100%),1fr));gap:8px 14px}
.panel{border:1px solid #d0d7de;border-radius:6px;padding:8px 10px;overflow-wrap:anywhere}
.cards{display:flex;gap:6px;flex-wrap:wrap;margin:4px 0}.card{border:1px solid #d0d7de;border-radius:6px;
padding:4px 10px;min-width:64px;text-align:center;font-size:12px}.card b{font-size:1.5em;display:block}
table{border-collapse:collapse;margin:6px 0 12px;font-size:12.5px}
th,td{border:1px solid #d0d7de;padding:2px 6px;text-align:right}th{background:#f3f5f7;cursor:pointer}
td.l,th.l{text-align:left}.PASS{background:#d7f5dd;color:#116329;font-weight:600}
.FAIL{background:#ffd8d3;color:#a40e26;font-weight:600}.INCOMPLETE{background:#ffe7c2;color:#7d4e00}
.UNRESOLVED,.NO_PAIRS,.NA{background:#fff4c2}.XFAIL{background:#e7e1fb;color:#4b2a99;font-weight:600}
li.XFAIL{font-weight:400;font-size:.9em}
.muted{color:#656d76;font-size:12px}code{background:#f3f5f7;padding:1px 4px;border-radius:3px}
.wrap{overflow-x:auto}details{margin:6px 0}summary{cursor:pointer;font-weight:600}
input.filter{margin:4px 0;padding:2px 6px;width:260px}
svg.chart{width:100%;height:auto;display:block}svg .ax{stroke:#8c959f}svg text{font-size:11px;fill:#1b1f24}
svg .tk{font-size:10px;fill:#57606a}svg .ct{font-size:12px;font-weight:600}svg .vl{font-size:11px}
svg .lb{font-size:11.5px;font-weight:600}svg .wh{stroke:#1b1f24;stroke-width:1.3}
svg [data-tip]:hover{stroke:#000;stroke-width:1.5}.figs{display:grid;
grid-template-columns:repeat(auto-fill,minmax(min(360px,100%),1fr));gap:6px}
td.cmd{text-align:left;font-family:ui-monospace,monospace;font-size:11px;overflow-wrap:anywhere;
min-width:22em;max-width:40em}.wrap{max-width:100%}
#tip{position:fixed;display:none;background:#1b1f24;color:#fff;padding:4px 8px;border-radius:4px;
font-size:12px;max-width:440px;pointer-events:none;z-index:9}
"""
_ids = itertools.count()


def esc(x: Any) -> str:
    return html.escape(str(x))


def fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return esc(v)
    if math.isnan(f):
        return ""
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    if abs(f) >= 1000:
        return f"{f:,.1f}"
    return f"{f:.{digits}g}"


def html_table(
    df: Any,
    columns: Sequence[str],
    *,
    left: Iterable[str] = (),
    verdict_col: str | None = None,
    max_rows: int = 2000,
    headers: dict[str, str] | None = None,
    search: bool = False,
    code: Iterable[str] = (),
) -> str:
    """A DataFrame's ``columns`` as a sortable HTML table (with a search box when ``search``;
    ``code`` columns hold commands, wrapped anywhere rather than widening the table)."""
    left, code = set(left), set(code)
    headers = headers or {}
    cols = [c for c in columns if c in df.columns]
    tid = f"t{next(_ids)}"
    out = []
    if search:
        out.append(f"<input class='filter' data-table='{tid}' placeholder='search {len(df)} rows'>")
    out.append(
        f"<div class='wrap'><table id='{tid}' class='sortable'><tr>"
        + "".join(f'<th class="{"l" if c in left else ""}">{esc(headers.get(c, c))}</th>' for c in cols)
        + "</tr>"
    )
    for rd in df.head(max_rows)[cols].to_dict("records"):
        cells = []
        for c in cols:
            v = rd[c]
            cls = "cmd" if c in code else "l" if c in left else ""
            if c == verdict_col:
                cls += f" {str(v).replace('/', '')}"
            text = _label(v) if c in left or c in code or c == verdict_col else fmt(v)
            num = "" if c in left else _data_v(v)
            cells.append(f'<td class="{cls.strip()}"{num}>{text}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    if len(df) > max_rows:
        out.append(f'<p class="muted">{len(df) - max_rows} more rows in the CSV files.</p>')
    return "\n".join(out)


def _label(v: Any) -> str:
    """A text cell: empty for a missing value (None, NaN), never "nan"."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return esc(v)


def _data_v(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return ""
    return f" data-v='{f!r}'" if math.isfinite(f) else ""


def _details(summary: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>{body}</details>"


def head(title: str, out_dir: Path, man: dict[str, Any]) -> str:
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'><title>{esc(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1><p class='muted'>generated "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} from <code>{esc(out_dir)}</code>; "
        f"{len(man.get('captures', []))} captures, analyzer code {esc(man.get('code_hash', ''))}</p>"
    )


def section_answer(tests: list[S.Test], ag: S.Agreement, caps: list[dict[str, Any]],
                   own: Sequence[str] = ()) -> str:
    """The first screen: the answer in one sentence, the agreement tally, one chart per test (for
    a folder of the user's own recordings only: what they are, and a pointer to their pages)."""
    h, ht = S.headline(tests), S.headline_test(tests)
    if not tests and not ag.rows and not ag.controls and own:
        return ("<section id='answer'><p class='answer'>"
                f"{len(own)} recording{'s' if len(own) > 1 else ''} of your own firmware (no test sites, "
                "no pins): <a href='#own'>CPU share per task and ISR, each task's and ISR's timing, "
                "and the kernel metrics</a> of each below.</p></section>")
    parts = ["<section id='answer'>"]
    if h is None or len(h["ranking"]) < 2:
        parts.append("<p class='answer'>No test was measured on more than one RTOS: nothing to compare.</p>")
    else:
        best, rest = h["ranking"][0], h["ranking"][1:]
        slower = "; ".join(
            f"<b>{esc(r['rtos'])}</b> {F.fmt_num(r['mean_ns'], 'ns')} "
            f"({F.fmt_num(r['cycles'], r['cycles_unit'])}), <b>{r['x']:.2f}×</b> as long" for r in rest
        )
        what = ", ".join(esc(x) for x in (f"variant {h['variant']}" if h["variant"] else "",
                                          _scale_words(h["time_scale"])) if x)
        parts.append(
            f"<p class='answer'><b>{esc(best['rtos'])}</b> is fastest at <code>{esc(h['metric'])}</code>: "
            f"<b>{F.fmt_num(best['mean_ns'], 'ns')}</b> ({F.fmt_num(best['cycles'], best['cycles_unit'])}) "
            f"measured {S.SOURCE_LABEL.get(h['source'], h['source'])}"
            f"{' (' + esc(h['profile']) + ' analyzer)' if h['profile'] else ''}; {slower}.</p>"
            + (f"<p class='muted' id='figure-definition'>Here ({what}) {ht.definition()} "
               f"<code>{esc(ht.csv_row)}</code>. The charts, the panel beside them and the "
               "number-of-tasks table show these same figures.</p>" if what and ht else "")
        )
    parts.append("<div class='top'><div class='panel'>" + agreement_summary(ag, caps)
                 + (metric_agreement(ag, ht) if ht else "") + "</div>")
    parts.append("<div class='grid'>")
    for t in tests:
        src = S.SOURCE_LABEL.get(t.source, t.source) + (f", {t.profile}" if t.profile else "")
        rate = "; beside: iterations/s" if t.metric == S.RATE_METRIC else ""
        parts.append("<div>" + F.comparison_chart(t.bars, t.name, f"{t.metric} ({src}){rate}") + "</div>")
    virtual = any(t.time_scale and t.time_scale != "real time" for t in tests)
    cyc = ("CPU cycles (instructions on a QEMU icount time scale)" if virtual else "CPU cycles")
    parts.append("</div></div>" + ("<p class='muted'>Bars: " + S.FIGURE_SHORT
                                   + "; whisker ticks: p50, p99, max; beside "
                                   f"each bar: µs · {cyc} · multiple of the fastest. Each chart is one "
                                   "time scale; hover for details."
                                   + (" Thread-Metric: time per iteration of the test (all its threads; "
                                      "<code>tm.ns_per_iter</code> in campaign.csv), its iterations per "
                                      "second (<code>tm.rate</code>) beside the bar."
                                      if any(t.metric == S.RATE_METRIC for t in tests) else "")
                                   + "</p>" if tests else "") + "</section>")
    return "\n".join(parts)


def _scale_words(ts: str) -> str:
    """A time-scale label in words (``8 ns/insn`` -> QEMU icount, 8 ns per instruction)."""
    if not ts or ts == "real time":
        return ts
    return f"QEMU icount, {ts.replace(' ns/insn', ' ns per instruction')}"


def metric_agreement(ag: S.Agreement, t: S.Test) -> str:
    """Trace against pins for the headline test ``t``: per RTOS its figure from the trace and at the
    pins (:meth:`S.Test.figure`, the numbers of the sentence and the charts), the raw Δ of its
    captures' cross-validation rows, and what was not judged (by metric)."""
    xv = ag.all_rows
    if xv is None or xv.empty:
        return ""
    out = []
    m = xv[(xv["metric"] == t.metric) & xv["capture"].isin(list(t.captures))]
    pins_prof = t.profile if t.source == "logic" else "ideal"
    if "profile" in m.columns:
        m = m[m["profile"] == pins_prof]
    items = []
    for b in sorted(t.bars, key=lambda b: b.label):
        tr, pins = t.figure(b.label, "trace"), t.figure(b.label, "logic", pins_prof)
        if not (math.isfinite(tr) and math.isfinite(pins)):
            continue
        g = m[m["rtos"].astype(str) == b.label.split(" (")[0]] if "rtos" in m.columns else m.iloc[:0]
        raw = S._max_abs(g, "raw_rel_diff_pct")
        items.append(f"<li><b>{esc(b.label)}</b>: trace {F.fmt_num(tr, 'ns')}, pins {F.fmt_num(pins, 'ns')}"
                     + (f", raw Δ up to {_pct(raw)}" if raw == raw else "") + "</li>")
    if items:
        where = f" ({esc(pins_prof)} analyzer, {esc(t.time_scale)})" if pins_prof else ""
        out.append(f"<p><code>{esc(t.metric)}</code> measured both ways{where}:</p><ul>{''.join(items)}</ul>")
    other = xv[~xv["verdict"].isin(["PASS", "FAIL"])]
    if not other.empty:
        by = other.groupby(["verdict", "metric"]).size().sort_values(ascending=False)
        items = [f"{esc(mt)} ×{n} ({esc(v)})" for (v, mt), n in by.head(4).items()]
        more = f", … {len(by) - 4} more" if len(by) > 4 else ""
        out.append(f"<p class='muted'>Not judged: {', '.join(items)}{more}.</p>")
    return "\n".join(out)


def agreement_summary(ag: S.Agreement, caps: list[dict[str, Any]]) -> str:
    """Do trace and pins agree? Verdict counts, the failures with their raw Δ, negative controls."""
    if ag.rows == 0 and not ag.controls:
        return ("<h3>Trace versus pins</h3><p class='muted'>No capture has both a trace and a logic "
                "capture: nothing to cross-validate.</p>")
    c = ag.counts
    word = "Yes" if ag.agree else "No"
    unjudged = ag.rows - c.get("PASS", 0) - c.get("FAIL", 0)
    out = [f"<h3>Do trace and pins agree? {word}.</h3>",
           f"<p>{c.get('PASS', 0)} PASS and {c.get('FAIL', 0)} FAIL of {ag.rows} metric comparisons"
           + (f"; {unjudged} not judged (INCOMPLETE / UNRESOLVED)" if unjudged else "")
           + ".</p><p class='muted'>A comparison is a row of crossval.csv (capture, analyzer profile, metric)"
           + ("; those of negative controls are counted apart" if ag.controls else "") + ".</p>"
           + "<div class='cards'>"]
    for v in S.VERDICTS:
        if v == "NO_PAIRS" and not c.get(v):
            continue
        out.append(f"<div class='card {v}'><b>{c.get(v, 0)}</b>{v}</div>")
    if ag.controls:
        ok = sum(x["as_expected"] for x in ag.controls)
        out.append(f"<div class='card XFAIL'><b>{ok}/{len(ag.controls)}</b>controls failed as expected</div>")
    out.append("</div>")
    if ag.failures is not None and not ag.failures.empty:
        out.append("<p><b>Failures</b> (raw Δ: trace vs pins before any calibration):</p><ul>")
        for r in ag.failures.head(12).to_dict("records"):
            out.append(f"<li class='FAIL'>{esc(r['capture'])} · {esc(r.get('profile', ''))} · "
                       f"<code>{esc(r['metric'])}</code>: raw Δ {_pct(r.get('raw_rel_diff_pct'))}, "
                       f"calibrated Δ {_pct(r.get('rel_diff_pct'))}</li>")
        if len(ag.failures) > 12:
            out.append(f"<li>… {len(ag.failures) - 12} more in the agreement table</li>")
        out.append("</ul><p class='muted'><a href='#windows'>The time window of each failure</a>, "
                   "to open in Perfetto with <code>crosstrace export</code>.</p>")
    if ag.controls:
        out.append("<p><b>Negative controls</b> (a fault injected on purpose; they must fail):</p><ul>")
        for x in ag.controls:
            cls = "XFAIL" if x["as_expected"] else "FAIL"
            label = "expected failure" if x["as_expected"] else f"did NOT fail as expected ({x['verdict']})"
            out.append(f"<li class='{cls}'>{esc(x['capture'])}: {label}"
                       + (f" — {esc(x['what'])}" if x["what"] else "")
                       + (f"; raw Δ {_pct(x['raw_delta'])} in {esc(x['failed_metrics'])}"
                          if x["failed_metrics"] else "") + "</li>")
        out.append("</ul>")
    failed_caps = [k for k in caps if k.get("status") != "ok"]
    if failed_caps:
        out.append(f"<p class='FAIL'>{len(failed_caps)} capture(s) could not be analyzed "
                   "(see Exclusions and failures).</p>")
    return "\n".join(out)


def _pct(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "–"
    return f"{f:+.2f} %" if math.isfinite(f) else "–"


XV_COLS = ["capture", "profile", "metric", "verdict", "n_pairs", "unmatched_trace", "unmatched_logic",
           "first_unmatched_trace_ns", "first_unmatched_logic_ns", "trace_mean", "logic_mean",
           "raw_rel_diff_pct", "rel_diff_pct", "calibration_ns", "calibration_source",
           "inst_abs_rel_pct_p99", "inst_abs_rel_pct_max", "within_tol_pct", "quantum_pct", "reason"]
XV_HEADERS = {
    "trace_mean": "trace mean [ns]", "logic_mean": "pins mean [ns]", "rel_diff_pct": "Δ calibrated %",
    "raw_rel_diff_pct": "Δ raw %", "calibration_ns": "calibration [ns]",
    "calibration_source": "calibration from", "inst_abs_rel_pct_p99": "|Δ| p99 %",
    "inst_abs_rel_pct_max": "|Δ| max %", "within_tol_pct": "% within tol.", "quantum_pct": "quantum %",
    "first_unmatched_trace_ns": "1st unmatched trace [ns]",
    "first_unmatched_logic_ns": "1st unmatched pins [ns]",
}


def section_agreement(xv: Any, counts: Any, controls: Sequence[str] = ()) -> str:
    parts = ["<h2 id='agreement'>Trace versus pins, per metric</h2>",
             "<p class='muted'>Each metric measured from the trace and at the pins. Δ raw = (trace − pins) / "
             "pins with no calibration (the judged quantity); Δ calibrated after the declared per-site "
             "calibration, with its source. INCOMPLETE: instances missing on one side; UNRESOLVED: one "
             "trace tick plus one analyzer sample exceeds the tolerance.</p>"]
    if xv is None or xv.empty:
        return "\n".join(parts + ["<p class='muted'>No capture has both a trace and a logic capture.</p>"])
    order = {"FAIL": 0, "INCOMPLETE": 1, "UNRESOLVED": 2, "NO_PAIRS": 3, "PASS": 4}
    df = xv.assign(_o=xv["verdict"].map(order).fillna(5)).sort_values(["_o", "capture", "metric", "profile"])
    body = html_table(df, XV_COLS, left=("capture", "profile", "metric", "calibration_source", "reason"),
                      verdict_col="verdict", headers=XV_HEADERS, search=True)
    n_ctl = int(xv["capture"].isin(list(controls)).sum()) if controls else 0
    what = (f"{len(xv) - n_ctl} comparisons counted above, and {n_ctl} of negative controls "
            "(expected to fail; not counted)" if n_ctl else f"{len(xv)} comparisons")
    parts.append(_details(f"{what} — failures first", body))
    if counts is not None and not counts.empty:
        parts.append(_details("Counts measured on both sides", html_table(
            counts, ["capture", "profile", "metric", "trace", "logic", "verdict"],
            left=("capture", "profile", "metric"), verdict_col="verdict", search=True)))
    return "\n".join(parts)


def section_kernel_vs_pin(kvp: Any) -> str:
    if kvp is None or kvp.empty:
        return ""
    cols = ["rtos", "capture", "profile", "kernel_event", "event", "site", "n", "mean_ns", "std_ns", "min_ns",
            "max_ns"]
    kvp = kvp.sort_values([c for c in ("kernel_event", "rtos", "capture", "profile") if c in kvp.columns])
    return ("<h2 id='kernel-vs-pin'>How late the RTOS stamps its own events</h2><p class='muted'>The "
            "RTOS's own ISR-enter / switch-in event relative to the pin of the same site (positive: the "
            "kernel event is stamped later).</p>"
            + _details(f"{len(kvp)} rows", html_table(
                kvp, cols, left=("rtos", "capture", "profile", "kernel_event", "event", "site"),
                search=True)))


def section_tests(camp: Any) -> str:
    parts = ["<h2 id='tests'>Per-test statistics</h2>"]
    if camp is None or camp.empty:
        return "\n".join(parts + ["<p class='muted'>No metrics.</p>"])
    for app, g in camp.groupby("app", sort=True):
        dist = g[g["kind"] != "scalar"].sort_values(["metric", "rtos", "source", "capture"])
        sc = g[g["kind"] == "scalar"].sort_values(["metric", "rtos", "source"])
        body = ""
        if not dist.empty:
            body += html_table(dist, ["metric", "rtos", "source", "profile", "capture", "unit", *STAT_COLS,
                                      "excluded", "unmatched"],
                               left=("metric", "rtos", "source", "profile", "capture", "unit"), search=True)
        if not sc.empty:
            body += html_table(sc, ["metric", "rtos", "source", "profile", "capture", "mean", "unit"],
                               left=("metric", "rtos", "source", "profile", "capture", "unit"),
                               headers={"mean": "value"}, search=True)
        parts.append(_details(f"{esc(app or '(no app)')} ({len(g)} rows)", body))
    return "\n".join(parts)


def section_comparison(comp: Any, ov: Any) -> str:
    parts = ["<h2 id='comparison'>RTOS comparison, every metric</h2>"]
    if comp is None or comp.empty:
        return "\n".join(parts + ["<p class='muted'>No comparable metrics.</p>"])
    keys = ["board", "app", "variant", "time_scale", "metric", "source", "profile", "rtos", "tracer"]
    boards = comp["board"].dropna().unique() if "board" in comp.columns else []
    if len(boards) == 1:  # one board: said once, not on every row (the table fits a desktop screen)
        keys = keys[1:]
    cols = keys + ["mean_ns", "mean_cycles", "cycles_unit", "x_fastest", "x_slowest", "rank", "runs"]
    on = f" on {esc(boards[0])}" if len(boards) == 1 else ""
    parts.append(_details(f"{len(comp)} rows (comparison.csv){on}: mean per RTOS as a multiple of the "
                          "fastest and slowest of the same board, app, variant, time scale, metric, source "
                          "and profile",
                          html_table(comp, cols, left=keys + ["cycles_unit"], search=True)))
    if ov is not None and not ov.empty:
        parts.append(_details("Instrumentation overhead (traced minus untraced build, pins)",
                              html_table(ov, list(ov.columns), left=("board", "rtos", "app", "metric",
                                                                      "profile"))))
    return "\n".join(parts)


def section_distributions(series: dict[str, list[F.Series]], out_rows: Any, folders: dict[str, str]) -> str:
    parts = ["<h2 id='figures'>Distributions</h2>"]
    if not series:
        return "\n".join(parts + ["<p class='muted'>No per-instance data.</p>"])
    parts.append("<p class='muted'>Per metric, build variant and time scale, one series per RTOS (trace "
                 "instances where the capture has a trace, else the pins): histogram, box plot (points: "
                 "outliers) and every instance against time. "
                 "Hover a point for its instance, timestamp and the window to export.</p>")
    win = lambda s, i: S.window_for(int(s.times[i]), int(s.times[i] + s.values[i]))  # noqa: E731
    headline, opened = set(S.HEADLINE.values()), set()
    for title, ser in series.items():
        metric, _, rest = title.partition(" · ")
        figs = [F.histogram(ser), F.box_plot(ser, window=win), F.scatter(ser, window=win)]
        body = "<div class='figs'>" + "".join(f"<div>{f}</div>" for f in figs if f) + "</div>"
        open_ = metric in headline and len(ser) > 1 and metric not in opened
        opened |= {metric} if open_ else set()
        parts.append(_details(f"<code>{esc(metric)}</code>{' · ' + esc(rest) if rest else ''} "
                              f"({', '.join(esc(s.label) for s in ser)})", body, open_=open_))
    if out_rows is not None and not out_rows.empty:
        df = out_rows.assign(export=[
            f"crosstrace export {folders.get(c, c)} --perfetto {c.replace('/', '_')}.pftrace --window {w}"
            for c, w in zip(out_rows["capture"], out_rows["window"])])
        parts.append("<div id='windows'></div>")
        parts.append(_details(f"Failing and outlying instances ({len(df)}): the window to open in Perfetto",
                              # the capture is named by its folder in the export command
                              html_table(df, ["metric", "why", "source", "instance", "value_ns",
                                              "median_ns", "window", "export"],
                                         left=("metric", "why", "source", "window", "export"),
                                         code=("export",), search=True),
                              open_=bool((df["why"] != "outlier").any())))
    return "\n".join(parts)


def section_own(out_dir: Path, camp: Any, own: list[str], inst: dict[str, Any]) -> str:
    """Recordings of the user's own firmware (no sites, no pins): per-task and per-ISR timing from
    the kernel events, CPU load over time per core, and the metrics the analyzers wrote."""
    if not own:
        return ""
    from .own import page

    parts = ["<h2 id='own'>Your recordings</h2><p class='muted'>Recordings without test sites or pins: "
             "timing from the RTOS's own events, per task, per ISR and per core.</p>"]
    for cid in own:
        g = camp[camp["capture"] == cid]
        body = page(out_dir, cid, g, inst.get(cid), html_table)
        stats = g[g["kind"] != "scalar"].sort_values("metric")
        if not stats.empty:
            body.append(html_table(stats, ["metric", "source", "unit", *STAT_COLS],
                                   left=("metric", "source", "unit"), search=True))
        parts.append(_details(f"{esc(cid)}", "".join(b for b in body if b), open_=True))
    return "\n".join(parts)


def section_alignment(al: Any) -> str:
    parts = ["<h2 id='alignment'>Clock alignment</h2>"]
    if al is None or al.empty:
        return "\n".join(parts + ["<p class='muted'>No alignment (no capture with both sources).</p>"])
    cols = ["capture", "profile", "site", "n_trace", "n_logic", "n_matched", "unmatched_trace",
            "unmatched_logic", "offset_ns", "drift_ppm", "site_offset_ns", "residual_std_ns",
            "residual_max_ns", "q_trace_ns", "q_logic_ns"]
    parts.append(_details(
        f"{len(al)} site fits: ts<sub>pins</sub> ≈ offset + (1 + drift)·ts<sub>trace</sub> + site offset",
        html_table(al, cols, left=("capture", "profile", "site"), search=True)))
    return "\n".join(parts)


def section_exclusions(camp: Any, caps: list[dict[str, Any]]) -> str:
    import pandas as pd

    parts = ["<h2 id='exclusions'>Exclusions, diagnostics and failures</h2>"]
    failed = [c for c in caps if c.get("status") != "ok"]
    if failed:
        parts.append("<h3>Failed captures</h3><div class='wrap'><table><tr><th class='l'>capture</th>"
                     "<th class='l'>error</th></tr>")
        parts += [f"<tr><td class='l'>{esc(c['capture'])}</td>"
                  f"<td class='l FAIL' style='overflow-wrap:anywhere'>{esc(c.get('error'))}</td></tr>"
                  for c in failed]
        parts.append("</table></div>")
    rows = [{"capture": c["capture"], **dg} for c in caps if c.get("status") == "ok"
            for dg in c.get("diagnostics") or []]
    if rows:
        parts.append(_details(f"{len(rows)} diagnostics", html_table(
            pd.DataFrame(rows), ["capture", "source", "severity", "code", "offset", "count", "message"],
            left=("capture", "source", "severity", "code", "message"), search=True)))
    if camp is not None and not camp.empty and ((camp["excluded"] > 0) | (camp["unmatched"] > 0)).any():
        sub = camp[(camp["excluded"] > 0) | (camp["unmatched"] > 0)]
        parts.append(_details(f"{len(sub)} metrics with excluded or unmatched instances", html_table(
            sub, ["capture", "metric", "source", "profile", "excluded", "unmatched"],
            left=("capture", "metric", "source", "profile"), search=True)))
    if len(parts) == 1:
        parts.append("<p class='muted'>None.</p>")
    return "\n".join(parts)


def section_provenance(caps: list[dict[str, Any]], info: dict[str, dict[str, Any]]) -> str:
    import pandas as pd

    rows = []
    for c in caps:
        p = c.get("provenance") or {}
        e = info.get(str(c.get("capture")), {})
        ts = e.get("time_scale") or {}
        rows.append({
            "capture": c["capture"], "status": c.get("status"), "verdict": e.get("verdict") or "",
            "expected": e.get("expected_verdict") or "", "rtos": c.get("rtos"),
            "rtos_version": p.get("rtos_version", ""), "firmware_rev": p.get("firmware_rev", ""),
            "elf_sha256": (p.get("elf_sha256") or "")[:16], "config": p.get("config", ""),
            "options": " ".join(f"{k}={v}" for k, v in sorted((p.get("options") or {}).items())),
            "time scale": (f"icount shift {ts.get('icount_shift')}, {ts.get('ns_per_insn')} ns/insn"
                           if ts else ""),
            "analyzer profile": ", ".join(
                f"{q.get('name')} {q.get('samplerate') or '?'} S/s ppm={q.get('ppm')} "
                f"jitter={q.get('jitter_ns')} ns"
                for q in p.get("logic_profiles") or [] if q),
            "sources": ", ".join(f"{k}: {v.get('file')}" for k, v in (c.get("sources") or {}).items()),
            "input": (c.get("input_hash") or "")[:12],
        })
    if not rows:
        return ""
    cols = list(rows[0])
    return "<h2 id='provenance'>Provenance</h2>" + _details(
        f"{len(rows)} captures: firmware, RTOS configuration, analyzer profile",
        html_table(pd.DataFrame(rows), cols, left=cols, verdict_col="verdict", search=True))
