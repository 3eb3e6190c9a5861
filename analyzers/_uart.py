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
    falls = np.flatnonzero(lv == 0)
    t_falls = ts[falls]
    # a byte starts at a falling edge; the next one at the first falling edge after the middle
    # of its stop bit: follow that chain from the first falling edge
    t0 = t_falls.astype(np.float64)
    nxt = np.searchsorted(t_falls, t0 + (data_bits + 1.5) * bit, side="right").tolist()
    chain: list[int] = []
    k = 0
    while k < len(nxt):
        chain.append(k)
        k = nxt[k]
    t0 = t0[np.asarray(chain, dtype=np.int64)]
    # line level in the middle of every data bit and of the stop bit
    at = t0[:, None] + (np.arange(data_bits + 1) + 1.5)[None, :] * bit
    i = np.searchsorted(ts, at, side="right") - 1
    level = np.where(i < 0, int(initial_level), lv[np.maximum(i, 0)]) != 0
    byte = (level[:, :data_bits].astype(np.int64) << np.arange(data_bits)).sum(axis=1)
    errors = int(np.count_nonzero(~level[:, data_bits]))
    return bytes(bytearray(byte.tolist())), t0.astype(np.int64), errors
