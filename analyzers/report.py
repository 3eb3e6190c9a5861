"""`crosstrace report DIR -o report.html`: one self-contained HTML file for a campaign.

Sections: summary, trace-versus-capture agreement (PASS/FAIL), per-test statistics, RTOS
comparison (multiples of the fastest and slowest, µs and cycles), histograms and box plots of
every latency/jitter metric per RTOS, clock alignment, exclusions, failures and provenance
(firmware hash, RTOS configuration, analyzer profile). Figures are inline PNG (data URIs); the
file needs nothing else to display.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import math
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

STAT_COLS = ("n", "mean", "std", "min", "p1", "p50", "p99", "max")
MAX_FIGURES = 40

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1b1f24;background:#fff}
h1{font-size:1.6em;margin-bottom:0}h2{border-bottom:2px solid #d0d7de;padding-bottom:4px;margin-top:32px}
h3{margin-top:20px}table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:right}th{background:#f3f5f7}
td.l,th.l{text-align:left}.PASS{background:#d7f5dd;color:#116329;font-weight:600}
.FAIL{background:#ffd8d3;color:#a40e26;font-weight:600}.UNRESOLVED,.NO_PAIRS,.NA{background:#fff4c2}
.muted{color:#656d76}.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #d0d7de;
border-radius:6px;padding:10px 16px;min-width:120px}.card b{font-size:1.6em;display:block}
figure{display:inline-block;margin:6px;border:1px solid #eaeef2;padding:4px}figcaption{font-size:12px}
code{background:#f3f5f7;padding:1px 4px;border-radius:3px}.wrap{overflow-x:auto}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return f"{v:,}"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return _esc(v)
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
) -> str:
    """Render a DataFrame's ``columns`` as an HTML table."""
    left = set(left)
    headers = headers or {}
    cols = [c for c in columns if c in df.columns]
    out = [
        "<div class='wrap'><table><tr>"
        + "".join(f'<th class="{"l" if c in left else ""}">{_esc(headers.get(c, c))}</th>' for c in cols)
        + "</tr>"
    ]
    for _, row in df.head(max_rows).iterrows():
        cells = []
        for c in cols:
            v = row[c]
            cls = "l" if c in left else ""
            if c == verdict_col:
                cls += f" {str(v).replace('/', '')}"
            text = _esc(v) if c in left or c == verdict_col else _fmt(v)
            cells.append(f'<td class="{cls.strip()}">{text}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    if len(df) > max_rows:
        out.append(f'<p class="muted">{len(df) - max_rows} more rows in the CSV files.</p>')
    return "\n".join(out)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def figures(out_dir: Path, campaign: Any) -> list[tuple[str, str]]:
    """(caption, data URI) histograms and box plots per metric, one series per RTOS."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from .batch import iter_instances

    frames = []
    ident = (
        campaign.drop_duplicates("capture").set_index("capture")[["rtos", "app"]]
        if not campaign.empty
        else pd.DataFrame()
    )
    for cid, df in iter_instances(out_dir):
        if df.empty or cid not in ident.index:
            continue
        df = df[(df["unit"] == "ns") & ~df["metric"].str.startswith("cpu.")]
        if df.empty:
            continue
        # one source per capture: the trace when present, else the ideal logic profile
        src = "trace" if (df["source"] == "trace").any() else "logic"
        df = df[df["source"] == src]
        if src == "logic":
            df = df[df["profile"] == sorted(df["profile"].unique())[0]]
        frames.append(df.assign(rtos=ident.loc[cid, "rtos"] or "?", capture=cid)[["metric", "rtos", "value"]])
    if not frames:
        return []
    allv = pd.concat(frames)
    out: list[tuple[str, str]] = []
    for metric, g in sorted(allv.groupby("metric"), key=lambda kv: kv[0]):
        if len(out) >= MAX_FIGURES:
            break
        groups = [(r, gg["value"].to_numpy(dtype=float) / 1e3) for r, gg in sorted(g.groupby("rtos"))]
        groups = [(r, v[np.isfinite(v)]) for r, v in groups if v.size]
        if not groups:
            continue
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.0))
        lo = min(float(v.min()) for _, v in groups)
        hi = max(float(v.max()) for _, v in groups)
        bins = np.linspace(lo, hi if hi > lo else lo + 1e-3, 40)
        for r, v in groups:
            ax1.hist(v, bins=bins, alpha=0.6, label=f"{r} (n={v.size})")
        ax1.set_xlabel(f"{metric} [µs]")
        ax1.set_ylabel("instances")
        ax1.legend(fontsize=8)
        ax2.boxplot([v for _, v in groups], showfliers=True)
        ax2.set_xticks(range(1, len(groups) + 1), [r for r, _ in groups])
        ax2.set_ylabel("µs")
        ax2.set_title(metric, fontsize=9)
        fig.tight_layout()
        out.append((f"{metric}: histogram and box plot per RTOS (µs)", _png(fig)))
    return out


def ctx_by_ntasks(camp: Any, caps: list[dict[str, Any]]) -> str | None:
    """HTML pivot of the context-switch mean by RTOS and number of tasks, or None."""
    if camp.empty:
        return None
    ntasks = {c["capture"]: (c.get("provenance") or {}).get("options", {}).get("CT_NTASKS") for c in caps}
    df = camp[(camp["metric"] == "ctx_switch.yield") & (camp["kind"] == "distribution")].copy()
    if df.empty:
        return None
    df["ntasks"] = df["capture"].map(ntasks)
    df = df[df["ntasks"].notna()]
    if df.empty:
        return None
    has_trace = set(df.loc[df["source"] == "trace", "capture"])
    df = df[(df["source"] == "trace") | (~df["capture"].isin(has_trace) & (df["source"] == "logic"))]
    df = df[(df["source"] == "trace") | (df["profile"] == "ideal")]
    piv = df.pivot_table(index="rtos", columns="ntasks", values="mean", aggfunc="mean")
    piv.columns = [f"N={int(c)}" for c in piv.columns]
    piv = piv.reset_index()
    return html_table(piv, list(piv.columns), left=("rtos",))


def render(out_dir: Path, *, title: str = "crosstrace report") -> str:
    """The report for the campaign written by ``crosstrace analyze`` into ``out_dir``."""
    import pandas as pd

    from .batch import load_campaign

    d = load_campaign(out_dir)
    man = d["manifest"]
    camp, xv, al, comp = d["campaign"], d["crossval"], d["alignment"], d["comparison"]
    counts = d["crossval_counts"]
    caps = man["captures"]
    ok = [c for c in caps if c.get("status") == "ok"]
    n_pass = int((xv["verdict"] == "PASS").sum()) if not xv.empty else 0
    n_fail = int((xv["verdict"] == "FAIL").sum()) if not xv.empty else 0
    n_unres = int(xv["verdict"].isin(["UNRESOLVED", "NO_PAIRS"]).sum()) if not xv.empty else 0
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1><p class='muted'>generated "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f" from <code>{_esc(out_dir)}</code>; analyzer code {_esc(man.get('code_hash', ''))}</p>",
        "<div class='cards'>",
        f"<div class='card'><b>{len(caps)}</b>captures</div>",
        f"<div class='card'><b>{len(ok)}</b>analyzed</div>",
        f"<div class='card'><b>{man.get('failed', 0)}</b>failed</div>",
        f"<div class='card PASS'><b>{n_pass}</b>metrics PASS</div>",
        f"<div class='card FAIL'><b>{n_fail}</b>metrics FAIL</div>",
        f"<div class='card UNRESOLVED'><b>{n_unres}</b>unresolved</div></div>",
    ]

    parts.append("<h2 id='agreement'>Trace versus capture agreement</h2>")
    parts.append(
        "<p>Each metric measured from the trace and from the logic capture; Δ = (trace − capture) / "
        "capture after the constant per-site calibration. PASS: |Δ of the means| ≤ 2 % and ≥ 99 % "
        "of the paired instances within 2 % (or within one quantum). UNRESOLVED: one trace tick "
        "plus one analyzer sample exceeds 2 % of the value, so 2 % cannot be judged with this "
        "analyzer profile.</p>"
    )
    if xv.empty:
        parts.append("<p class='muted'>No capture has both a trace and a logic capture.</p>")
    else:
        parts.append(
            html_table(
                xv.sort_values(["app", "rtos", "metric", "profile"]),
                [
                    "capture",
                    "profile",
                    "metric",
                    "n_pairs",
                    "unmatched_trace",
                    "unmatched_logic",
                    "trace_mean",
                    "logic_mean",
                    "rel_diff_pct",
                    "raw_rel_diff_pct",
                    "calibration_ns",
                    "calibration_pct",
                    "inst_abs_rel_pct_p99",
                    "inst_abs_rel_pct_max",
                    "within_tol_pct",
                    "quantum_pct",
                    "verdict",
                ],
                left=("capture", "profile", "metric"),
                verdict_col="verdict",
                headers={
                    "trace_mean": "trace mean [ns]",
                    "logic_mean": "capture mean [ns]",
                    "rel_diff_pct": "Δ mean %",
                    "raw_rel_diff_pct": "Δ uncalibrated %",
                    "calibration_ns": "site calibration [ns]",
                    "calibration_pct": "calibration %",
                    "inst_abs_rel_pct_p99": "|Δ| p99 %",
                    "inst_abs_rel_pct_max": "|Δ| max %",
                    "within_tol_pct": "% within 2 %",
                    "quantum_pct": "quantisation %",
                },
            )
        )
    if not counts.empty:
        parts.append("<h3>Counts measured on both sides</h3>")
        parts.append(
            html_table(
                counts,
                ["capture", "profile", "metric", "trace", "logic", "verdict"],
                left=("capture", "profile", "metric"),
                verdict_col="verdict",
            )
        )

    parts.append("<h2 id='tests'>Per-test statistics</h2>")
    if camp.empty:
        parts.append("<p class='muted'>No metrics.</p>")
    else:
        for app, g in camp.groupby("app", sort=True):
            parts.append(f"<h3>{_esc(app or '(no app)')}</h3>")
            dist = g[g["kind"] != "scalar"].sort_values(["metric", "rtos", "source", "capture"])
            if not dist.empty:
                parts.append(
                    html_table(
                        dist,
                        [
                            "metric",
                            "rtos",
                            "source",
                            "profile",
                            "capture",
                            "unit",
                            *STAT_COLS,
                            "excluded",
                            "unmatched",
                        ],
                        left=("metric", "rtos", "source", "profile", "capture", "unit"),
                    )
                )
            sc = g[g["kind"] == "scalar"].sort_values(["metric", "rtos", "source"])
            if not sc.empty:
                parts.append(
                    html_table(
                        sc,
                        ["metric", "rtos", "source", "profile", "capture", "mean", "unit"],
                        left=("metric", "rtos", "source", "profile", "capture", "unit"),
                        headers={"mean": "value"},
                    )
                )

    ntab = ctx_by_ntasks(camp, caps)
    if ntab is not None:
        parts.append("<h2 id='ntasks'>Context switch per number of tasks</h2>")
        parts.append(
            "<p>Mean <code>ctx_switch.yield</code> [ns] per RTOS (rows) and number of tasks "
            "(columns, <code>CT_NTASKS</code>), from the trace where present, else the pins.</p>"
        )
        parts.append(ntab)
    parts.append("<h2 id='comparison'>RTOS comparison</h2>")
    if comp.empty:
        parts.append("<p class='muted'>No comparable metrics.</p>")
    else:
        parts.append(
            "<p>Mean per RTOS as a multiple of the fastest (≥ 1) and of the slowest (≤ 1) RTOS; "
            "cycles use the board's CPU clock (QEMU at shift 0: 1 instruction per ns).</p>"
        )
        parts.append(
            html_table(
                comp,
                [
                    "board",
                    "app",
                    "variant",
                    "metric",
                    "source",
                    "profile",
                    "rtos",
                    "mean_ns",
                    "mean_us",
                    "mean_cycles",
                    "x_fastest",
                    "x_slowest",
                    "rank",
                    "runs",
                ],
                left=("board", "app", "variant", "metric", "source", "profile", "rtos"),
            )
        )
    ov = d.get("overhead")
    if ov is not None and not ov.empty:
        parts.append("<h3>Instrumentation overhead (traced minus untraced build, pins)</h3>")
        parts.append(html_table(ov, list(ov.columns), left=("board", "rtos", "app", "metric", "profile")))

    parts.append("<h2 id='figures'>Distributions</h2>")
    figs = figures(Path(out_dir), camp)
    if not figs:
        parts.append("<p class='muted'>No per-instance data.</p>")
    for cap, uri in figs:
        parts.append(
            f"<figure><img alt='{_esc(cap)}' src='{uri}'><figcaption>{_esc(cap)}</figcaption></figure>"
        )

    parts.append("<h2 id='alignment'>Clock alignment</h2>")
    if al.empty:
        parts.append("<p class='muted'>No alignment (no capture with both sources).</p>")
    else:
        parts.append(
            "<p>ts<sub>capture</sub> ≈ offset + (1 + drift)·ts<sub>trace</sub> + site offset; residuals "
            "after removing the fit and the constant site offset.</p>"
        )
        parts.append(
            html_table(
                al,
                [
                    "capture",
                    "profile",
                    "site",
                    "n_trace",
                    "n_logic",
                    "n_matched",
                    "unmatched_trace",
                    "unmatched_logic",
                    "offset_ns",
                    "drift_ppm",
                    "site_offset_ns",
                    "residual_std_ns",
                    "residual_max_ns",
                    "q_trace_ns",
                    "q_logic_ns",
                ],
                left=("capture", "profile", "site"),
            )
        )

    parts.append("<h2 id='exclusions'>Exclusions, diagnostics and failures</h2>")
    ex_rows = []
    for c in ok:
        for dg in c.get("diagnostics") or []:
            ex_rows.append({"capture": c["capture"], **dg})
    if ex_rows:
        parts.append(
            html_table(
                pd.DataFrame(ex_rows),
                ["capture", "source", "severity", "code", "offset", "count", "message"],
                left=("capture", "source", "severity", "code", "message"),
            )
        )
    if not camp.empty and ((camp["excluded"] > 0) | (camp["unmatched"] > 0)).any():
        sub = camp[(camp["excluded"] > 0) | (camp["unmatched"] > 0)]
        parts.append("<p>Instances excluded (OVERFLOW gaps, missed activations) or without an end event:</p>")
        parts.append(
            html_table(
                sub,
                ["capture", "metric", "source", "profile", "excluded", "unmatched"],
                left=("capture", "metric", "source", "profile"),
            )
        )
    failed = [c for c in caps if c.get("status") != "ok"]
    if failed:
        parts.append(
            "<h3>Failed captures</h3><table><tr><th class='l'>capture</th><th class='l'>error</th></tr>"
        )
        for c in failed:
            parts.append(
                f"<tr><td class='l'>{_esc(c['capture'])}</td>"
                f"<td class='l FAIL'>{_esc(c.get('error'))}</td></tr>"
            )
        parts.append("</table>")
    if not ex_rows and not failed:
        parts.append("<p class='muted'>None.</p>")

    parts.append("<h2 id='provenance'>Provenance</h2>")
    prov_rows = []
    for c in caps:
        p = c.get("provenance") or {}
        prov_rows.append(
            {
                "capture": c["capture"],
                "status": c.get("status"),
                "rtos": c.get("rtos"),
                "rtos_version": p.get("rtos_version", ""),
                "firmware_rev": p.get("firmware_rev", ""),
                "elf_sha256": (p.get("elf_sha256") or "")[:16],
                "config": p.get("config", ""),
                "options": " ".join(f"{k}={v}" for k, v in sorted((p.get("options") or {}).items())),
                "analyzer profile": ", ".join(
                    f"{q.get('name')} {q.get('samplerate') or '?'} S/s ppm={q.get('ppm')} "
                    f"jitter={q.get('jitter_ns')} ns"
                    for q in p.get("logic_profiles") or []
                    if q
                ),
                "sources": ", ".join(f"{k}: {v.get('file')}" for k, v in (c.get("sources") or {}).items()),
                "input": (c.get("input_hash") or "")[:12],
            }
        )
    if prov_rows:
        cols = list(prov_rows[0])
        parts.append(html_table(pd.DataFrame(prov_rows), cols, left=cols))
    parts.append("</body></html>")
    return "\n".join(parts)


def setup_cli(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("dir", type=Path, help="campaign folder written by `crosstrace analyze -o DIR`")
    sp.add_argument("-o", "--output", type=Path, default=Path("out/report.html"))
    sp.add_argument("--title", default="crosstrace report")
    sp.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    try:
        text = render(args.dir, title=args.title)
    except FileNotFoundError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 2
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text) / 1024:.0f} KiB)")
    return 0
