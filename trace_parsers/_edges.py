"""Edge extraction shared by every logic-capture reader (sigrok, DSView, VCD, Saleae).

Two sources of edges exist:

* **sample streams** (``.sr`` words, ``.dsl`` bit planes): :class:`WordEdgeScanner` consumes blocks of
  little-endian sample words and records, per channel bit, the sample indices where the bit differs
  from the previous sample (``logic-captures.md`` §2).  Memory is O(block + edges); a block equal to
  the previous sample repeated is skipped with one ``memcmp``.
* **change lists** (VCD, Saleae CSV/binary): :func:`changes_to_edges` turns (time, level) records
  into edges, dropping records that repeat the current level.

Either way the result is a list of :class:`ChannelEdges` (initial level + sorted int64 tick indices)
that :func:`build_edge_trace` turns into the common model: one ``EDGE_RISE``/``EDGE_FALL`` event per
edge, ``ts_raw`` = tick index, ``marker`` = channel index, ``value`` = new level,
``src_offset`` = tick index.

Edge definition (``facts.json``): an edge at sample ``i`` means ``sample[i] != sample[i-1]``; sample 0
is the initial level, not an edge.

>>> sc = WordEdgeScanner(bits=[0, 1], unitsize=1)
>>> sc.feed(bytes([0b01, 0b01, 0b11, 0b10, 0b10]))
>>> [(c.initial, c.edges.tolist()) for c in sc.finish(["a", "b"])]
[(1, [3]), (0, [2])]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._edgemeta import (  # noqa: F401 (re-exported: the NumPy-free half, see _edgemeta)
    CHUNKED_FORMATS,
    DEFAULT_MAX_EDGES,
    EDGES_PER_FILE_BYTE,
    MAX_EDGES_ENV,
    MIN_MAX_EDGES,
    ChannelEdges,
    check_edge_limit,
    check_rate_option,
    duplicate_names,
    edge_trace_meta,
    max_edges,
    sha256_file,
)
from .model import EVENT_DTYPE, Channel, CtxType, Diagnostic, EventKind, Trace, ticks_to_ns

#: word dtype for a unitsize (odd sizes are widened to the next power of two)
_WORD = {1: "<u1", 2: "<u2", 3: "<u4", 4: "<u4", 5: "<u8", 6: "<u8", 7: "<u8", 8: "<u8"}
#: bit planes (``.dsl``): sub-block (bytes) skipped with one memcmp when constant
_SUB_BYTES = 1 << 18
#: sample words: bytes scanned per NumPy pass, = the sigrok reader's inflate piece (measured on a
#: 1 GS/s capture: smaller blocks lose more to per-call overhead than they gain in cache hits)
_BLOCK_BYTES = 1 << 22
#: sample words: when more than 1/_DENSE_FRACTION of the 64-bit words changed, a per-sample XOR is cheaper
_DENSE_FRACTION = 4


class WordEdgeScanner:
    """Streaming edge extraction from packed little-endian sample words.

    ``bits`` are the bit positions (0 = least significant bit of the first byte) of the channels to
    track; other bits are masked off.  ``feed`` accepts any byte length: a partial word is carried to
    the next call.  ``finish(names)`` returns one :class:`ChannelEdges` per bit.
    """

    def __init__(self, bits: Sequence[int], unitsize: int, *, path: str | Path | None = None,
                 source_format: str | None = None, limit: int | None = None) -> None:
        if unitsize not in _WORD:
            raise ValueError(f"unsupported unitsize {unitsize}")
        self.bits = [int(b) for b in bits]
        self.unitsize = unitsize
        self.dtype = np.dtype(_WORD[unitsize])
        self.mask = 0
        for b in self.bits:
            self.mask |= 1 << b
        self.full_mask = self.mask == (1 << (8 * unitsize)) - 1
        self.samples = 0  #: samples consumed so far
        self.last: int | None = None  #: last (masked) sample value
        self._last_raw = b""  #: last raw word (for the memcmp fast path)
        self._carry = b""
        self._first_raw: int | None = None
        self._idx: list[np.ndarray] = []  #: int64 sample indices of changes, per scanned block
        self._dv: list[np.ndarray] = []  #: (masked) XOR of the sample with its predecessor there
        self.path = path
        self.edges = 0  #: edges found so far (all channels; checked against max_edges())
        self.source_format = source_format
        #: edge limit of a whole read (``max_edges(path)`` unless given; a chunked read drains the
        #: changes as it goes and passes no limit of its own)
        self._limit = max_edges(path) if limit is None else limit

    # -- input ---------------------------------------------------------------------------------
    def feed(self, buf: bytes | bytearray | memoryview) -> None:
        u = self.unitsize
        mv = memoryview(buf).cast("B")
        obj = buf if isinstance(buf, (bytes, bytearray)) else None  # for the memcmp fast path
        start = 0
        if self._carry:
            need = u - len(self._carry)
            head = self._carry + bytes(mv[:need])
            mv = mv[need:]
            start = min(need, len(buf))
            if len(head) < u:
                self._carry = head
                return
            self._carry = b""
            self._feed_words(memoryview(head), head, 0)
        n = len(mv) // u
        if n * u != len(mv):
            self._carry = bytes(mv[n * u:])
            mv = mv[:n * u]
        if n:
            self._feed_words(mv, obj, start)

    @property
    def leftover_bytes(self) -> int:
        """Bytes of an incomplete trailing word (ignored, like libsigrok)."""
        return len(self._carry)

    def _feed_words(self, mv: memoryview, obj: bytes | bytearray | None, start: int) -> None:
        """Scan the whole words ``mv``, which are ``obj[start:start + len(mv)]`` when ``obj`` is given."""
        u = self.unitsize
        if self.last is None:
            first = bytes(mv[:u])
            self._first_raw = int.from_bytes(first, "little")
            self.last = self._first_raw & self.mask
            self._last_raw = first
        total = len(mv)
        pos = 0
        sub = _BLOCK_BYTES - _BLOCK_BYTES % u
        while pos < total:
            end = min(pos + sub, total)
            piece = mv[pos:end]
            if obj is None or not self._constant(piece, obj, start + pos):
                self._scan(piece)
            self.samples += (end - pos) // u
            pos = end

    def _constant(self, piece: memoryview, obj: bytes | bytearray, start: int) -> bool:
        """Whether ``piece`` (= ``obj[start:start + len(piece)]``) repeats the last raw sample.

        One memcmp of ``obj`` against itself shifted by a word, without copying (``bytes ==`` would
        need a slice copy or a pattern; memoryview comparison is element-wise and 40x slower).  It
        stops at the first change, and is only tried when the first and last words already match.
        """
        u = self.unitsize
        n = len(piece)
        raw = self._last_raw
        if piece[:u] != raw or piece[n - u:] != raw:
            return False
        return n == u or obj.startswith(memoryview(obj)[start + u:start + n], start, start + n)

    def _words(self, piece: memoryview) -> np.ndarray:
        u = self.unitsize
        if u in (1, 2, 4, 8):
            return np.frombuffer(piece, dtype=self.dtype)
        raw = np.frombuffer(piece, dtype=np.uint8).reshape(-1, u)
        wide = np.zeros((raw.shape[0], self.dtype.itemsize), dtype=np.uint8)
        wide[:, :u] = raw
        return wide.view(self.dtype).reshape(-1)

    def _scan(self, piece: memoryview) -> None:
        s = self._words(piece)
        mask = None if self.full_mask else self.dtype.type(self.mask)
        nz, dv = _changes(s, self.dtype.type(self.last), mask)
        if nz.size:
            self.edges += int(np.bitwise_count(dv).sum(dtype=np.int64))
            if self.edges > self._limit:
                check_edge_limit(self.edges, self.path, source_format=self.source_format)
            self._idx.append(nz.astype(np.int64) + self.samples)
            self._dv.append(dv)
        last = s[-1] if mask is None else s[-1] & mask
        self.last = int(last)
        u = self.unitsize
        self._last_raw = bytes(piece[len(piece) - u:])

    # -- output --------------------------------------------------------------------------------
    def drain(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The changes scanned since the last drain: (int64 sample indices, masked XORs), per block."""
        idx, dv = self._idx, self._dv
        self._idx, self._dv = [], []
        return idx, dv

    def initial_levels(self) -> list[int]:
        first = self._first_raw or 0
        return [(first >> b) & 1 for b in self.bits]

    def finish(self, names: Sequence[str], indices: Sequence[int] | None = None) -> list[ChannelEdges]:
        idx = list(indices) if indices is not None else self.bits
        init = self.initial_levels()
        nz = np.concatenate(self._idx) if self._idx else np.zeros(0, np.int64)
        dv = np.concatenate(self._dv) if self._dv else np.zeros(0, self.dtype)
        self._idx, self._dv = [nz], [dv]
        out = []
        for k, name in enumerate(names):
            sel = ((dv >> self.dtype.type(self.bits[k])) & self.dtype.type(1)).astype(bool)
            out.append(ChannelEdges(int(idx[k]), str(name), int(init[k]), nz[sel]))
        return out


