"""SystemView recordings read in chunks of events, in memory bounded whatever the file length.

:func:`iter_chunks` yields :class:`~trace_parsers.model.Trace` objects whose ``events``, put end
to end, equal ``read_systemview(path).events`` exactly. The file is read twice, in blocks of
``block_bytes``, never whole:

1. a scan pass decodes every stream block by block (``_core.SvStreamDecoder``: the packet split
   across a block border, the cumulative ticks, the string order and a resync in progress carry
   over) and keeps only what the whole-file reader decides before converting any event: INIT
   (tick rate, task id expansion), SYSDESC and the OS table, the task table (TASK_INFO names,
   then handles seen in events), messages and marker names, per-id counts, the origin
   (smallest tick count), the SHA-256 and the damage records;
2. a conversion pass decodes the streams again and converts each block's packets with
   ``_core.SvConverter`` (running context per core, message counter and API ids carry over),
   cutting the rows into chunks of ``chunk_events``.

So every chunk carries the final metadata and the complete side tables (tasks, ISRs, markers,
strings: a superset of "cumulative up to this chunk"; task indices never change). Each
diagnostic is in exactly one chunk: the container's (a lost core) in the first, the decoder's in
the chunk being built when its block was decoded, the end-of-stream ones (SV_NO_TRACE_STOP) in
the chunk where the stream ends, the trace-level ones (SV_NO_INIT, SV_UNKNOWN_ID, SV_OVERFLOW) in
the last. Damage under ``on_corrupt="raise"`` raises before the first chunk, as the whole read.

Memory: one chunk of events (``chunk_events`` x 51 bytes), plus per stream one block's raw
columns and converted events (~20x ``block_bytes``), plus the side tables (which grow with the
number of tasks, messages and damage records, not with the number of events). The chunk just
handed out is the caller's: drop it before asking for the next to keep one chunk alive.
For several streams whose tick -> ns conversion wraps (a damaged INIT rate: the whole read's
sort then has no streaming equivalent), the chunks are slices of one whole read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np

from .. import _core
from ..errors import TraceFormatError, validate_on_corrupt
from ..model import EVENT_DTYPE, Diagnostic, EventKind, Trace, empty_events
from .convert import assemble_trace
from .decode import RawStream, open_container, raw_stream
from .format import MODULE_EVENT_OFFSET
from .streams import StreamInfo, _collect, _stream_diags, stream_facts

__all__ = ["iter_chunks"]

PathLike = Union[str, Path]
#: Bytes read per block (its raw columns take ~7x and its events ~12x its size).
BLOCK_BYTES = 1 << 20
_ROW = EVENT_DTYPE.itemsize


@dataclass
class _Stream:
    """One stream of one file: where it is, and what the scan pass found in it."""

    path: Path
    core: int
    start: int
    end: int
    name: str
    esp: bool
    has_header: bool
    info: StreamInfo
    #: ``(code, offset, count, fatal, detail)`` decoder records, and the block index of each
    raw_diags: list[tuple[Any, ...]] = field(default_factory=list)
    diag_block: list[int] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)
    core_counts: dict[int, int] = field(default_factory=dict)
    event_cores: set[int] = field(default_factory=set)
    handles: set[int] = field(default_factory=set)
    ovf_values: list[int] = field(default_factory=list)
    packets: int = 0
    events: int = 0
    min_ts: int | None = None
    first_ts: int | None = None
    last_ts: int | None = None
    last_id: int | None = None
    sync_bytes: int = 0
    str_order: int = 0
    log_base: int = 0


def _blocks(s: _Stream, block_bytes: int, sha: Any = None) -> Iterator[RawStream]:
    """The stream's packets, block by block (``RawStream`` pieces with stream-relative offsets)."""
    dec = _core.SvStreamDecoder(s.end - s.start, esp_core_bit=s.esp, file_start=s.start)
    left = s.end - s.start
    with open(s.path, "rb") as f:
        f.seek(s.start)
        while True:
            blk = f.read(min(block_bytes, left))
            if sha is not None:
                sha.update(blk)
            left -= len(blk)
            if not blk and left:
                raise TraceFormatError(f"the file ended while reading it ({left} bytes missing)",
                                       code="IO_ERROR", path=str(s.path))
            r = raw_stream(dec.feed(blk, left == 0), s.core, s.start)
            yield r
            if left == 0:
                return


