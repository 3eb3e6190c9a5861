"""``iter_chunks``: a VCD file as a sequence of bounded :class:`Trace` chunks.

The whole-file reader (:func:`~trace_parsers.vcd.read_vcd`) holds the file, its text and every
change in memory.  This reader holds one block of the body (``block_bytes``, 4 MiB) and one chunk
of events: the body is read in blocks that end at a line starting with ``#`` (a time stamp), each
block is parsed like the whole body (the vectorised parser, or the token loop with its state —
current time, open ``$comment``, damage — carried from block to block), and its changes become
edges against each channel's last level.  Edges at the block's last time stay pending until the next
block, so that edges at one time are ordered by channel as in the whole read.

Contract (the dispatcher ``trace_parsers.chunked`` relies on it):

* concatenating the chunks' ``events`` equals ``read_vcd(path, **same_kwargs).events`` exactly;
  every chunk but the last holds ``chunk_events`` events, the last 1..``chunk_events`` (one empty
  chunk for a file without edges);
* ``meta`` equals the whole read's (the dataclass fields) in every chunk; ``meta.extra`` and the
  channels' initial levels are cumulative (what is known at the chunk's end), the whole read's on
  the last chunk;
* each diagnostic is in exactly one chunk, in the whole read's order: the header's (skipped
  vectors) in the first chunk, those of the body in the last.

Unlike the whole read, a ``samplerate=`` that cannot be applied is refused before the body is read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._edges import edge_trace_meta, rescale_ticks, sha256_file, take_edges
from ..errors import TraceFormatError, validate_on_corrupt
from ..model import Channel, Diagnostic, Trace
from .reader import BodyState, _Var, header_end, parse_header, sample_scale, scaled_total

DEFAULT_CHUNK_EVENTS = 1 << 22
BLOCK_BYTES = 1 << 22  #: body bytes parsed per step (a block grows only past a line without '#')
_HEAD_STEP = 1 << 16


def iter_chunks(path: str | Path, *, chunk_events: int = DEFAULT_CHUNK_EVENTS, on_corrupt: str = "raise",
                samplerate: int | None = None, block_bytes: int = BLOCK_BYTES,
                **_ignored: Any) -> Iterator[Trace]:
    """Read a VCD file in chunks of ``chunk_events`` events (see the module docstring); the keywords
    are :func:`~trace_parsers.vcd.read_vcd`'s."""
    if isinstance(chunk_events, bool) or not isinstance(chunk_events, int) or chunk_events < 1:
        raise ValueError(f"Invalid value for the 'chunk_events' parameter: expected a positive integer, "
                         f"but got {chunk_events!r} instead.")
    on_corrupt = validate_on_corrupt(on_corrupt)
    p = str(path)
    head: list[Diagnostic] = []
    tail: list[Diagnostic] = []
    try:
        f = open(p, "rb")  # noqa: SIM115 - closed below, also when the generator is dropped
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR", path=p) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        body_start = _read_header(f, p, size)
        f.seek(0)
        tick_hz, timescale, ids, allvars = parse_header(f.read(body_start), p, head)
        rate, scale = sample_scale(tick_hz, samplerate, p)
        cut = _last_line_cut(f, size)
        body_end = cut[0] if cut is not None and cut[0] >= body_start else size
        out = _Chunker(allvars, rate, scale, chunk_events, p,
                       {"timescale": timescale, "vcd_tick_hz": tick_hz}, head)
        st = BodyState(p, on_corrupt, tail)
        unknown = 0
        for off, block in _blocks(f, body_start, body_end, max(1, block_bytes)):
            for v in allvars:
                v.times, v.levels, v.unknown = [], [], 0
            st.parse(block.decode("utf-8", "surrogateescape"), off, ids)
            unknown += sum(v.unknown for v in allvars)
            yield from out.add(allvars, st.now, st.last_time)
            if st.damaged:
                break
        st.finish(cut, size, allvars, unknown)
    yield from out.add([], None, st.last_time)
    yield out.emit(out.ready_count, tail)


def _read_header(f: Any, p: str, size: int) -> int:
    """Byte offset of the body, reading the file only up to it."""
    data = b""
    while True:
        more = f.read(_HEAD_STEP)
        data += more
        try:
            return header_end(data, p)
        except TraceFormatError:
            if not more or len(data) >= size:
                raise


def _last_line_cut(f: Any, size: int) -> tuple[int, int] | None:
    """``(offset, characters)`` of an incomplete last line (no line end, not blank), else None
    (``reader._cut_line`` of the whole file, reading only its end)."""
    start = size
    tail = b""
    while start > 0:
        step = min(_HEAD_STEP, start)
        start -= step
        f.seek(start)
        tail = f.read(step) + tail
        nl = tail.rfind(b"\n")
        if nl >= 0:
            tail, start = tail[nl + 1:], start + nl + 1
            break
    if not tail.strip():
        return None
    return start, len(tail.decode("utf-8", "surrogateescape"))


