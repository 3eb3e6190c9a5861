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
    out = bytearray()
    starts: list[int] = []
    errors = 0
    if ts.size == 0:
        return b"", np.zeros(0, np.int64), 0

    def level_at(t: float) -> int:
        i = int(np.searchsorted(ts, t, side="right")) - 1
        return int(initial_level) if i < 0 else int(lv[i])

    falls = np.flatnonzero(lv == 0)
    k = 0
    while k < falls.size:
        t0 = float(ts[falls[k]])
        byte = 0
        for b in range(data_bits):
            if level_at(t0 + (b + 1.5) * bit):
                byte |= 1 << b
        if not level_at(t0 + (data_bits + 1.5) * bit):
            errors += 1
        out.append(byte)
        starts.append(int(t0))
        t_next = t0 + (data_bits + 1.5) * bit  # the middle of the stop bit
        k = int(np.searchsorted(ts[falls], t_next, side="right"))
    return bytes(out), np.asarray(starts, dtype=np.int64), errors