def _scan_block(s: _Stream, r: RawStream, bi: int, strings: list[str],
                markers: dict[int, str]) -> None:
    from .fast import _cols, _texts

    s.raw_diags.extend(r.diags)
    s.diag_block.extend([bi] * len(r.diags))
    s.sync_bytes += r.sync_bytes
    s.str_order = r.str_order or s.str_order
    if not len(r):
        return
    sc = _core.sv_scan(_cols(r))
    _collect(r, s.info, sc["meta_rows"])
    _texts(r, sc["text_rows"], strings, markers)
    for k, c in sc["counts"]:
        s.counts[k] = s.counts.get(k, 0) + c
    for k, c in sc["core_counts"]:
        s.core_counts[k] = s.core_counts.get(k, 0) + c
    s.event_cores.update(sc["event_cores"])
    s.handles.update(sc["handles"])
    s.ovf_values.extend(sc["ovf_values"])
    s.packets += len(r)
    s.events += int(sc["events"])
    if sc["min_ts"] is not None:
        s.min_ts = int(sc["min_ts"]) if s.min_ts is None else min(s.min_ts, int(sc["min_ts"]))
    if s.first_ts is None:
        s.first_ts = int(r.ts[0])
    s.last_ts = int(r.ts[-1])
    s.last_id = int(r.id[-1])


def _stream_meta(s: _Stream) -> dict[str, Any]:
    """``meta.extra["streams"][name]`` from the scan pass's counts."""
    return stream_facts(
        s.info, core=s.core, packets=s.packets,
        counts_by_id={str(k): c for k, c in sorted(s.counts.items())}, sync_bytes=s.sync_bytes,
        overflow_values=list(s.ovf_values), first=s.first_ts, last=s.last_ts, str_order=s.str_order,
        core_counts={str(k): c for k, c in sorted(s.core_counts.items())} if s.esp else None)


@dataclass
class _Plan:
    """Everything the scan pass decided: the conversion parameters and the chunks' side tables."""

    streams: list[_Stream]
    template: Trace  #: meta and side tables of every chunk (no events, no diagnostics)
    first_diags: list[Diagnostic]
    stream_diags: list[list[Diagnostic]]  #: per stream: decoder records, then SV_NO_TRACE_STOP
    last_diags: list[Diagnostic]
    params: dict[str, Any]
    #: every stream's ``ts`` (ns) never decreases, so merging the streams equals the whole read's
    #: stable sort (false only when the tick -> ns conversion wraps int64: a damaged INIT rate)
    monotonic: bool = True
    #: (OVERFLOW packets, largest drop count) for SV_OVERFLOW, or None
    overflow: tuple[int, int] | None = None


def _open(paths: list[Path], on_corrupt: str, block_bytes: int) -> tuple[list[_Stream], dict[str, Any]]:
    """Container of every file, then the scan pass over every stream."""
    streams: list[_Stream] = []
    diags: list[Diagnostic] = []
    headers: list[list[str]] = []
    version, esp_ext = "", False
    sha = hashlib.sha256()
    strings: list[str] = []
    markers: dict[int, str] = {}
    multi_file = len(paths) > 1
    for fi, p in enumerate(paths):
        _head, size, cont = open_container(p, on_corrupt, diags)  # type: ignore[arg-type]
        headers.append(cont.header_lines)
        version = version or cont.version
        esp_ext = esp_ext or cont.esp_extension
        _hash(p, 0, cont.streams[0][1] if cont.streams else size, sha, block_bytes)
        for core, start, end in cont.streams:
            c = fi if multi_file else core
            s = _Stream(p, c, start, end, f"Core{c}", cont.esp_extension, bool(cont.header_lines),
                        StreamInfo(name=f"Core{c}", core=c), log_base=len(strings))
            for bi, r in enumerate(_blocks(s, block_bytes, sha)):
                _scan_block(s, r, bi, strings, markers)
            streams.append(s)
        if cont.streams:
            _hash(p, cont.streams[-1][2], size, sha, block_bytes)
    return streams, {"diags": diags, "headers": headers, "version": version, "esp": esp_ext,
                     "sha": sha.hexdigest(), "strings": strings, "markers": markers,
                     "path": ";".join(str(p) for p in paths)}