def _changes(s: np.ndarray, prev: Any, mask: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Sample indices where ``s & mask`` changes (against ``prev`` before ``s[0]``) and the XOR there."""
    per = 8 // s.dtype.itemsize if s.dtype.itemsize < 8 else 1
    cut = s.size - s.size % per
    if per == 1 or cut == 0:
        return _changes_dense(s, prev, mask)
    nz, dv = _changes_by_word(s[:cut], prev, per, mask)
    if cut == s.size:
        return nz, dv
    last = s[cut - 1] if mask is None else s[cut - 1] & mask
    nz2, dv2 = _changes_dense(s[cut:], last, mask)
    return np.concatenate((nz, nz2 + cut)), np.concatenate((dv, dv2))


def _changes_dense(s: np.ndarray, prev: Any, mask: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_changes` by an XOR of neighbours over every sample."""
    if mask is not None:
        s = s & mask
    d = np.empty_like(s)
    d[0] = s[0] ^ prev
    np.bitwise_xor(s[1:], s[:-1], out=d[1:])
    nz = np.flatnonzero(d != 0)  # NumPy's nonzero is ~3x faster on bools than on integers
    return nz, d[nz]


def _changes_by_word(s: np.ndarray, prev: Any, per: int, mask: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Sample indices where ``s & mask`` changes (against ``prev`` before ``s[0]``) and the XOR there.

    Equivalent to an XOR of neighbours over every sample, but compares 64-bit words of ``per``
    samples with the word before: a word equal to its predecessor holds no change when the first word
    of its run is uniform (after masking), so only the words that differ from their predecessor (and
    word 0) are unpacked; a run of repeated non-uniform words (a signal periodic within a word) or
    many changed words fall back to the per-sample XOR.  Sparse edges at high sample rates cost one
    vectorised compare per 64-bit word.  ``prev`` is already masked.

    >>> s = np.array([1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 2, 3, 2], dtype=np.uint16)
    >>> [a.tolist() for a in _changes_by_word(s, np.uint16(0), 4)]
    [[0, 5, 12, 13, 14, 15], [1, 3, 1, 1, 1, 1]]
    >>> [a.tolist() for a in _changes_by_word(s, np.uint16(0), 4, mask=np.uint16(2))]
    [[5], [2]]
    """
    w = s.view(np.uint64)
    n = w.size
    # cand[i]: word i differs from word i-1 (word 0 is always examined); the bools are located 8 at a
    # time through a uint64 view, as NumPy's nonzero is fast on bools only
    cand = np.empty(-(-n // 8) * 8, bool)
    cand[0] = True
    cand[n:] = False
    np.not_equal(w[1:], w[:-1], out=cand[1:n])
    g = np.flatnonzero(cand.view(np.uint64) != 0)
    # flatnonzero + shifts: np.nonzero on a 2-D array is ~5x slower for the same (row-major) result
    flat = np.flatnonzero(cand.reshape(-1, 8)[g])
    k = g[flat >> 3] * 8 + (flat & 7)
    if k.size * _DENSE_FRACTION > n:
        return _changes_dense(s, prev, mask)
    words = s.reshape(-1, per)[k]  # (m, per) samples of the candidate words (a copy)
    before = np.empty(k.size, s.dtype)
    before[0] = prev
    before[1:] = s[k[1:] * per - 1]
    if mask is not None:
        words &= mask
        before &= mask
    nonuniform = (words[:, 1:] != words[:, :1]).any(axis=1)
    repeated = np.empty(k.size, bool)  # the next word equals this one
    repeated[:-1] = k[1:] != k[:-1] + 1
    repeated[-1] = k[-1] + 1 < n
    if (nonuniform & repeated).any():
        return _changes_dense(s, prev, mask)
    full = np.concatenate((before[:, None], words), axis=1)
    d = (full[:, 1:] ^ full[:, :-1]).reshape(-1)
    flat = np.flatnonzero(d != 0)  # per is a power of two: row = flat // per, col = flat % per
    return k[flat // per] * per + flat % per, d[flat]


class BitPlaneEdgeScanner:
    """Streaming edges of one channel stored as a 1-bit-per-sample plane (``.dsl``), LSB first."""

    def __init__(self, *, path: str | Path | None = None, edges_before: int = 0) -> None:
        self.samples = 0
        self.last: int | None = None
        self.initial = 0
        self._parts: list[np.ndarray] = []
        self.path = path
        self.edges = edges_before  #: edges of this and earlier channels (checked against max_edges())
        self._limit = max_edges(path)

    def feed(self, plane: bytes, nsamples: int) -> None:
        """Consume the first ``nsamples`` bits of ``plane`` (bit 0 of byte 0 is the first sample)."""
        if nsamples <= 0:
            return
        nbytes = (nsamples + 7) // 8
        mv = memoryview(plane)[:nbytes]
        if self.last is None:
            self.last = mv[0] & 1
            self.initial = self.last
        fill = b"\xff" if self.last else b"\x00"
        pos = 0
        while pos < nbytes:
            end = min(pos + _SUB_BYTES, nbytes)
            piece = mv[pos:end]
            if piece.tobytes() != fill * (end - pos):
                bits = np.unpackbits(np.frombuffer(piece, np.uint8), bitorder="little")
                cnt = min(len(bits), nsamples - pos * 8)
                bits = bits[:cnt]
                nz = np.flatnonzero(bits[1:] != bits[:-1]) + 1
                if bits[0] != self.last:
                    nz = np.concatenate(([0], nz))
                if nz.size:
                    self.edges += int(nz.size)
                    if self.edges > self._limit:
                        check_edge_limit(self.edges, self.path)
                    self._parts.append(nz.astype(np.int64) + (self.samples + pos * 8))
                self.last = int(bits[-1])
                fill = b"\xff" if self.last else b"\x00"
            pos = end
        self.samples += nsamples

    def finish(self, index: int, name: str) -> ChannelEdges:
        e = np.concatenate(self._parts) if self._parts else np.zeros(0, np.int64)
        return ChannelEdges(index, name, int(self.initial), e)


def _alternating(initial: int, k: int) -> np.ndarray:
    """New levels of ``k`` successive edges starting from ``initial``."""
    lvl = np.empty(k, np.int8)
    lvl[0::2] = 1 - initial
    lvl[1::2] = initial
    return lvl


def changes_to_edges(ticks: np.ndarray, levels: np.ndarray) -> tuple[int, np.ndarray]:
    """Initial level and edge ticks from a change list (first record = initial state).

    Records that repeat the current level are dropped (VCD ``$dumpvars`` + ``#0`` duplicates, the
    repeated final row of Saleae CSV).

    >>> lvl, e = changes_to_edges(np.array([0, 0, 5, 7, 9]), np.array([1, 1, 0, 0, 1]))
    >>> lvl, e.tolist()
    (1, [5, 9])
    """
    levels = np.asarray(levels, dtype=np.int8)
    ticks = np.asarray(ticks, dtype=np.int64)
    if levels.size == 0:
        return 0, np.zeros(0, np.int64)
    ch = np.flatnonzero(levels[1:] != levels[:-1]) + 1
    return int(levels[0]), ticks[ch]


def rescale_ticks(ticks: np.ndarray, num: int, den: int) -> np.ndarray:
    """``round(ticks * num / den)`` exactly (half up), without int64 overflow of the product.

    >>> rescale_ticks(np.array([0, 1, 2, 3, 2**62]), 1, 2).tolist()
    [0, 1, 1, 2, 2305843009213693952]
    """
    t = np.asarray(ticks, dtype=np.int64)
    num, den = int(num), int(den)
    q, r = np.divmod(t, den)
    if den * num < (1 << 62):
        return q * num + (r * num + den // 2) // den
    return q * num + np.array([(int(x) * num + den // 2) // den for x in r.tolist()], dtype=np.int64)


def signed_ticks_to_ns(ticks: np.ndarray, tick_hz: int, out: np.ndarray | None = None) -> np.ndarray:
    """:func:`~trace_parsers.model.ticks_to_ns` for int64 ticks that may be negative.

    With ``out`` (an int64 array or column view of the same length) the result is written there:
    at integer ns per tick without any temporary the size of ``ticks``.
    """
    t = np.asarray(ticks, dtype=np.int64)
    hz = int(tick_hz)
    if hz > 0 and 1_000_000_000 % hz == 0:  # integer ns per tick: one exact multiply
        per = 1_000_000_000 // hz
        if t.size == 0 or max(-int(t.min()), int(t.max())) < (1 << 62) // per:
            return np.multiply(t, np.int64(per), out=out)
    neg = t < 0
    res = ticks_to_ns(np.abs(t).astype(np.uint64), tick_hz)
    res[neg] = -res[neg]
    if out is None:
        return res
    out[...] = res
    return out


def build_edge_trace(channels: Sequence[ChannelEdges], *, source_format: str, path: str | Path,
                     tick_hz: int | None, total_ticks: int | None, source_version: str = "",
                     origin_raw: int = 0, diagnostics: Sequence[Diagnostic] = (),
                     extra: dict[str, Any] | None = None, first_tick: int = 0) -> Trace:
    """The common model for a logic capture.

    ``channels[i].edges`` are tick indices counted from the first sample (``ts_raw``); ``first_tick``
    is the source time of that first sample in ticks relative to the capture's time origin, so that
    ``ts = ticks_to_ns(ts_raw + first_tick)`` (negative for pre-trigger data).  ``origin_raw`` is
    ``-first_tick``, the ``ts_raw`` of time zero.
    """
    n = sum(len(c.edges) for c in channels)
    check_edge_limit(n, path, source_format=source_format)
    check_rate_option(tick_hz, path)
    # sort flat columns first, then fill the (wide) structured array once: peak memory ~1x events
    ts_raw = np.concatenate([c.edges for c in channels]) if channels else np.zeros(0, np.int64)
    marker = np.concatenate([np.full(len(c.edges), c.index, np.uint32) for c in channels]) \
        if channels else np.zeros(0, np.uint32)
    level = np.concatenate([_alternating(c.initial, len(c.edges)) for c in channels]) \
        if channels else np.zeros(0, np.int8)
    if len(channels) > 1 and n:
        order = np.argsort(ts_raw, kind="stable")
        ts_raw, marker, level = ts_raw[order], marker[order], level[order]
        del order
    ev = edge_events(ts_raw, marker, level, tick_hz=tick_hz, first_tick=first_tick)
    del ts_raw, marker, level
    stats = [{"index": c.index, "name": c.name, "initial_level": c.initial, "rising": c.rising,
              "falling": c.falling,
              "first_edge": int(c.edges[0]) if len(c.edges) else None,
              "last_edge": int(c.edges[-1]) if len(c.edges) else None} for c in channels]
    sha = sha256_file(path) if Path(path).is_file() else ""
    meta = edge_trace_meta(stats, source_format=source_format, path=path, tick_hz=tick_hz,
                           total_ticks=total_ticks, source_version=source_version,
                           origin_raw=origin_raw, extra=extra, sha256=sha)
    chans = [Channel(c.index, c.name, c.initial, c.enabled) for c in channels]
    return Trace(ev, meta, channels=chans, diagnostics=[*diagnostics, *duplicate_names(channels)])


def take_edges(pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int, *, tick_hz: int | None,
               count: Any, markers: np.ndarray | None = None) -> tuple[np.ndarray, list[Any]]:
    """The first ``n`` edges of the sorted ``pieces`` (sample index, channel, level) as event rows,
    written piece by piece (no concatenated copy), and the pieces left. ``count(ts, ch, level)``
    sees every piece taken; ``markers[ch]`` is the marker of channel ``ch`` (default: ``ch``)."""
    ev = np.empty(n, dtype=EVENT_DTYPE)
    filled = 0
    keep = []
    for ts, ch, lv in pieces:
        take = min(n - filled, ts.size)
        if take:
            t, c, lvl = ts[:take], ch[:take], lv[:take]
            count(t, c, lvl)
            edge_events(t, c if markers is None else markers[c], lvl, tick_hz=tick_hz,
                        out=ev[filled:filled + take])
            filled += take
        if take < ts.size:
            keep.append((ts[take:], ch[take:], lv[take:]))
    return ev, keep


def edge_events(ts_raw: np.ndarray, marker: np.ndarray, level: np.ndarray, *, tick_hz: int | None,
                first_tick: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """Edge events from sorted columns: sample index, channel index and new level (0/1); written
    into ``out`` (a slice of an event array of the same length) when given."""
    n = len(ts_raw)
    # every column is assigned below (no zero-fill pass)
    ev = np.empty(n, dtype=EVENT_DTYPE) if out is None else out
    for col, val in (("core", 0), ("ctx_type", CtxType.NONE), ("ctx_id", -1), ("target_id", -1),
                     ("src_id", 0)):
        ev[col] = val
    ev["ts_raw"] = ts_raw
    ev["src_offset"] = ts_raw
    ev["marker"] = marker
    ev["value"] = level
    ev["kind"] = np.where(level == 1, np.uint8(EventKind.EDGE_RISE), np.uint8(EventKind.EDGE_FALL))
    rel = np.asarray(ts_raw, dtype=np.int64)  # no copy when already int64 (peak memory of a chunk)
    if first_tick:
        rel = rel + np.int64(first_tick)
    if tick_hz:
        signed_ticks_to_ns(rel, tick_hz, out=ev["ts"])
    else:
        ev["ts"] = rel
    return ev


def channel_edges(trace: Trace, channel: int | str) -> tuple[int, np.ndarray]:
    """``(initial_level, edge ts_raw array)`` of one channel of an edge trace (by index or name)."""
    ch = resolve_channel(trace, channel)
    ev = trace.events
    sel = ((ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)) & \
        (ev["marker"] == ch.index)
    return ch.initial_level, ev["ts_raw"][sel].astype(np.int64)


def resolve_channel(trace: Trace, channel: int | str) -> Channel:
    """The :class:`Channel` named ``channel`` (name first, then index); ValueError listing the choices."""
    for c in trace.channels:
        if c.name == str(channel):
            return c
    if isinstance(channel, int) or (isinstance(channel, str) and channel.isdigit()):
        for c in trace.channels:
            if c.index == int(channel):
                return c
    names = ", ".join(repr(c.name) for c in trace.channels)
    raise ValueError(f"Invalid value for the 'channel' parameter. Allowed values are {names} "
                     f"(or a channel index), but got {channel!r} instead.")
