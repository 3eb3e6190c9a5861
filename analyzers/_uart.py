"""UART (8N1, LSB first, idle high) decoded from the edges of one logic channel.

Works on edge times in ns, so it needs no samples: each byte starts at a falling edge; bit *k*
is the line level at ``start + (k + 0.5) * bit_ns``.

>>> import numpy as np
>>> bit = 1e9 / 115200
>>> # 'A' = 0x41: start 0, bits 1,0,0,0,0,0,1,0, stop 1
>>> levels = [0, 1, 0, 1, 0, 1]
>>> times = np.array([0, 1, 2, 7, 8, 9]) * bit
>>> decode_edges(times.astype(np.int64), np.array(levels), 1, 115200)[0]
b'A'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np


def decode_edges(
    ts: np.ndarray, level_after: np.ndarray, initial_level: int, baud: int, data_bits: int = 8
) -> tuple[bytes, np.ndarray, int]:
    """Decode UART bytes; returns ``(data, start_ts per byte, framing_errors)``."""
    ts = np.asarray(ts, dtype=np.int64)
    lv = np.asarray(level_after, dtype=np.int64)
    bit = 1e9 / baud
    if ts.size == 0:
        return b"", np.zeros(0, np.int64), 0
    t0 = ts[_chain(ts, lv, bit, data_bits)].astype(np.float64)
    # line level in the middle of every data bit and of the stop bit
    at = t0[:, None] + (np.arange(data_bits + 1) + 1.5)[None, :] * bit
    i = np.searchsorted(ts, at, side="right") - 1
    level = np.where(i < 0, int(initial_level), lv[np.maximum(i, 0)]) != 0
    byte = (level[:, :data_bits].astype(np.int64) << np.arange(data_bits)).sum(axis=1)
    errors = int(np.count_nonzero(~level[:, data_bits]))
    return bytes(bytearray(byte.tolist())), t0.astype(np.int64), errors


def _chain(ts: np.ndarray, lv: np.ndarray, bit: float, data_bits: int) -> np.ndarray:
    """Indices (into ``ts``) of the falling edges :func:`decode_edges` starts a byte at: a byte
    starts at a falling edge, the next one at the first falling edge after the middle of its stop
    bit; the chain is followed from the first falling edge."""
    falls = np.flatnonzero(lv == 0)
    t_falls = ts[falls].astype(np.float64)
    nxt = np.searchsorted(t_falls, t_falls + (data_bits + 1.5) * bit, side="right").tolist()
    chain: list[int] = []
    k = 0
    while k < len(nxt):
        chain.append(k)
        k = nxt[k]
    return falls[np.asarray(chain, dtype=np.int64)]


def decode_edge_blocks(
    blocks: Iterable[tuple[np.ndarray, np.ndarray]], initial_level: int, baud: int, data_bits: int = 8
) -> tuple[bytes, np.ndarray, int]:
    """:func:`decode_edges` of the edges ``blocks`` yields (``(ts, level_after)``, in order), a
    block at a time: the same result, with only a block (and the bytes not yet decodable) in
    memory. A byte is decoded once an edge later than its stop bit's middle has been seen (its
    samples, and where the next byte starts, cannot change); the edges from the first byte not
    decodable yet on are carried to the next block (so a carry always starts at a byte). A piece
    cut at a byte start decodes alone as it does within the whole (every sample of the bytes
    before the cut lies before it).

    >>> bit = 1e9 / 115200
    >>> ts = (np.array([0, 1, 2, 7, 8, 9, 20, 21, 22, 27, 28, 29]) * bit).astype(np.int64)
    >>> lv = np.array([0, 1, 0, 1, 0, 1] * 2)
    >>> decode_edge_blocks([(ts[i:i + 5], lv[i:i + 5]) for i in range(0, 12, 5)], 1, 115200)[0]
    b'AA'
    """
    bit = 1e9 / baud
    span = (data_bits + 1.5) * bit
    data: list[bytes] = []
    starts: list[np.ndarray] = []
    errors = 0
    c_ts, c_lv = np.zeros(0, np.int64), np.zeros(0, np.int64)
    level = int(initial_level)  #: the line level before the carried edges
    for ts, lv, final in _with_end(blocks):
        c_ts = np.concatenate([c_ts, np.asarray(ts, dtype=np.int64)])
        c_lv = np.concatenate([c_lv, np.asarray(lv, dtype=np.int64)])
        if not c_ts.size:
            continue
        chain = _chain(c_ts, c_lv, bit, data_bits)
        j = chain.size if final else int(np.searchsorted(c_ts[chain] + span, c_ts[-1], side="left"))
        if not j:
            continue
        cut = int(chain[j]) if j < chain.size else c_ts.size
        d, s, e = decode_edges(c_ts[:cut], c_lv[:cut], level, baud, data_bits)
        data.append(d)
        starts.append(s)
        errors += e
        level = int(c_lv[cut - 1])
        c_ts, c_lv = c_ts[cut:], c_lv[cut:]
    return b"".join(data), (np.concatenate(starts) if starts else np.zeros(0, np.int64)), errors


def _with_end(blocks: Iterable[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[Any, Any, bool]]:
    """The blocks, each with whether it is the last (an empty last block when there are none)."""
    prev = None
    for b in blocks:
        if prev is not None:
            yield prev[0], prev[1], False
        prev = b
    if prev is None:
        prev = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    yield prev[0], prev[1], True
