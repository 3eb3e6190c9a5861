"""Instrumentation sites: the site table and the site occurrences of a trace or a logic capture.

A site is one ``ct_site(id)`` call in the firmware: it records one trace event (SystemView Mark
with the site id, TraceX user event ``4096 + id``) and toggles one pin, at the same program point.
So occurrence *k* of a site in the trace matches edge *k* on the site's logic channel.

The table comes from ``run.json`` (``"sites"``); without one it is parsed from
``firmware/include/ct_sites.h``; without that, the built-in copy :data:`DEFAULT_SITES` is used.

>>> [s.name for s in DEFAULT_SITES][:2]
['ctx.yield', 'ctx.switch_in']
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trace_parsers.model import VALUE_NULL, EventKind, Trace

from .site_arrays import SiteArrays, blocks_of, size_of

#: TraceX user events carry the site id as ``4096 + id`` (ct_sites.h).
TRACEX_USER_BASE = 4096


@dataclass(frozen=True)
class Site:
    """One row of the site table: id, dotted name, GPIO pin, logic channel name."""

    id: int
    name: str
    pin: str = ""
    channel: str = ""

    @property
    def channel_name(self) -> str:
        return self.channel or self.name


def _builtin() -> tuple[Site, ...]:
    rows = [
        (1, "ctx.yield", 2),
        (2, "ctx.switch_in", 3),
        (3, "periodic.fast", 4),
        (4, "periodic.slow", 5),
        (5, "isr.enter", 6),
        (6, "isr.task_wake", 7),
        (7, "fft.start", 8),
        (8, "fft.stop", 9),
        (9, "fft.sample", 10),
        (10, "fft.uart_send", 11),
        (11, "calib.loop", 12),
        (12, "tm.count", 15),
        (13, "tm.isr", 0),
        (14, "tm.report", 1),
    ]
    return tuple(Site(i, n, f"PG{p}", n) for i, n, p in rows)


#: Copy of firmware/include/ct_sites.h for installations without the firmware tree.
DEFAULT_SITES: tuple[Site, ...] = _builtin()

_SITE_RE = re.compile(r'X\(\s*(\d+)\s*,\s*(\w+)\s*,\s*"([^"]+)"\s*,\s*(\d+)\s*\)')


def parse_ct_sites_h(text: str) -> tuple[Site, ...]:
    """Parse the ``CT_SITE_TABLE`` X-macro of ``ct_sites.h``.

    >>> parse_ct_sites_h('X(1, CTX_YIELD, "ctx.yield", 2)')
    (Site(id=1, name='ctx.yield', pin='PG2', channel='ctx.yield'),)
    """
    return tuple(Site(int(i), name, f"PG{pin}", name) for i, _c, name, pin in _SITE_RE.findall(text))


def _ct_sites_h() -> Path | None:
    env = os.environ.get("CROSSTRACE_SITES_H")
    cands = [Path(env)] if env else []
    cands.append(Path(__file__).resolve().parents[1] / "firmware" / "include" / "ct_sites.h")
    return next((p for p in cands if p.is_file()), None)


def load_sites(run: dict[str, Any] | None = None) -> tuple[Site, ...]:
    """Site table from a parsed ``run.json``, else ``ct_sites.h``, else :data:`DEFAULT_SITES`."""
    if run and run.get("sites"):
        out = []
        for s in run["sites"]:
            out.append(
                Site(
                    int(s["id"]), str(s["name"]), str(s.get("pin") or ""), str(s.get("channel") or s["name"])
                )
            )
        return tuple(out)
    h = _ct_sites_h()
    if h is not None:
        sites = parse_ct_sites_h(h.read_text(encoding="utf-8", errors="replace"))
        if sites:
            return sites
    return DEFAULT_SITES


def site_by_name(sites: Sequence[Site], name: str) -> Site | None:
    return next((s for s in sites if s.name == name), None)


@dataclass
class SiteEvents:
    """Occurrences of every site in one source, in that source's ns clock.

    ``ts[name]`` are the times (int64 ns, sorted), ``level[name]`` the new pin level (marker value
    or edge direction; -1 if unknown), ``gaps`` the source's data-loss intervals. ``ts`` and
    ``level`` are dicts, or for a recording analyzed in chunks :class:`~analyzers.site_arrays.SiteArrays`
    read back from disk on each access (so ask for a site's array once, and :meth:`count`
    rather than ``times(name).size``).
    """

    source: str  #: "trace" or "logic"
    ts: MutableMapping[str, np.ndarray] = field(default_factory=dict)
    level: MutableMapping[str, np.ndarray] = field(default_factory=dict)
    gaps: list[tuple[int, int]] = field(default_factory=list)
    tick_ns: float = 1.0  #: quantisation of this source's timestamps (ns)

    def times(self, name: str) -> np.ndarray:
        return self.ts.get(name, np.zeros(0, dtype=np.int64))

    def time_blocks(self, name: str, rows: int | None = None) -> Iterator[np.ndarray]:
        """``times(name)`` as consecutive blocks of ``rows`` values (default
        :data:`~analyzers.site_arrays.BLOCK`), an on-disk site read a block at a time
        (:meth:`~analyzers.site_arrays.SiteArrays.blocks`)."""
        return blocks_of(self.ts, name, rows)

    def count(self, name: str) -> int:
        """Occurrences of ``name`` (0 for a site without any), without reading them."""
        return size_of(self.ts, name)

    def counts(self) -> dict[str, int]:
        return {k: self.count(k) for k in self.ts}

    @property
    def empty(self) -> bool:
        return not any(self.count(k) for k in self.ts)


def is_logic(trace: Trace) -> bool:
    """True for a logic capture, as its reader declared it (``TraceMeta.source_kind``)."""
    return trace.meta.source_kind == "logic"


def tick_ns(trace: Trace) -> float:
    """Timestamp quantisation of a source in ns (one tick / one sample)."""
    hz = trace.meta.tick_hz
    return 1e9 / hz if hz else 1.0


def _norm(s: str) -> str:
    return s.strip().lower()


def trace_site_events(trace: Trace, sites: Sequence[Site]) -> SiteEvents:
    """Site occurrences from a trace: MARK events with ``marker == id`` (SystemView Mark, or a
    reader that maps TraceX user events to MARK), or USER events with ``src_id == 4096 + id``."""
    from .metrics.stats import overflow_gaps

    ev = trace.columns
    out = SiteEvents("trace", gaps=overflow_gaps(trace), tick_ns=tick_ns(trace))
    if not sites or ev.shape[0] == 0:
        return out
    # one pass over the (strided) kind column; every other column is read only at the MARK/USER
    # rows, and each site then selects from those few contiguous arrays
    kind = ev["kind"]
    rows = np.flatnonzero((kind == EventKind.MARK) | (kind == EventKind.USER))
    if rows.size == 0:
        return out
    sub = ev.take(rows)  # (take copies records far faster than ev[rows])
    mark = sub["kind"] == EventKind.MARK
    user = ~mark
    marker, src_id = np.ascontiguousarray(sub["marker"]), np.ascontiguousarray(sub["src_id"])
    ts, value = sub["ts"], sub["value"]
    # names in the trace's own marker table override the site table's ids when they disagree
    by_name = {_norm(m.name): m.id for m in trace.markers}
    for s in sites:
        sid = by_name.get(_norm(s.name), s.id)
        sel = (mark & (marker == sid)) | (user & (src_id == TRACEX_USER_BASE + s.id))
        if not np.any(sel):
            continue
        out.ts[s.name] = ts[sel].astype(np.int64)
        v = value[sel]
        out.level[s.name] = np.where(v == VALUE_NULL, -1, v).astype(np.int64)
    return out


def logic_site_events(capture: Trace, sites: Sequence[Site]) -> SiteEvents:
    """Site occurrences from a logic capture: every edge on the channel named after the site
    (its ``channel``, dotted name or pin, case-insensitive)."""
    ev = capture.columns
    out = SiteEvents("logic", tick_ns=tick_ns(capture))
    chans = {_norm(c.name): c.index for c in capture.channels}
    found = []
    for s in sites:
        idx = next(
            (chans[n] for n in (_norm(s.channel_name), _norm(s.name), _norm(s.pin)) if n in chans), None
        )
        if idx is not None:
            found.append((s.name, idx))
    if not found:
        return out
    kind = ev["kind"]
    rows = np.flatnonzero((kind == EventKind.EDGE_RISE) | (kind == EventKind.EDGE_FALL))
    sub = ev.take(rows)
    marker = np.ascontiguousarray(sub["marker"])
    rise = sub["kind"] == EventKind.EDGE_RISE
    ts = sub["ts"]
    for name, idx in found:
        sel = marker == idx
        out.ts[name] = ts[sel].astype(np.int64)
        out.level[name] = rise[sel].astype(np.int64)
    return out


#: site occurrences already found inside :func:`reuse_site_events`: (source, site table) -> result
_REUSE: ContextVar[dict[tuple[int, tuple[Site, ...]], tuple[Trace, SiteEvents]] | None] = ContextVar(
    "crosstrace_site_events", default=None
)


@contextmanager
def reuse_site_events() -> Iterator[None]:
    """Within this block :func:`site_events` finds the occurrences of each source (and site table)
    once, however often it is asked: every analyzer of a source starts from them. The sources'
    events must not change inside the block. Nested blocks share the outermost one's results.

    >>> from trace_parsers.model import TraceMeta, empty_events
    >>> ev = empty_events(1)
    >>> ev["kind"], ev["marker"] = EventKind.MARK, 1
    >>> tr = Trace(ev, TraceMeta("x"))
    >>> with reuse_site_events():
    ...     a, b = site_events(tr, DEFAULT_SITES), site_events(tr, DEFAULT_SITES)
    >>> a.ts["ctx.yield"] is b.ts["ctx.yield"], a.ts is b.ts
    (True, False)
    """
    if _REUSE.get() is not None:
        yield
        return
    token = _REUSE.set({})
    try:
        yield
    finally:
        _REUSE.reset(token)


@contextmanager
def scoped_site_events() -> Iterator[Callable[[Trace], None]]:
    """Like :func:`reuse_site_events`, but what is found or seeded inside (even inside another
    block) is forgotten on the way out, except for the sources passed to the ``keep`` callable
    it yields, which the enclosing block (if any) then answers as well. Lookups inside still see
    the enclosing block's results. A chunked analysis seeds stand-in traces of whole event rows
    (``analyzers.run``); held by the enclosing block they would outlive the analysis.

    >>> from trace_parsers.model import TraceMeta, empty_events
    >>> a, b = Trace(empty_events(0), TraceMeta("a")), Trace(empty_events(0), TraceMeta("b"))
    >>> with reuse_site_events():
    ...     with scoped_site_events() as keep:
    ...         _ = site_events(a, DEFAULT_SITES), site_events(b, DEFAULT_SITES)
    ...         keep(a)
    ...     sorted(tr.meta.source_format for tr, _ in _REUSE.get().values())
    ['a']
    """
    outer = _REUSE.get()
    kept: list[Trace] = []
    token = _REUSE.set(dict(outer) if outer is not None else {})
    try:
        yield kept.append
        memo = _REUSE.get()
    finally:
        _REUSE.reset(token)
    if outer is not None:
        for tr in kept:
            outer.update({k: v for k, v in memo.items() if v[0] is tr})


def _shared(se: SiteEvents) -> SiteEvents:
    """A copy of ``se`` whose containers are its own and whose (shared) arrays are read-only."""
    if isinstance(se.ts, SiteArrays) and isinstance(se.level, SiteArrays):
        return SiteEvents(se.source, se.ts.shared(), se.level.shared(), list(se.gaps), se.tick_ns)
    for a in (*se.ts.values(), *se.level.values()):
        a.setflags(write=False)
    return SiteEvents(se.source, dict(se.ts), dict(se.level), list(se.gaps), se.tick_ns)


def site_events(trace: Trace | None, sites: Sequence[Site]) -> SiteEvents:
    """Site occurrences of either kind of source (empty for ``None``); found once per source
    inside :func:`reuse_site_events`."""
    if trace is None:
        return SiteEvents("none")
    memo = _REUSE.get()
    key = (id(trace), tuple(sites))
    if memo is not None and key in memo and memo[key][0] is trace:
        return _shared(memo[key][1])
    se = logic_site_events(trace, sites) if is_logic(trace) else trace_site_events(trace, sites)
    if memo is not None:
        memo[key] = (trace, se)  # (holding the trace keeps its id from being reused)
        return _shared(se)
    return se


def channel_index(capture: Trace, names: Iterable[str]) -> int | None:
    chans = {_norm(c.name): c.index for c in capture.channels}
    return next((chans[_norm(n)] for n in names if _norm(n) in chans), None)


def seed_site_events(trace: Any, sites: Any, se: SiteEvents) -> None:
    """Inside ``reuse_site_events()``: have ``site_events(trace, sites)`` answer ``se`` (the
    occurrences found in chunks) instead of searching ``trace``'s events."""
    memo = _REUSE.get()
    if memo is None:
        raise RuntimeError("seed_site_events needs an enclosing reuse_site_events()")
    memo[(id(trace), tuple(sites))] = (trace, se)
