"""Completeness: every site occurrence has its edge and every edge its occurrence; a site seen on one
side only is named; the edge counts a capture declares are the edges it holds.

>>> from analyzers.sites import SiteEvents
>>> t = SiteEvents("trace", ts={"a": np.arange(5), "b": np.arange(3)})
>>> g = SiteEvents("logic", ts={"a": np.arange(5)})
>>> [(r["site"], r["verdict"]) for r in missing_sites(t, g)]
[('b', 'MISSING')]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace

from ..sites import SiteEvents
from .align import Alignment
from .verdict import first_missing, unpaired_limit


def _first_unpaired(t: np.ndarray, paired: np.ndarray) -> float:
    first = first_missing(t.size, paired)
    return float(t[first]) if first is not None else float("nan")


def site_rows(al: Alignment, tse: SiteEvents, lse: SiteEvents) -> list[dict[str, Any]]:
    """One row per aligned site: counts, unpaired occurrences on each side (with the first unpaired
    time in that side's clock), the site's bias under the shared fit, and ``OK``/``INCOMPLETE``."""
    rows = []
    for f in al.sites.values():
        it, jl = al.pairs.get(f.site, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        lost = f.unmatched_trace > unpaired_limit(f.n_trace) or f.unmatched_logic > unpaired_limit(f.n_logic)
        rows.append(
            {
                "site": f.site,
                "n_trace": f.n_trace,
                "n_logic": f.n_logic,
                "n_matched": f.n_matched,
                "unmatched_trace": f.unmatched_trace,
                "unmatched_logic": f.unmatched_logic,
                "first_unmatched_trace_ns": _first_unpaired(tse.times(f.site), it),
                "first_unmatched_logic_ns": _first_unpaired(lse.times(f.site), jl),
                "site_bias_ns": f.bias_ns,
                "residual_std_ns": f.residual_std_ns,
                "residual_max_ns": f.residual_max_ns,
                "outliers": f.outliers,
                "offset_ns": al.offset_ns,
                "drift_ppm": al.drift_ppm,
                "q_trace_ns": al.q_trace_ns,
                "q_logic_ns": al.q_logic_ns,
                "verdict": "INCOMPLETE" if lost else "OK",
                "problem": (
                    f"site {f.site}: {f.unmatched_trace} of {f.n_trace} trace occurrences and "
                    f"{f.unmatched_logic} of {f.n_logic} edges unpaired"
                    if lost
                    else ""
                ),
            }
        )
    return rows


def missing_sites(tse: SiteEvents, lse: SiteEvents) -> list[dict[str, Any]]:
    """Sites with occurrences on one side and none on the other (a channel that is absent, renamed
    or silent; a trace that never recorded the site): each is an error that names it."""
    rows = []
    t_has = {s for s in tse.ts if tse.count(s)}
    l_has = {s for s in lse.ts if lse.count(s)}
    for s in sorted(t_has ^ l_has):
        if s in t_has:
            where = "its channel has no edges" if s in lse.ts else "the capture has no channel for it"
            msg = f"site {s}: {tse.count(s)} trace occurrences, but {where}"
        else:
            msg = f"site {s}: {lse.count(s)} edges on its channel, but no trace occurrence"
        rows.append(
            {
                "site": s,
                "n_trace": tse.count(s),
                "n_logic": lse.count(s),
                "verdict": "MISSING",
                "problem": msg,
            }
        )
    return rows


def edge_counts(capture: Trace) -> dict[str, int]:
    """Edges per channel name of a capture."""
    ev = capture.columns
    edges = ev["marker"][(ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)]
    edges = edges[edges >= 0]
    width = max((c.index for c in capture.channels), default=-1) + 1
    found = np.bincount(edges.astype(np.int64), minlength=width)
    return {c.name: int(found[c.index]) if c.index < found.size else 0 for c in capture.channels}


def edge_count_problems(
    capture: Trace, declared: Mapping[str, int] | None, counts: Mapping[str, int] | None = None
) -> list[str]:
    """Channels whose edge count differs from the count the capture's run.json declares.
    ``counts``: the edges per channel counted already (a capture read in chunks), else counted in
    ``capture``'s events."""
    if not declared:
        return []
    by_name = dict(counts) if counts is not None else edge_counts(capture)
    out = []
    for name, n in declared.items():
        if name not in by_name:
            out.append(f"channel {name}: run.json declares {n} edges, the capture has no such channel")
        elif by_name[name] != int(n):
            out.append(f"channel {name}: run.json declares {n} edges, the capture holds {by_name[name]}")
    return out
