"""Deterministic, streaming sigrok session (``.sr``, srzip v2) writer for sparse edge data.

Memory is O(edges + one chunk): samples are generated chunk by chunk from the change list, and chunks
that hold a single constant value are compressed once and reused (GPIO captures are mostly idle, so a
1 GHz capture of seconds costs little CPU). Zip entries carry a fixed date (1980-01-01 00:00) and are
written in a fixed order, so equal inputs give byte-identical files (with the same zlib build).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CHUNK_BYTES = 4 << 20  # libsigrok >= 2020 buffers srzip entries to 4 MiB as well
_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01
_DOS_TIME = 0


def samplerate_string(rate: int) -> str:
    """libsigrok's sr_samplerate_string(): ``1 GHz``, ``100 MHz``, ``24 MHz``, ``12.5 kHz``, ``3 Hz``."""
    for mult, unit in ((10**9, "GHz"), (10**6, "MHz"), (10**3, "kHz")):
        if rate >= mult:
            whole, frac = divmod(rate, mult)
            if frac == 0:
                return f"{whole} {unit}"
            digits = len(str(mult)) - 1
            return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')} {unit}"
    return f"{rate} Hz"


class _Zip:
    """Minimal zip32 writer: deflated entries, fixed timestamps, no extra fields."""

    def __init__(self, f):
        self.f = f
        self.central: list[bytes] = []

    def add(self, name: str, payload: bytes, crc: int, usize: int, method: int = 8) -> None:
        n = name.encode()
        off = self.f.tell()
        self.f.write(
            struct.pack(
                "<IHHHHHIIIHH",
                0x04034B50,
                20,
                0,
                method,
                _DOS_TIME,
                _DOS_DATE,
                crc,
                len(payload),
                usize,
                len(n),
                0,
            )
            + n
        )
        self.f.write(payload)
        self.central.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                method,
                _DOS_TIME,
                _DOS_DATE,
                crc,
                len(payload),
                usize,
                len(n),
                0,
                0,
                0,
                0,
                0o100644 << 16,
                off,
            )
            + n
        )
        if off + len(payload) >= 1 << 32 or len(self.central) >= 0xFFFF:
            raise ValueError("capture too large for a zip32 .sr; shorten the run or lower the sample rate")

    def add_bytes(self, name: str, data: bytes) -> None:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        self.add(name, c.compress(data) + c.flush(), zlib.crc32(data), len(data))

    def close(self) -> None:
        start = self.f.tell()
        cd = b"".join(self.central)
        self.f.write(cd)
        self.f.write(
            struct.pack(
                "<IHHHHIIH", 0x06054B50, 0, 0, len(self.central), len(self.central), len(cd), start, 0
            )
        )


def change_list(
    initial: Sequence[int], edges: Sequence[np.ndarray], total: int
) -> tuple[int, np.ndarray, np.ndarray]:
    """Merge per-channel edge sample indices (each edge toggles its bit) into (initial word, change
    sample indices, word from that sample on). Edges at the same sample that cancel leave no change."""
    init = 0
    for bit, lvl in enumerate(initial):
        init |= (int(lvl) & 1) << bit
    s = np.concatenate([np.asarray(e, np.int64) for e in edges] or [np.zeros(0, np.int64)])
    t = np.concatenate(
        [np.full(len(e), 1 << bit, np.uint64) for bit, e in enumerate(edges)] or [np.zeros(0, np.uint64)]
    )
    order = np.argsort(s, kind="stable")
    s, t = s[order], t[order]
    words = np.bitwise_xor.accumulate(t) ^ np.uint64(init) if len(t) else t
    if len(s):
        last = np.append(s[1:] != s[:-1], True)  # keep the final word of each sample
        s, words = s[last], words[last]
    at0 = s <= 0
    if np.any(at0):
        init = int(words[at0][-1])
        s, words = s[~at0], words[~at0]
    keep = s < total
    s, words = s[keep], words[keep]
    prev = np.concatenate([[np.uint64(init)], words[:-1]]) if len(words) else words
    real = words != prev
    return init, s[real], words[real]


def write_sr(
    path: str | Path,
    names: Sequence[str],
    initial: Sequence[int],
    edges: Sequence[np.ndarray],
    total_samples: int,
    samplerate: int,
    comment: Sequence[str] = (),
    chunk_bytes: int = CHUNK_BYTES,
) -> dict:
    """Write a logic-only srzip v2 file; returns {"samples", "unitsize", "entries", "changes"}.

    ``edges[c]`` are sample indices where channel ``c`` (``probe{c+1}``) toggles; ``comment`` lines are
    written as ``#`` comments at the top of ``metadata`` (GKeyFile comments, ignored by libsigrok)."""
    if not 0 < len(names) <= 32:
        raise ValueError(f"expected 1..32 channels, got {len(names)}")
    unitsize = 1 if len(names) <= 8 else 2 if len(names) <= 16 else 4
    dtype = {1: np.uint8, 2: np.dtype("<u2"), 4: np.dtype("<u4")}[unitsize]
    init, cs, cw = change_list(initial, edges, total_samples)
    meta = [f"# {line}" for line in comment] + [
        "[global]",
        "sigrok version=0.5.2",
        "",
        "[device 1]",
        "capturefile=logic-1",
        f"total probes={len(names)}",
        f"samplerate={samplerate_string(samplerate)}",
        "total analog=0",
    ]
    meta += [f"probe{i + 1}={n}" for i, n in enumerate(names)] + [f"unitsize={unitsize}", ""]
    per = chunk_bytes // unitsize
    const_cache: dict[tuple[int, int], tuple[bytes, int]] = {}
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    entries = 0
    with open(tmp, "wb") as f:
        z = _Zip(f)
        z.add_bytes("version", b"2")
        z.add_bytes("metadata", "\n".join(meta).encode())
        for k, a in enumerate(range(0, total_samples, per)):
            b = min(a + per, total_samples)
            lo, hi = np.searchsorted(cs, [a, b])
            cur = int(cw[lo - 1]) if lo else init
            if lo == hi:
                key = (cur, b - a)
                if key not in const_cache:
                    data = np.full(b - a, cur, dtype).tobytes()
                    c = zlib.compressobj(6, zlib.DEFLATED, -15)
                    const_cache[key] = (c.compress(data) + c.flush(), zlib.crc32(data))
                payload, crc = const_cache[key]
                z.add(f"logic-1-{k + 1}", payload, crc, (b - a) * unitsize)
            else:
                pos = np.concatenate([[a], cs[lo:hi], [b]]) - a
                vals = np.concatenate([[cur], cw[lo:hi]]).astype(dtype)
                data = np.repeat(vals, np.diff(pos)).tobytes()
                z.add_bytes(f"logic-1-{k + 1}", data)
            entries += 1
        z.close()
    os.replace(tmp, path)
    return {"samples": total_samples, "unitsize": unitsize, "entries": entries, "changes": int(len(cs))}