def _hash(p: Path, a: int, b: int, sha: Any, block_bytes: int) -> None:
    """Add the bytes ``a:b`` of file ``p`` (outside every stream) to ``sha``."""
    with open(p, "rb") as f:
        f.seek(a)
        while a < b and (blk := f.read(min(block_bytes, b - a))):
            sha.update(blk)
            a += len(blk)


def _plan(paths: list[Path], description: Any, on_corrupt: str, block_bytes: int) -> _Plan:
    from .__init__ import _check_stop
    from .fast import (
        _task_table,
        count_cores,
        decide,
        handles_bytes,
        unknown_id_diags,
    )

    streams, c = _open(paths, on_corrupt, block_bytes)
    path = c["path"]
    stream_diags: list[list[Diagnostic]] = []
    stops: list[list[Diagnostic]] = []
    for s in streams:
        stop: list[Diagnostic] = []
        _check_stop(_LastRow(s.last_id, s.raw_diags), s.end, s.has_header, s.name, stop)
        stops.append(stop)
    for si, s in enumerate(streams):
        found: list[Diagnostic] = []
        _stream_diags(_Diags(s), si, s.name, path, on_corrupt, found)
        stream_diags.append(found)
    last_diags: list[Diagnostic] = []
    infos = [s.info for s in streams]
    d = decide(infos, description, last_diags)
    scans = [{"handles": sorted(s.handles), "events": s.events,
              "event_cores": sorted(s.event_cores)} for s in streams]
    tasks = _task_table(infos, scans, d.ram_base, d.shift)
    mins = [s.min_ts for s in streams if s.min_ts is not None]
    origin = min(mins) if mins else 0
    stream_meta = {s.name: _stream_meta(s) for s in streams}
    last_diags.extend(unknown_id_diags(infos, stream_meta, d.table))
    ovf = [s for s in streams if s.ovf_values]
    # SV_OVERFLOW quotes the first OVERFLOW event in time order: known once the streams merge
    overflow = (sum(len(s.ovf_values) for s in ovf), max(max(s.ovf_values) for s in ovf)) \
        if ovf else None
    events_n = sum(s.events for s in streams)
    cores_n = count_cores(scans, stream_meta, c["esp"], len(streams)) if events_n else len(streams)
    api_ids = _api_ids(streams, d.table)
    template = assemble_trace(
        empty_events(0), tasks=tasks, diags=[], strings=c["strings"], isr_names=d.isr_names,
        markers=c["markers"], table=d.table, api_ids=api_ids, stream_meta=stream_meta,
        init=d.init, sysdesc=d.sysdesc, sysdesc_texts=d.sysdesc_texts, infos=infos,
        header=c["headers"], esp_extension=c["esp"], version=c["version"] or "raw", path=path,
        sha256=c["sha"], tick_hz=d.tick_hz, origin=origin, cores_n=cores_n)
    params = {"ram_base": d.ram_base, "shift": d.shift, "handles": handles_bytes(tasks),
              "named": d.named, "tick_hz": d.tick_hz or 0, "origin": origin}
    # whole-read order: container, end-of-stream checks, decoder records, trace-level
    first = c["diags"]
    per_stream = [sd + st for sd, st in zip(stream_diags, stops)]
    lasts = [s.last_ts for s in streams if s.last_ts is not None]
    span = max(lasts) - origin if lasts else 0
    monotonic = not d.tick_hz or span // d.tick_hz < (2**63 - 1) // 1_000_000_000 - 1
    return _Plan(streams, template, first, per_stream, last_diags, params, monotonic, overflow)


