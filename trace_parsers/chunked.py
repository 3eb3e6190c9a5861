"""Read a recording as a sequence of chunks, for work whose memory must not grow with its length.

:func:`iter_trace_chunks` yields :class:`~trace_parsers.model.Trace` objects whose events, put end
to end, are exactly the events of the whole read (``open_trace``). The contract every chunk reader
keeps (``trace_parsers.<format>.chunks.iter_chunks(path, *, chunk_events, **reader_kwargs)``):

- the chunks' ``events`` concatenated equal the whole read's ``events`` (same rows, same order);
- side tables (``tasks``, ``isrs``, ``markers``, ``channels``, ``strings``) are cumulative: each
  chunk holds what was known up to its end, the last chunk holds the final tables;
- each diagnostic is reported in exactly one chunk (the whole read's list is their concatenation);
- ``meta`` is the whole read's.

A format without a chunk reader is read whole and sliced (every chunk then already carries the
final side tables): the output is the same, only the memory bound is lost. :func:`is_bounded`
says which of the two a file gets, so commands can report it.

>>> from trace_parsers.model import Trace, TraceMeta, empty_events
>>> tr = Trace(empty_events(5), TraceMeta("x"))
>>> [len(c) for c in slice_trace(tr, 2)]
[2, 2, 1]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .model import Trace

#: default events per chunk (4 Mi events: ~200 MB of events at 51 B/event)
DEFAULT_CHUNK_EVENTS = 1 << 22


def _chunk_reader(fmt: str) -> Callable[..., Iterator[Trace]] | None:
    """``trace_parsers.<fmt>.chunks.iter_chunks`` when that format has one, else None."""
    try:
        mod = importlib.import_module(f"trace_parsers.{fmt}.chunks")
    except ImportError:
        return None
    fn = getattr(mod, "iter_chunks", None)
    return fn if callable(fn) else None


def is_bounded(path: str | Path) -> bool:
    """Whether :func:`iter_trace_chunks` reads ``path`` in bounded memory (a chunk reader exists
    for its format) rather than reading it whole and slicing it."""
    from . import detect_format

    return _chunk_reader(detect_format(path)) is not None


def slice_trace(trace: Trace, chunk_events: int) -> Iterator[Trace]:
    """``trace`` as consecutive chunks of at most ``chunk_events`` events (views, no copies).

    Every chunk carries the final side tables and ``meta``; the diagnostics are given with the
    first chunk only (each diagnostic in exactly one chunk). An empty trace is one empty chunk."""
    if chunk_events < 1:
        raise ValueError(f"chunk_events must be at least 1, got {chunk_events!r}")
    n = len(trace)
    held = trace.held()  # slices of what the trace holds
    for lo in range(0, max(n, 1), chunk_events):
        yield Trace(held[lo:lo + chunk_events], trace.meta, tasks=trace.tasks, isrs=trace.isrs,
                    markers=trace.markers, channels=trace.channels,
                    diagnostics=trace.diagnostics if lo == 0 else (), strings=trace.strings)


def iter_trace_chunks(path: str | Path, *, chunk_events: int = DEFAULT_CHUNK_EVENTS,
                      **reader_kwargs: Any) -> Iterator[Trace]:
    """Chunks of the recording at ``path`` (module docstring for the contract).

    ``reader_kwargs`` go to the reader as for :func:`trace_parsers.open_trace` (``on_corrupt``,
    ``tick_hz``, ``samplerate``, ...)."""
    from . import detect_format, open_trace

    if chunk_events < 1:
        raise ValueError(f"chunk_events must be at least 1, got {chunk_events!r}")
    fn = _chunk_reader(detect_format(path))
    if fn is not None:
        yield from fn(path, chunk_events=chunk_events, **reader_kwargs)
        return
    yield from slice_trace(open_trace(path, **reader_kwargs), chunk_events)
