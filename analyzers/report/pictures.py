"""The report's pictures of one question each: context-switch time against the number of tasks,
and the period jitter of the periodic tests, one chart per time scale with every RTOS on one axis.
The numbers are the first screen's (:func:`.select.tests`) or the per-instance series
(:func:`.select.series`); nothing is computed again here."""

from __future__ import annotations

import math
import re
from typing import Any

from . import figures as F
from . import html as H
from . import select as S

#: the jitter metrics pictured per RTOS (``periodic.<task>.jitter.abs``: |period − nominal| per period)
JITTER = re.compile(r"periodic\.\w+\.jitter\.abs")


def section_ntasks(tests: list[S.Test], caps: list[dict[str, Any]]) -> str:
    """The context-switch figures of the first screen (:func:`S.tests`: the same numbers, never
    computed again) by RTOS and number of tasks (``CT_NTASKS``), one row per time scale, RTOS, build
    and measurement."""
    import pandas as pd

    ntasks = {c["capture"]: (c.get("provenance") or {}).get("options", {}).get("CT_NTASKS") for c in caps}
    rows = []
    for t in tests:
        ns = {int(n) for n in (ntasks.get(c) for c in t.captures) if n is not None}
        if t.metric != "ctx_switch.yield" or len(ns) != 1:
            continue
        how = S.SOURCE_LABEL.get(t.source, t.source) + (f", {t.profile}" if t.profile else "")
        rows += [{"time scale": t.time_scale, "rtos": b.label, "build": _build_words(t.variant),
                  "measured": how, "ntasks": next(iter(ns)), "mean": b.mean} for b in t.bars]
    if not rows:
        return ""
    df = pd.DataFrame(rows)
    index = ["time scale", "rtos", "build", "measured"]
    piv = df.pivot_table(index=index, columns="ntasks", values="mean", aggfunc="first")
    piv.columns = [f"N={int(c)}" for c in piv.columns]
    piv = piv.reset_index()
    piv = piv.iloc[sorted(range(len(piv)), key=lambda i: (S.time_scale_order(piv["time scale"].iat[i]),
                                                            piv["rtos"].iat[i], piv["build"].iat[i]))]
    return ("<h2 id='ntasks'>Context switch per number of tasks</h2><p class='muted'>Mean "
            "<code>ctx_switch.yield</code> [ns] per time scale, RTOS and build, by number of tasks "
            "(<code>CT_NTASKS</code>): the first screen's figures (" + S.FIGURE_SHORT
            + "), measured as each row says. One run per cell: compare rows of the same time scale only.</p>"
            + _ntasks_charts(piv) + H.html_table(piv, list(piv.columns), left=index))


def _ntasks_charts(piv: Any) -> str:
    """Switch time against the number of tasks, one line per RTOS (default build), one chart per
    time scale."""
    ns = [c for c in piv.columns if c.startswith("N=")]
    figs = []
    for ts, g in piv[piv["build"] == "default"].groupby("time scale", sort=False):
        lines = []
        for rtos, vals in zip(g["rtos"], g[ns].to_numpy(float)):
            pts = [(int(c[2:]), float(v)) for c, v in zip(ns, vals) if math.isfinite(v)]
            if len(pts) > 1:
                lines.append((str(rtos), [p[0] for p in pts], [p[1] for p in pts]))
        if lines:
            figs.append(F.xy_chart(lines, "tasks", "ns", f"ctx_switch.yield by number of tasks, {ts}"))
    return ("<div class='figs'>" + "".join(f"<div>{f}</div>" for f in figs) + "</div>") if figs else ""


def _build_words(variant: str) -> str:
    """What a context-switch variant says about the build beyond its number of tasks."""
    rest = [p for p in str(variant).split("-") if p and not re.fullmatch(r"n\d+", p)]
    return " ".join(rest) or "default"


def section_jitter(series: dict[str, list[F.Series]]) -> str:
    """Per periodic test (metric, variant) and time scale, the ECDF of every RTOS's |period −
    nominal| on one axis; the titles say the time scale. ``series``: :func:`S.series` with the time
    scale in every title. Charts of one RTOS only follow collapsed."""
    charts = [(len(ser), F.ecdf(ser, title)) for title, ser in series.items()
              if JITTER.fullmatch(title.partition(" · ")[0]) and ser]
    several = "".join(f"<div>{f}</div>" for n, f in charts if f and n > 1)
    alone = "".join(f"<div>{f}</div>" for n, f in charts if f and n == 1)
    if not several and not alone:
        return ""
    n_alone = sum(1 for n, f in charts if f and n == 1)
    return ("<h2 id='jitter'>Period jitter per RTOS</h2><p class='muted'>Share of periods whose "
            "|period − nominal| is at most x (ECDF), one line per RTOS: further left is steadier. One "
            "chart per periodic task, build variant and time scale (named in its title); trace instances "
            "where the run has a trace, else the pins.</p>"
            + (f"<div class='figs'>{several}</div>" if several else "")
            + (H._details(f"{n_alone} charts of one RTOS each", f"<div class='figs'>{alone}</div>")
               if alone else ""))
