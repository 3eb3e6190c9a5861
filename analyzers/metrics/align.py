"""Chunks cut only between two distinct timestamps.

The in-memory analyzers order events of equal ``ts`` by kind where it matters (a task's ready
before its block at the same time); a chunk border inside a run of equal timestamps would split
such a group. :func:`ts_aligned` moves the rows sharing the last ``ts`` of a chunk into the next
one, so every group of equal timestamps is in one chunk. Memory: one chunk plus the longest run
of equal timestamps.

>>> from trace_parsers.model import Trace, TraceMeta, empty_events
>>> ev = empty_events(5); ev["ts"] = [1, 2, 2, 2, 3]
>>> from trace_parsers.chunked import slice_trace
>>> [c.events["ts"].tolist() for c in ts_aligned(slice_trace(Trace(ev, TraceMeta("x")), 2))]
[[1], [2, 2, 2], [3]]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from trace_parsers.model import Trace


def _with_events(c: Trace, events: np.ndarray, diagnostics: list) -> Trace:
    return Trace(events, c.meta, tasks=c.tasks, isrs=c.isrs, markers=c.markers, channels=c.channels,
                 diagnostics=diagnostics, strings=c.strings)


def ts_aligned(chunks: Iterable[Trace]) -> Iterator[Trace]:
    """The same events, re-cut so no two chunks share a timestamp. Each chunk carries the side
    tables of the latest source chunk read and the diagnostics not given yet; the last chunk
    (possibly empty) has the source's final tables. The rows sharing a chunk's last timestamp are
    held back and given, with the next chunk's rows of that timestamp, as a small chunk of their
    own: a chunk is passed on as a view, never copied behind them."""
    carry: Any = None
    diags: list = []
    last: Trace | None = None
    for c in chunks:
        ev = c.held()
        diags += list(c.diagnostics)
        if carry is not None and len(carry):
            k = int(np.searchsorted(ev["ts"], carry["ts"][-1], side="right")) if len(ev) else 0
            carry = _cat(carry, ev[:k]) if k else carry  # the whole group of that timestamp
            ev = ev[k:]
            if not len(ev):  # the group goes on in the next chunk
                last = c
                continue
            yield _with_events(c, carry, diags)
            diags = []
        cut = _cut(ev)
        if cut:
            yield _with_events(c, ev[:cut], diags)
            diags = []
        carry, last = ev[cut:], c
    if last is not None:
        yield _with_events(last, carry if carry is not None else last.held()[:0], diags)


def _cat(a: Any, b: Any) -> Any:
    """Two consecutive pieces of events (row tables or ``Columns``) as one."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.concatenate((a, b))
    from trace_parsers.columns import Columns, concat

    return concat([x if isinstance(x, Columns) else Columns.from_records(x) for x in (a, b)])


def _cut(ev: Any) -> int:
    """Index where the run of rows sharing the last ``ts`` starts."""
    if not len(ev):
        return 0
    ts = ev["ts"]
    return int(np.searchsorted(ts, ts[-1], side="left"))