class _LastRow:
    """What ``_check_stop`` reads of a decoded stream: its last packet id and its records."""

    def __init__(self, last_id: int | None, diags: list[tuple[Any, ...]]) -> None:
        self.id = np.array([] if last_id is None else [last_id], dtype=np.uint32)
        self.diags = diags

    def __len__(self) -> int:
        return int(self.id.shape[0])


class _Diags:
    """What ``_stream_diags`` reads of a decoded stream: its start and its records."""

    def __init__(self, s: _Stream) -> None:
        self.start = s.start
        self.diags = s.raw_diags


def _api_ids(streams: list[_Stream], table: Any) -> set[int]:
    """Ids >= 32 that become API_CALL (as ``sv_model.rs`` decides per event)."""
    named = set(table.events) if table is not None else set()
    out: set[int] = set()
    for s in streams:
        mf = min([m["evt_off"] for m in s.info.modules] + [MODULE_EVENT_OFFSET])
        for k in s.counts:
            if k >= 32 and (k < mf or k in named):
                out.add(k)
    return out


def iter_chunks(path: PathLike | Sequence[PathLike], *, chunk_events: int = 1 << 22,
                description: Any = None, on_corrupt: str = "raise",
                block_bytes: int = BLOCK_BYTES) -> Iterator[Trace]:
    """Read a SystemView recording as a sequence of Traces of at most ``chunk_events`` events.

    Same arguments as :func:`~trace_parsers.systemview.read_systemview` (plus ``block_bytes``,
    the read size). See the module docstring for what each chunk carries.
    """
    validate_on_corrupt(on_corrupt)
    if chunk_events < 1 or block_bytes < 1:
        raise ValueError("chunk_events and block_bytes must be >= 1")
    paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]  # type: ignore[arg-type]
    if not paths:
        raise ValueError("read_systemview needs at least one path")
    plan = _plan(paths, description, on_corrupt, block_bytes)
    if len(plan.streams) > 1 and not plan.monotonic:
        yield from _sliced(paths, chunk_events, description, on_corrupt)
        return
    yield from _convert(plan, chunk_events, block_bytes)


def _sliced(paths: list[Path], chunk_events: int, description: Any,
            on_corrupt: str) -> Iterator[Trace]:
    """Chunks of one whole read (memory is not bounded)."""
    from . import read_systemview

    tr = read_systemview(paths, description=description, on_corrupt=on_corrupt)
    n = len(tr.events)
    starts = list(range(0, n, chunk_events)) or [0]
    for i, a in enumerate(starts):
        diags = tr.diagnostics if i == len(starts) - 1 else []
        yield Trace(tr.events[a:a + chunk_events], tr.meta, tasks=tr.tasks, isrs=tr.isrs,
                    markers=tr.markers, diagnostics=diags, strings=tr.strings)


def _stream_events(plan: _Plan, si: int, block_bytes: int, pending: list[Diagnostic],
                   out: tuple[int, int] | None = None) -> Iterator[Any]:
    """Converted events of stream ``si``, block by block; the diagnostics found go to
    ``pending`` as their block is decoded (the end-of-stream checks after the last block).
    With ``out`` (address, bytes of an events array) the rows are written there one block after
    the other and the row counts are yielded instead."""
    from .fast import _cols

    s, found = plan.streams[si], plan.stream_diags[si]
    mod_first = min([m["evt_off"] for m in s.info.modules] + [MODULE_EVENT_OFFSET])
    conv = _core.SvConverter(start=s.start, stream_core=s.core, esp=s.esp,
                             mod_first=int(min(mod_first, 0xFFFFFFFF)), log_base=s.log_base,
                             **plan.params)
    by_block: dict[int, list[Diagnostic]] = {}
    for d, b in zip(found, s.diag_block):
        by_block.setdefault(b, []).append(d)
    done = 0
    for bi, r in enumerate(_blocks(s, block_bytes)):
        pending.extend(by_block.get(bi, ()))
        rows = int(np.count_nonzero(r.id)) if len(r) else 0
        if rows and out is not None:
            conv.convert(_cols(r), rows, out=out, at=done)
            done += rows
            yield rows
        elif rows:
            yield np.frombuffer(conv.convert(_cols(r), rows), dtype=EVENT_DTYPE)
        del r
    pending.extend(found[len(s.raw_diags):])


