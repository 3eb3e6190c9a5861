"""A capture's recording analyzed in chunks: the events are never held whole (issue 18).

A source goes this way (:func:`chunk_size`) when its reader is bounded
(``trace_parsers.chunked.is_bounded``: SystemView, sigrok) and it is a single file of at least
:data:`ANALYZE_CHUNK_BYTES` (a sigrok session: :data:`ANALYZE_CHUNK_SAMPLE_BYTES` of sample
data, uncompressed), or whenever ``--chunk-events N`` is given. Instead of the decoded
``Trace`` the capture keeps a *gathered* stand-in (:func:`analyze_chunked`): the final side
tables, ``meta`` and diagnostics of the recording, and only the event rows cross-validation
reads besides the site occurrences (MARK/USER rows, and the ISR_ENTER / TASK_SWITCH_IN rows
``crossval.kernel_timing`` compares with the pins) — none for a logic capture, whose edge counts
per channel are counted per chunk. The site occurrences the chunked analyzers found are seeded for
the stand-in, so the cross-validation answers what it answers on the whole recording.

No ``events-<source>.ctev.parquet`` is written for such a source (it would hold the whole
recording again); the analysis reads the recording itself each time. A recording read whole goes
through the same analysis engine (``analyzers.run``) as one chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: recordings at least this large (bytes) are analyzed in chunks when their reader is bounded; a
#: whole read holds ~100-200 B per event (a 32 MB SystemView stream: ~7 M events, ~1 GB)
ANALYZE_CHUNK_BYTES = 32 << 20
#: sigrok sessions with at least this much sample data (uncompressed) are analyzed in chunks: the
#: edges, not the samples, fill a whole read (~100 B per edge), and a session's edge density varies
#: (the committed QEMU captures: 0.2-6 GB of samples, a few 10 k edges)
ANALYZE_CHUNK_SAMPLE_BYTES = 1 << 30
#: events per chunk of the chunked analysis unless ``--chunk-events`` says otherwise (the analyzers
#: hold ~250 B per event of the chunk while they read it: 1 Mi events peaked 60 MB above 256 Ki on
#: the 100 MB synthetic stream, in the same CPU time)
ANALYZE_CHUNK_EVENTS = 1 << 18


def chunk_size(src: dict[str, Any], chunk_events: int | None = None) -> int | None:
    """Events per chunk when ``src`` (a planned source) is analyzed in chunks, else None."""
    from trace_parsers.chunked import is_bounded

    from .._io import SUFFIX

    files = src.get("files") or [src["file"]]
    path = Path(src["file"])
    if len(files) > 1 or str(path).endswith(SUFFIX) or not path.is_file():
        return None
    try:
        if not is_bounded(path):
            return None
    except Exception:  # undetectable: the whole read reports it
        return None
    if chunk_events is not None:
        if chunk_events < 1:
            raise ValueError(f"chunk_events must be at least 1, got {chunk_events!r}")
        return int(chunk_events)
    if path.suffix.lower() == ".sr":
        big = sample_bytes(path) >= ANALYZE_CHUNK_SAMPLE_BYTES
    else:
        big = path.stat().st_size >= ANALYZE_CHUNK_BYTES
    return ANALYZE_CHUNK_EVENTS if big else None


def sample_bytes(path: Path) -> int:
    """A sigrok session's sample data, uncompressed, as its zip directory states it (a 38 MB
    ``.sr`` can hold 10 G samples); the file's size when the directory cannot be read."""
    import zipfile

    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as z:
            return max(size, sum(i.file_size for i in z.infolist() if i.filename.startswith("logic-")))
    except (OSError, zipfile.BadZipFile, ValueError):  # damaged: the reader reports it
        return size


def _reader_kwargs(src: dict[str, Any], on_corrupt: str) -> dict[str, Any]:
    """The chunk reader's options, chosen as ``decode._open`` chooses the whole reader's: the
    run's sample rate only for a capture that does not state its own."""
    from trace_parsers.chunked import iter_trace_chunks
    from trace_parsers.errors import TraceError

    kw: dict[str, Any] = {"on_corrupt": on_corrupt}
    rate = src.get("samplerate")
    if not rate:
        return kw
    try:
        first = next(iter(iter_trace_chunks(src["file"], chunk_events=1, **kw)))
    except TraceError as e:
        if e.code == "SR_NO_SAMPLERATE":
            return {**kw, "samplerate": int(rate)}
        raise
    if first.meta.source_kind == "logic" and first.meta.extra.get("samplerate") is None:
        return {**kw, "samplerate": int(rate)}
    return kw


