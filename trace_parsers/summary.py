"""What ``crosstrace info`` shows of a small file, read without NumPy.

``import numpy`` alone costs more start-up time than the rest of ``crosstrace info`` on a small
file, so :func:`summarize_small` reads the formats it knows (:data:`SMALL_FORMATS`) into a
:class:`TraceSummary` — the facts ``info`` prints: metadata, side tables, diagnostics, the number of
events per kind, the duration, the edges per channel — through the readers' own parsing code: with
NumPy-free edge counting for logic captures (:mod:`trace_parsers._pyedges`), the record loop of
CTF (``ctf.convert.summarize_records``), the Rust passes of SystemView over ``memoryview`` columns
(:mod:`trace_parsers.systemview.summary`), the TraceX decoder's steps over ``struct`` tuples
(:mod:`trace_parsers.tracex.summary`). It returns ``None`` (read the file with
:func:`~trace_parsers.open_trace` instead) for other formats, for files over :data:`SMALL_BYTES`,
for ``on_corrupt="warn"`` (a warning must be issued once, by the reader that keeps the result) and
when the content turns out too large on the way (:class:`~trace_parsers._pyedges.TooBig`).

The summary equals the full read's field for field: ``tests/analyzers/test_info_small.py``
compares both on every committed capture and corpus file (``test_info_fastpath.py`` through
fresh ``crosstrace info`` processes on a selection).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._meta import Channel, Diagnostic, Isr, Marker, Task, TraceMeta

#: files up to this size are summarised without NumPy (larger ones are read by the NumPy readers)
SMALL_BYTES = 1 << 20
#: formats with a NumPy-free summary
SMALL_FORMATS = frozenset({"sigrok", "vcd", "ctf", "systemview", "tracex"})


@dataclass
class TraceSummary:
    """The parts of a :class:`~trace_parsers.model.Trace` that ``crosstrace info`` shows."""

    meta: TraceMeta
    events: int
    duration: int
    kind_counts: dict[str, int]  #: EventKind name -> count, in EventKind order, kinds present only
    tasks: list[Task] = field(default_factory=list)
    isrs: list[Isr] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    edges_by_index: dict[int, int] = field(default_factory=dict)  #: channel index -> edge events

    def __len__(self) -> int:
        return self.events

    def counts_by_kind(self) -> dict[str, int]:
        return dict(self.kind_counts)


def summarize_small(path: str | Path, fmt: str, *, on_corrupt: str = "raise",
                    **kwargs: Any) -> TraceSummary | None:
    """The :class:`TraceSummary` of ``path`` (already recognised as ``fmt``), or ``None`` when it
    has no NumPy-free summary (see the module's notes). ``kwargs`` are the reader's options;
    reader errors (:class:`~trace_parsers.errors.TraceError`) propagate as from the reader."""
    p = Path(path)
    if fmt not in SMALL_FORMATS or on_corrupt == "warn" or _size(p, fmt) > SMALL_BYTES:
        return None
    from ._pyedges import TooBig
    try:
        return _SUMMARIES[fmt](p, on_corrupt, kwargs)
    except TooBig:
        return None


def _size(p: Path, fmt: str) -> int:
    """Bytes to read: the file, or a CTF trace's streams (``p`` may be its folder or metadata)."""
    if fmt == "ctf":
        from .ctf import find_files

        _, streams = find_files(p)
        return sum(s.stat().st_size for s in streams)
    return p.stat().st_size


def _ctf(p: Path, on_corrupt: str, kw: dict[str, Any]) -> TraceSummary | None:
    from .ctf import prepare
    from .ctf.convert import summarize_records

    raw, clock, diags, extra = prepare(p, on_corrupt=on_corrupt)
    return summarize_records(raw.meta, raw.records, clock=clock, path=str(p), sha256=raw.sha256,
                             diags=diags, extra=extra)


def _systemview(p: Path, on_corrupt: str, kw: dict[str, Any]) -> TraceSummary | None:
    from .systemview.summary import available, summarize

    if not available():
        return None
    return summarize([p], on_corrupt=on_corrupt)  # type: ignore[no-any-return]


def _sigrok(p: Path, on_corrupt: str, kw: dict[str, Any]) -> TraceSummary:
    from ._pyedges import PyWordEdgeScanner, edge_summary
    from .sigrok.reader import decode_sigrok

    channels, edge_kwargs = decode_sigrok(p, on_corrupt=on_corrupt, samplerate=kw.get("samplerate"),
                                          unitsize=kw.get("unitsize"), scanner_type=PyWordEdgeScanner)
    return edge_summary(channels, **edge_kwargs)  # type: ignore[arg-type]


def _vcd(p: Path, on_corrupt: str, kw: dict[str, Any]) -> TraceSummary:
    from ._pyedges import PyChannelEdges, changes_to_edges, edge_summary, rescale_ticks
    from .vcd.reader import parse_vcd

    allvars, scale, edge_kwargs = parse_vcd(p, on_corrupt=on_corrupt, samplerate=kw.get("samplerate"),
                                            vectorised=False)
    chans = []
    for v in allvars:
        times = list(v.times) if scale[0] == scale[1] else rescale_ticks(v.times, *scale)
        init, edges = changes_to_edges(times, list(v.levels))
        chans.append(PyChannelEdges(v.index, v.name, init, edges))
    return edge_summary(chans, **edge_kwargs)


def _tracex(p: Path, on_corrupt: str, kw: dict[str, Any]) -> TraceSummary | None:
    tick_hz = kw.get("tick_hz")
    if set(kw) - {"tick_hz", "timer", "switches"} or kw.get("switches") or (
            tick_hz is not None and (type(tick_hz) is not int or tick_hz <= 0)):
        return None  # read_tracex's own errors, or its switch rows
    from .tracex.summary import summarize_tracex

    return summarize_tracex(p, tick_hz=tick_hz, timer=kw.get("timer", "auto"), on_corrupt=on_corrupt)


_SUMMARIES: dict[str, Any] = {"sigrok": _sigrok, "vcd": _vcd, "ctf": _ctf, "systemview": _systemview,
                              "tracex": _tracex}
