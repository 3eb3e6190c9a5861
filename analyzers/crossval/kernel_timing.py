"""How far the RTOS's own trace events can be trusted: kernel events against the pins.

Besides the marker sites, the trace holds the kernel's own events at known program points: an ISR
wrapper records ISR_ENTER just before the handler's first statement (the ``isr.enter`` site), and
a task is switched in just before it runs its first site after waking (``isr.task_wake``,
``ctx.switch_in``). For every paired site occurrence, the last such kernel event since the site's
previous occurrence (for a switch-in: of the same task) is mapped onto the analyzer's clock by the
shared alignment and compared with the site's pin edge:

    lateness = aligned(kernel event) - pin edge        (negative: stamped before the pin)

The shared alignment maps the site records onto their pins, so the figure is the kernel event's
distance from the program point the pin marks, as the trace reports it. No other tool reports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace

from ..sites import Site, SiteEvents
from .align import Alignment

#: site -> (kernel event that precedes it, whether the event must be the site's own task)
KERNEL_BEFORE_SITE: dict[str, tuple[EventKind, bool]] = {
    "isr.enter": (EventKind.ISR_ENTER, False),
    "isr.task_wake": (EventKind.TASK_SWITCH_IN, True),
    "ctx.switch_in": (EventKind.TASK_SWITCH_IN, True),
}


def _site_ctx(trace: Trace, sites: tuple[Site, ...], name: str, t: np.ndarray) -> np.ndarray:
    """ctx_id of each trace occurrence of a site (its MARK/USER rows at those times)."""
    ev = trace.columns
    sid = next((s.id for s in sites if s.name == name), None)
    rows = (ev["kind"] == EventKind.MARK) & (ev["marker"] == sid) if sid is not None else None
    if rows is None or int(np.count_nonzero(rows)) != t.size:
        rows = ((ev["kind"] == EventKind.MARK) | (ev["kind"] == EventKind.USER)) & np.isin(ev["ts"], t)
    ctx = ev["ctx_id"][rows]
    return ctx if ctx.size == t.size else np.full(t.size, -1, np.int32)


def kernel_vs_pin(
    trace: Trace, alignment: Alignment, tse: SiteEvents, lse: SiteEvents, sites: tuple[Site, ...]
) -> list[dict[str, Any]]:
    """One row per (kernel event, site) with n, mean, std, min, max of the lateness in ns."""
    ev = trace.columns
    out = []
    for site, (kind, own_task) in KERNEL_BEFORE_SITE.items():
        if site not in alignment.pairs or not alignment.pairs[site][0].size:
            continue
        it, jl = alignment.pairs[site]
        t, e = tse.times(site), lse.times(site)
        sel = ev["kind"] == kind
        k_ts, k_ctx = ev["ts"][sel].astype(np.int64), ev["ctx_id"][sel]
        if k_ts.size == 0:
            continue
        prev = np.concatenate(([np.iinfo(np.int64).min], t[:-1]))[it]
        occ_ctx = _site_ctx(trace, sites, site, t)[it] if own_task else None
        deltas = []
        groups = np.unique(occ_ctx) if occ_ctx is not None else [None]
        for c in groups:
            m = np.ones(it.size, bool) if c is None else occ_ctx == c
            kt = k_ts if c is None else k_ts[k_ctx == c]
            if kt.size == 0:
                continue
            idx = np.searchsorted(kt, t[it[m]], side="right") - 1
            ok = (idx >= 0) & (kt[np.maximum(idx, 0)] > prev[m])
            mapped = alignment.to_logic(kt[idx[ok]])
            deltas.append(mapped - e[jl[m][ok]].astype(np.float64))
        d = np.concatenate(deltas) if deltas else np.zeros(0)
        if d.size == 0:
            continue
        out.append(
            {
                "kernel_event": kind.name,
                "site": site,
                "n": int(d.size),
                "n_sites": int(it.size),
                "mean_ns": float(d.mean()),
                "std_ns": float(d.std()),
                "min_ns": float(d.min()),
                "max_ns": float(d.max()),
            }
        )
    return out
