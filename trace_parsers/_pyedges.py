"""Edges of a small logic capture without NumPy, for ``crosstrace info`` (:mod:`trace_parsers.summary`).

The same results as :class:`~trace_parsers._edges.WordEdgeScanner`, :func:`~trace_parsers._edges.
changes_to_edges`, :func:`~trace_parsers._edges.rescale_ticks` and :func:`~trace_parsers._edges.
build_edge_trace`, in Python integers: a block of sample words is one big integer, XORed with
itself shifted by a word (each word of the result is a sample XOR its successor), and only the
non-zero bytes of that are looked at (``re`` finds them). The work is bounded
(:data:`MAX_SAMPLE_BYTES`, :data:`MAX_CHANGES`): beyond it :class:`TooBig` is raised and the caller
reads the file with the NumPy readers instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._edgemeta import (
    ChannelEdges,
    check_edge_limit,
    check_rate_option,
    duplicate_names,
    edge_trace_meta,
    max_edges,
    sha256_file,
)
from ._meta import Channel, EventKind, signed_ticks_to_ns_int

#: inflated sample bytes and sample changes a NumPy-free summary handles (beyond: TooBig): about
#: what costs as much time as importing NumPy (~5 MB of samples took 90 ms on the bench machine)
MAX_SAMPLE_BYTES = 4 << 20
MAX_CHANGES = 200_000
_NONZERO = re.compile(rb"[^\x00]+")


class TooBig(Exception):
    """The capture is too large for the NumPy-free summary (the NumPy readers are used)."""


#: :class:`~trace_parsers._edgemeta.ChannelEdges` holding a list of edge ticks here
PyChannelEdges = ChannelEdges


class PyWordEdgeScanner:
    """:class:`~trace_parsers._edges.WordEdgeScanner` (same interface as the sigrok reader uses it)."""

    def __init__(self, bits: Sequence[int], unitsize: int, *, path: str | Path | None = None,
                 source_format: str | None = None) -> None:
        if not 1 <= unitsize <= 8:
            raise ValueError(f"unsupported unitsize {unitsize}")
        self.bits = [int(b) for b in bits]
        self.unitsize = unitsize
        self.mask = sum(1 << b for b in set(self.bits))
        self.samples = 0
        self.edges = 0
        self.path, self.source_format = path, source_format
        self._limit = max_edges(path)
        self._carry = b""
        self._last_raw: bytes | None = None
        self._first = 0
        self._changes: list[tuple[int, int]] = []  #: (sample index, masked XOR with the sample before)
        self._bytes = 0

    def feed(self, buf: bytes | bytearray | memoryview) -> None:
        data = self._carry + bytes(buf)
        self._bytes += len(data)
        if self._bytes > MAX_SAMPLE_BYTES:
            raise TooBig(f"more than {MAX_SAMPLE_BYTES} bytes of samples")
        u = self.unitsize
        n = len(data) // u
        self._carry = data[n * u:]
        if n:
            self._words(data[:n * u])

    @property
    def leftover_bytes(self) -> int:
        return len(self._carry)

    def _words(self, words: bytes) -> None:
        u = self.unitsize
        if self._last_raw is None:
            self._first = int.from_bytes(words[:u], "little")
            buf, base = words, self.samples  # base: sample index of buf's first word
        else:
            buf, base = self._last_raw + words, self.samples - 1
        k = len(buf) // u
        if k >= 2:
            x = int.from_bytes(buf, "little")
            diff = (x ^ (x >> (8 * u))).to_bytes(len(buf), "little")[:(k - 1) * u]  # word j: w[j] ^ w[j+1]
            for m in _NONZERO.finditer(diff):
                for j in range(m.start() // u, (m.end() - 1) // u + 1):
                    v = int.from_bytes(diff[j * u:(j + 1) * u], "little") & self.mask
                    if v:
                        self._changes.append((base + j + 1, v))
                        self.edges += bin(v).count("1")
            if len(self._changes) > MAX_CHANGES:
                raise TooBig(f"more than {MAX_CHANGES} sample changes")
            if self.edges > self._limit:
                check_edge_limit(self.edges, self.path, source_format=self.source_format)
        self._last_raw = buf[len(buf) - u:]
        self.samples += len(words) // u

    def finish(self, names: Sequence[str], indices: Sequence[int] | None = None) -> list[PyChannelEdges]:
        idx = list(indices) if indices is not None else self.bits
        out = []
        for k, name in enumerate(names):
            b = self.bits[k]
            edges = [i for i, v in self._changes if (v >> b) & 1]
            out.append(PyChannelEdges(int(idx[k]), str(name), (self._first >> b) & 1, edges))
        return out


def changes_to_edges(ticks: Sequence[int], levels: Sequence[int]) -> tuple[int, list[int]]:
    """:func:`~trace_parsers._edges.changes_to_edges` on lists."""
    if not levels:
        return 0, []
    return int(levels[0]), [ticks[i] for i in range(1, len(levels)) if levels[i] != levels[i - 1]]


def rescale_ticks(ticks: Sequence[int], num: int, den: int) -> list[int]:
    """:func:`~trace_parsers._edges.rescale_ticks` on a list: ``round(t * num / den)``, half up."""
    out = []
    for t in ticks:
        q, r = divmod(int(t), den)
        out.append(q * num + (r * num + den // 2) // den)
    return out


def edge_summary(channels: Sequence[PyChannelEdges], *, source_format: str, path: str | Path,
                 tick_hz: int | None, total_ticks: int | None, source_version: str = "",
                 origin_raw: int = 0, diagnostics: Sequence[Any] = (),
                 extra: dict[str, Any] | None = None, first_tick: int = 0) -> Any:
    """What :func:`~trace_parsers._edges.build_edge_trace` builds, as a
    :class:`~trace_parsers.summary.TraceSummary` (same checks, same meta, no events table)."""
    from .summary import TraceSummary

    n = sum(len(c.edges) for c in channels)
    check_edge_limit(n, path, source_format=source_format)
    check_rate_option(tick_hz, path)
    stats = [{"index": c.index, "name": c.name, "initial_level": c.initial, "rising": c.rising,
              "falling": c.falling, "first_edge": c.edges[0] if c.edges else None,
              "last_edge": c.edges[-1] if c.edges else None} for c in channels]
    sha = sha256_file(path) if Path(path).is_file() else ""
    meta = edge_trace_meta(stats, source_format=source_format, path=path, tick_hz=tick_hz,
                           total_ticks=total_ticks, source_version=source_version,
                           origin_raw=origin_raw, extra=extra, sha256=sha)
    rise = sum(c.rising for c in channels)
    kinds = {EventKind.EDGE_RISE.name: rise, EventKind.EDGE_FALL.name: n - rise}
    duration = 0
    if n:
        lo = min(c.edges[0] for c in channels if c.edges) + first_tick
        hi = max(c.edges[-1] for c in channels if c.edges) + first_tick
        duration = (signed_ticks_to_ns_int(hi, tick_hz) - signed_ticks_to_ns_int(lo, tick_hz)
                    if tick_hz else hi - lo)
    per_index: dict[int, int] = {}
    for c in channels:
        per_index[c.index] = per_index.get(c.index, 0) + len(c.edges)
    return TraceSummary(meta=meta, events=n, duration=duration,
                        kind_counts={k: v for k, v in kinds.items() if v},
                        channels=[Channel(c.index, c.name, c.initial, c.enabled) for c in channels],
                        diagnostics=[*diagnostics, *duplicate_names(channels)], edges_by_index=per_index)