def _blocks(f: Any, start: int, end: int, block_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(file offset, bytes)`` of the body ``start..end`` in blocks that end before a line starting
    with ``#`` (the last block ends at ``end``)."""
    f.seek(start)
    pos = start
    buf_off = start
    carry = b""
    while pos < end:
        data = f.read(min(block_bytes, end - pos))
        if not data:
            break
        pos += len(data)
        buf = carry + data
        if pos >= end:
            carry = buf
            break
        k = buf.rfind(b"\n#")
        if k < 0:
            carry = buf
            continue
        yield buf_off, buf[:k + 1]
        carry = buf[k + 1:]
        buf_off += k + 1
    if carry or buf_off == start:
        yield buf_off, carry


class _Chunker:
    """Turns each block's changes into edges and the edges into chunks of events."""

    def __init__(self, allvars: list[_Var], rate: int | None, scale: tuple[int, int], size: int, p: str,
                 extra: dict[str, Any], head: list[Diagnostic]) -> None:
        k = len(allvars)
        self.vars = list(allvars)
        self.rate, self.scale, self.size, self.path, self.extra, self.head = rate, scale, size, p, extra, head
        self.sha = sha256_file(p)
        self.level: list[int | None] = [None] * k  #: each channel's level after its last change
        self.initial = [0] * k
        self.pending: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(k)]
        self.ready: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  #: sorted (ts, marker, level)
        self.ready_count = 0
        self.rising = np.zeros(k, np.int64)
        self.count = np.zeros(k, np.int64)
        self.first = [None] * k
        self.last_edge = [None] * k
        self.last_time = 0
        self.emitted = 0

    def add(self, allvars: list[_Var], now: int | None, last_time: int) -> Iterator[Trace]:
        """Take the variables' changes; edges before time ``now`` (None: all) become ready, and
        every full chunk is yielded (the last chunk is never empty: one chunk's worth is kept)."""
        self.last_time = last_time
        for j, v in enumerate(allvars):
            self._changes(j, v)
        cutoff = None if now is None else self._cutoff(now)
        ts, mk, lv = [], [], []
        for j, parts in enumerate(self.pending):
            if not parts:
                continue
            t = np.concatenate([a for a, _ in parts])
            lvl = np.concatenate([b for _, b in parts])
            n = t.size if cutoff is None else int(np.searchsorted(t, cutoff, side="left"))
            self.pending[j] = [(t[n:], lvl[n:])] if n < t.size else []
            if n:
                ts.append(t[:n])
                lv.append(lvl[:n])
                mk.append(np.full(n, self.vars[j].index, np.uint32))
        if ts:
            t, m, lvl = np.concatenate(ts), np.concatenate(mk), np.concatenate(lv)
            order = np.argsort(t, kind="stable")  # ties in channel order, as the whole read
            self.ready.append((t[order], m[order], lvl[order]))
            self.ready_count += t.size
        while self.ready_count > self.size:
            yield self.emit(self.size, [])

    def _cutoff(self, now: int) -> int:
        """Edges at or after this tick may still gain a tie from the next block (times never go
        back): they stay pending."""
        return int(self._scaled(np.array([now], np.int64))[0])

    def _scaled(self, t: np.ndarray) -> np.ndarray:
        return t if self.scale[0] == self.scale[1] else rescale_ticks(t, *self.scale)

    def _changes(self, j: int, v: _Var) -> None:
        tv = np.asarray(v.times, dtype=np.int64)
        if not tv.size:
            return
        lv = np.asarray(v.levels, dtype=np.int8)
        prev = self.level[j]
        if prev is None:
            self.initial[j] = prev = int(lv[0])
        full = np.empty(lv.size + 1, np.int8)
        full[0] = prev
        full[1:] = lv
        ch = np.flatnonzero(full[1:] != full[:-1])
        self.level[j] = int(lv[-1])
        if ch.size:
            self.pending[j].append((self._scaled(tv[ch]), lv[ch]))

    def emit(self, n: int, diags: list[Diagnostic]) -> Trace:
        """The next ``n`` ready events as a chunk."""
        ev, keep = take_edges(self.ready, n, tick_hz=self.rate, count=self._count)
        self.ready = keep
        self.ready_count -= n
        if self.emitted == 0:
            diags = self.head + diags
        self.emitted += 1
        stats = [{"index": v.index, "name": v.name, "initial_level": self.initial[j],
                  "rising": int(self.rising[j]), "falling": int(self.count[j] - self.rising[j]),
                  "first_edge": self.first[j], "last_edge": self.last_edge[j]}
                 for j, v in enumerate(self.vars)]
        meta = edge_trace_meta(stats, source_format="vcd", path=self.path, tick_hz=self.rate,
                               total_ticks=scaled_total(self.last_time, self.scale), extra=self.extra,
                               sha256=self.sha)
        chans = [Channel(v.index, v.name, self.initial[j]) for j, v in enumerate(self.vars)]
        return Trace(ev, meta, channels=chans, diagnostics=list(diags))

    def _count(self, ts: np.ndarray, mk: np.ndarray, lv: np.ndarray) -> None:
        pos = {v.index: j for j, v in enumerate(self.vars)}
        for m in np.unique(mk, return_counts=True)[0].tolist():
            j = pos[m]
            sel = np.flatnonzero(mk == m)
            self.count[j] += sel.size
            self.rising[j] += int(np.count_nonzero(lv[sel] == 1))
            if self.first[j] is None:
                self.first[j] = int(ts[sel[0]])
            self.last_edge[j] = int(ts[sel[-1]])