def _merged(gens: list[Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """The streams' events in the order of ``model.concat_events`` (stable sort by ``ts`` of
    the streams end to end), from a few blocks per stream (each stream's ``ts`` never decreases:
    cumulative ticks).

    An event of stream i with time t is final once every stream j < i has a buffered event
    later than t (or ended) and every stream j > i one at or after t; each round empties the
    buffer of the stream with the smallest last time, which then reads its next block.
    """
    if len(gens) == 1:
        yield from gens[0]
        return
    k = len(gens)
    bufs: list[np.ndarray] = [empty_events(0) for _ in gens]
    live = [True] * k
    inf = np.iinfo(np.int64).max

    def refill(i: int) -> None:
        while live[i] and not len(bufs[i]):
            nxt = next(gens[i], None)
            if nxt is None:
                live[i] = False
            else:
                bufs[i] = nxt

    for i in range(k):
        refill(i)
    while any(live) or any(len(b) for b in bufs):
        front = [int(b["ts"][-1]) if live[i] else inf for i, b in enumerate(bufs)]
        out: list[np.ndarray] = []
        for i, b in enumerate(bufs):
            before = min(front[:i], default=inf)
            after = min(front[i + 1:], default=inf)
            ts = b["ts"]
            cut = min(int(np.searchsorted(ts, before, "left")) if before < inf else len(b),
                      int(np.searchsorted(ts, after, "right")) if after < inf else len(b))
            if cut:
                out.append(b[:cut])
                bufs[i] = b[cut:]
        if out:
            ev = np.concatenate(out) if len(out) > 1 else out[0]
            if len(out) > 1:
                ev = ev[np.argsort(ev["ts"], kind="stable")]
            yield ev
        for i in range(k):
            refill(i)


def _convert(plan: _Plan, chunk_events: int, block_bytes: int) -> Iterator[Trace]:
    """Merge the streams' converted blocks and copy them into chunk buffers of exactly the
    size needed (the number of events is known from the scan pass)."""
    t = plan.template
    pending: list[Diagnostic] = list(plan.first_diags)
    remaining = sum(s.events for s in plan.streams)

    def chunk(events: np.ndarray) -> Trace:
        diags = pending[:]
        pending.clear()
        return Trace(events, t.meta, tasks=t.tasks, isrs=t.isrs, markers=t.markers,
                     diagnostics=diags, strings=t.strings)

    gens = [_stream_events(plan, si, block_bytes, pending) for si in range(len(plan.streams))]
    first_ovf: int | None = None
    cur: np.ndarray | None = None
    fill = 0
    for ev in _merged(gens):
        if len(ev) > remaining:
            raise TraceFormatError("the file changed while it was read (more events than the "
                                   "scan pass found)", code="IO_ERROR", path=t.meta.source_path)
        if plan.overflow and first_ovf is None:
            at = np.flatnonzero(ev["kind"] == EventKind.OVERFLOW)
            first_ovf = int(ev["src_offset"][at[0]]) if len(at) else None
        i = 0
        while i < len(ev):
            if cur is None:
                cur, fill = np.empty(min(chunk_events, remaining), dtype=EVENT_DTYPE), 0
            m = min(len(cur) - fill, len(ev) - i)
            # as bytes: a structured assignment would copy field by field
            cur.view(np.uint8)[fill * _ROW:(fill + m) * _ROW] = ev.view(np.uint8)[i * _ROW:(i + m) * _ROW]
            fill, i, remaining = fill + m, i + m, remaining - m
            # a full chunk is handed out once more events exist: the last chunk (which gets the
            # trailing diagnostics) is never empty unless the recording is
            if fill == len(cur) and remaining:
                yield chunk(cur)
                cur = None
        del ev
    for g in gens:  # streams without events still report their end-of-stream checks
        for _ in g:
            pass
    pending.extend(plan.last_diags)
    if plan.overflow:
        from .fast import overflow_diag

        pending.append(overflow_diag(first_ovf or 0, *plan.overflow))
    yield chunk(cur[:fill] if cur is not None else empty_events(0))
