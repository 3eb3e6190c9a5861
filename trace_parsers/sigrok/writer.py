"""``write_sr``: write a sigrok session (``.sr``, srzip v2) that sigrok-cli and PulseView open.

This module is the contract with producers of captures (the virtual logic analyzer in
``firmware/tools/vla``, test writers, ``decode_uart`` for non-``.sr`` inputs).  API::

    write_sr(path, samplerate=1_000_000, channels=["CLK", "DATA"],
             edges=[[10, 20, 30], [15]],       # per channel: sample indices where the level toggles
             initial=[0, 1],                   # level at sample 0 (default all 0)
             total_samples=100)                # default: last edge + 1

    write_sr(path, samplerate=..., channels=[...], samples=words)   # or raw sample words

* ``samplerate`` — integer Hz (exact; written as sigrok's string, e.g. ``"1.234567 MHz"``, or
  ``"N Hz"`` when libsigrok's float parsing would not give back the same integer).
* ``channels`` — names (≤ 64, unique, no newlines); channel *i* is bit *i* of each sample word,
  written as ``probe{i+1}``.
* ``edges`` — one sorted, strictly increasing sequence of sample indices per channel; each index is
  a sample whose level differs from the previous one (1 ≤ index < total_samples).  Memory stays
  O(chunk + edges): samples are generated chunk by chunk.
* ``samples`` — alternatively, an array (or an iterable of arrays) of unsigned sample words, bit *i*
  = channel *i*.
* ``unitsize`` — bytes per sample word, default ``ceil(len(channels) / 8)``.
* ``chunk_bytes`` — size of the ``logic-1-N`` entries (default 4 MiB, as current libsigrok writes).

Returns the :class:`pathlib.Path` written.  Reading the file back with :func:`read_sigrok` (or
``sigrok-cli -i FILE -O vcd``) gives exactly these edges.
"""

from __future__ import annotations

import struct
import types
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .. import __version__
from .metadata import format_samplerate

_fz: types.ModuleType
try:  # pragma: no cover - depends on the installation
    from zlib_ng import zlib_ng as _fz
except ImportError:  # pragma: no cover
    _fz = zlib

CHUNK_BYTES = 4 << 20


def write_sr(path: str | Path, *, samplerate: int, channels: Sequence[str],
             edges: Sequence[Sequence[int] | np.ndarray] | None = None,
             initial: Sequence[int] | None = None, total_samples: int | None = None,
             samples: np.ndarray | Iterable[np.ndarray] | None = None, unitsize: int | None = None,
             chunk_bytes: int = CHUNK_BYTES, compresslevel: int = 6) -> Path:
    """Write a srzip v2 ``.sr`` file; see the module docstring for the parameters."""
    names = [str(c) for c in channels]
    if not names or len(names) > 64:
        raise ValueError(f"expected 1..64 channel names, got {len(names)}")
    if len(set(names)) != len(names):
        raise ValueError(f"channel names must be unique, got {names!r}")
    for n in names:
        if not n.strip() or any(ch in n for ch in "\r\n\0") or n != n.strip():
            raise ValueError(f"invalid channel name {n!r} (empty, surrounding spaces or a newline)")
    rate = int(samplerate)
    if rate <= 0:
        raise ValueError(f"samplerate must be a positive integer (Hz), got {samplerate!r}")
    u = int(unitsize) if unitsize is not None else (len(names) + 7) // 8
    if not 1 <= u <= 8 or u * 8 < len(names):
        raise ValueError(f"unitsize {u} cannot hold {len(names)} channels (1..8 bytes)")
    if (edges is None) == (samples is None):
        raise ValueError("give exactly one of 'edges' or 'samples'")
    per_chunk = max(1, int(chunk_bytes) // u)
    if edges is not None:
        blocks = _blocks_from_edges(names, edges, initial, total_samples, per_chunk, u)
    else:
        blocks = _blocks_from_samples(samples, per_chunk)  # type: ignore[arg-type]
    meta = ["[global]", f"sigrok version=crosstrace {__version__}", "", "[device 1]",
            "capturefile=logic-1", f"total probes={len(names)}",
            f"samplerate={format_samplerate(rate)}", "total analog=0"]
    meta += [f"probe{i + 1}={n}" for i, n in enumerate(names)]
    meta += [f"unitsize={u}", ""]
    out = Path(path)
    tmp = out.with_name(out.name + ".part")
    try:
        with open(tmp, "wb") as f:
            zw = _ZipWriter(f, compresslevel)
            zw.add("version", b"2", stored=True)
            zw.add("metadata", "\n".join(meta).encode("utf-8"))
            k = 0
            for words in blocks:
                if words.size == 0:
                    continue
                k += 1
                if isinstance(words, _Const):
                    zw.add_const(f"logic-1-{k}", words, u)
                else:
                    zw.add(f"logic-1-{k}", _pack(words, u))
            zw.close()
        tmp.replace(out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


class _Const:
    """A block of ``size`` identical sample words (compressed once, reused)."""

    __slots__ = ("value", "size")

    def __init__(self, value: int, size: int) -> None:
        self.value = int(value)
        self.size = int(size)


class _ZipWriter:
    """Minimal zip writer (deflate via zlib-ng when installed); archives up to 4 GiB, no zip64.

    libzip (sigrok) and Python's zipfile read what it writes.  Identical constant blocks are
    compressed once.
    """

    def __init__(self, f: BinaryIO, level: int) -> None:
        self.f = f
        self.level = level
        self.central: list[bytes] = []
        self._cache: dict[tuple[int, int, int], tuple[int, bytes, int]] = {}

    def add(self, name: str, data: Any, stored: bool = False) -> None:
        crc = _fz.crc32(data) & 0xFFFFFFFF
        if stored:
            self._write(name, data, crc, len(data), 0)
        else:
            co = _fz.compressobj(self.level, _fz.DEFLATED, -15)
            self._write(name, co.compress(data) + co.flush(), crc, len(data), 8)

    def add_const(self, name: str, block: _Const, u: int) -> None:
        key = (block.value, block.size, u)
        if key not in self._cache:
            data = _pack(np.full(block.size, block.value, np.uint64), u)
            co = _fz.compressobj(self.level, _fz.DEFLATED, -15)
            self._cache = {key: (_fz.crc32(data) & 0xFFFFFFFF, co.compress(data) + co.flush(),
                                 len(data))}
        crc, comp, n = self._cache[key]
        self._write(name, comp, crc, n, 8)

    def _write(self, name: str, comp: bytes, crc: int, usize: int, method: int) -> None:
        off = self.f.tell()
        if off + len(comp) + 1024 > 0xFFFFFFFF:
            raise ValueError("the .sr file would exceed 4 GiB (zip64 is not written); shorten the "
                             "capture or lower the sample rate")
        nb = name.encode("utf-8")
        dos_time, dos_date = 0, (2020 - 1980) << 9 | 1 << 5 | 1
        self.f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0x800, method, dos_time, dos_date,
                                 crc, len(comp), usize, len(nb), 0) + nb)
        self.f.write(comp)
        self.central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0x800, method,
                                        dos_time, dos_date, crc, len(comp), usize, len(nb), 0, 0, 0,
                                        0, 0o100644 << 16, off) + nb)

    def close(self) -> None:
        start = self.f.tell()
        cd = b"".join(self.central)
        self.f.write(cd)
        n = len(self.central)
        if n > 0xFFFF:
            raise ValueError(f"{n} zip entries exceed the 65535 limit; use a larger chunk_bytes")
        self.f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd), start, 0))