#: event kinds a trace's stand-in keeps (``crossval.kernel_timing``: site rows and kernel events)
def _gathered_kinds() -> tuple[int, ...]:
    from trace_parsers.model import EventKind

    return (int(EventKind.MARK), int(EventKind.USER), int(EventKind.ISR_ENTER), int(EventKind.TASK_SWITCH_IN))


def _event_parts(store: Any = None) -> Any:
    from trace_parsers.model import EVENT_DTYPE

    from ..metrics.spill import Parts

    return Parts(dtype=EVENT_DTYPE, store=store)


@dataclass
class Gatherer:
    """Per chunk: the rows the stand-in keeps, the diagnostics, the edges per channel index."""

    keep_rows: bool
    rows: Any = field(default_factory=lambda: _event_parts())  #: kept rows (on disk while spilling)
    diagnostics: list[Any] = field(default_factory=list)
    edges: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    events: int = 0

    def feed(self, chunk: Any) -> None:
        from trace_parsers.model import EventKind

        ev = chunk.events
        self.events += len(ev)
        self.diagnostics += list(chunk.diagnostics)
        if self.keep_rows and len(ev):
            self.rows.append(ev[np.isin(ev["kind"], _gathered_kinds())])
        is_edge = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
        m = ev["marker"][is_edge]
        m = m[m >= 0].astype(np.int64)
        if m.size:
            got = np.bincount(m)
            if got.size > self.edges.size:
                got[: self.edges.size] += self.edges
                self.edges = got
            else:
                self.edges[: got.size] += got

    def watch(self, chunks: Iterable[Any]) -> Iterator[Any]:
        """``chunks``, fed to this gatherer on the way through."""
        for ch in chunks:
            self.feed(ch)
            yield ch

    def edge_counts(self, last: Any) -> dict[str, int]:
        """Edges per channel name (what ``crossval.completeness`` compares with run.json)."""
        return {c.name: int(self.edges[c.index]) if 0 <= c.index < self.edges.size else 0
                for c in last.channels}


@dataclass
class ChunkedSource:
    """What the capture keeps of a recording analyzed in chunks."""

    events: Any  #: the stand-in Trace (module docstring); ``len()`` is not the recording's
    res: Any  #: ``analyzers.run.SourceResult``
    n_events: int
    chunks: int
    edge_counts: dict[str, int]


def analyze_chunked(src: dict[str, Any], sites: Any, options: dict[str, Any], on_corrupt: str,
                    chunk_events: int, *, keep_rows: bool, store: Any = None) -> ChunkedSource:
    """Run every analyzer over ``src`` read in chunks of ``chunk_events`` (twice when the
    recording has tasks: ``analyzers.run``), gathering the stand-in on the first pass; tables and
    growing arrays go to ``store`` (``metrics.spill.Spill``; None: in memory).
    Must run inside ``reuse_site_events()``: the stand-in's site occurrences are seeded there."""
    from trace_parsers.chunked import iter_trace_chunks
    from trace_parsers.model import Trace

    from .._memory import release_memory
    from ..run import run_analyzers_chunked
    from ..sites import seed_site_events

    kw = _reader_kwargs(src, on_corrupt)
    gath = Gatherer(keep_rows, rows=_event_parts(store))
    passes = [0]

    def open_chunks() -> Iterator[Any]:
        passes[0] += 1
        chunks = iter_trace_chunks(src["file"], chunk_events=chunk_events, **kw)
        return gath.watch(chunks) if passes[0] == 1 else chunks

    res, got = run_analyzers_chunked(open_chunks, sites, options, store)
    release_memory()
    last = got.last
    rows = gath.rows.concat()
    gath.rows.clear()
    stand_in = Trace(rows, last.meta, tasks=last.tasks, isrs=last.isrs, markers=last.markers,
                     channels=last.channels, diagnostics=tuple(gath.diagnostics), strings=last.strings)
    if got.site_events is not None:
        seed_site_events(stand_in, sites, got.site_events)
    return ChunkedSource(stand_in, res, got.events, got.chunks, gath.edge_counts(last))