def _pack(words: np.ndarray, u: int) -> Any:
    if u in (1, 2, 4, 8):
        return np.ascontiguousarray(words, dtype=f"<u{u}").data.cast("B")
    w = np.ascontiguousarray(words, dtype="<u8")
    return w.view(np.uint8).reshape(-1, 8)[:, :u].tobytes()


def _blocks_from_samples(samples: np.ndarray | Iterable[np.ndarray], per_chunk: int) -> Iterable[np.ndarray]:
    arrays = [samples] if isinstance(samples, np.ndarray) else samples
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind not in "ui":
            raise ValueError(f"samples must be unsigned integer words, got dtype {a.dtype}")
        a = a.reshape(-1).astype(np.uint64)
        for i in range(0, len(a), per_chunk):
            yield a[i:i + per_chunk]


def _blocks_from_edges(names: list[str], edges: Sequence[Sequence[int] | np.ndarray],
                       initial: Sequence[int] | None, total: int | None,
                       per_chunk: int, u: int) -> Iterable[Any]:
    if len(edges) != len(names):
        raise ValueError(f"expected one edge list per channel ({len(names)}), got {len(edges)}")
    init = list(initial) if initial is not None else [0] * len(names)
    if len(init) != len(names) or any(v not in (0, 1) for v in init):
        raise ValueError(f"initial must hold one 0/1 level per channel, got {initial!r}")
    arrs = [np.asarray(e, dtype=np.int64).reshape(-1) for e in edges]
    last = max((int(a[-1]) for a in arrs if a.size), default=0)
    n = int(total) if total is not None else last + 1
    for name, a in zip(names, arrs):
        if a.size and (a[0] < 1 or a[-1] >= n or np.any(np.diff(a) <= 0)):
            raise ValueError(f"channel {name!r}: edges must be strictly increasing sample indices in "
                             f"1..{n - 1}")
    cur = sum(int(v) << i for i, v in enumerate(init))
    ptr = [0] * len(arrs)
    for a0 in range(0, n, per_chunk):
        b0 = min(n, a0 + per_chunk)
        pos_l, mask_l = [], []
        for i, a in enumerate(arrs):
            j = int(np.searchsorted(a, b0, side="left"))
            if j > ptr[i]:
                pos_l.append(a[ptr[i]:j] - a0)
                mask_l.append(np.full(j - ptr[i], 1 << i, np.uint64))
                ptr[i] = j
        if not pos_l:
            yield _Const(cur, b0 - a0)
            continue
        pos = np.concatenate(pos_l)
        masks = np.concatenate(mask_l)
        order = np.argsort(pos, kind="stable")
        pos, masks = pos[order], masks[order]
        upos, first = np.unique(pos, return_index=True)
        umask = np.bitwise_xor.reduceat(masks, first)
        vals = np.bitwise_xor.accumulate(umask) ^ np.uint64(cur)
        seg_vals = np.concatenate(([np.uint64(cur)], vals))
        bounds = np.concatenate(([0], upos, [b0 - a0]))
        wdt = np.dtype(f"<u{u}") if u in (1, 2, 4, 8) else np.dtype("<u8")
        words = np.repeat(seg_vals.astype(wdt), np.diff(bounds))
        cur = int(vals[-1])
        yield words
