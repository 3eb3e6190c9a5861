"""Read the plugin's binary edge log and rebuild pin levels and the UART TX waveform (exact, 1 ns).

Edge log (little-endian): 32-byte header ``b"CTVLA\\x01\\r\\n"``, u32 version (1), u32 record size (32),
u32 GPIO window base, u32 size, u32 UART window base, u32 size; then 32-byte records
``u64 vt_ns, u64 icount, u32 addr, u32 value, u8 size, u8 window (0 GPIO, 1 UART), u8 flags, 5 pad``.
GPIO (STM32 layout): ODR at +0x14 (direct write, byte/halfword writes merge), BSRR at +0x18 (low half
sets, high half resets, set wins). UART: a store to DR (+0x04) queues one 8N1 frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MAGIC = b"CTVLA\x01\r\n"
HEADER = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("recsize", "<u4"),
        ("gpio_base", "<u4"),
        ("gpio_size", "<u4"),
        ("uart_base", "<u4"),
        ("uart_size", "<u4"),
    ]
)
RECORD = np.dtype(
    [
        ("vt_ns", "<u8"),
        ("icount", "<u8"),
        ("addr", "<u4"),
        ("value", "<u4"),
        ("size", "u1"),
        ("window", "u1"),
        ("flags", "u1"),
        ("pad", "V5"),
    ]
)
ODR, BSRR, USART_DR, USART_BRR = 0x14, 0x18, 0x04, 0x08


class EdgeLogError(ValueError):
    """The edge log is not a crosstrace VLA log or is damaged (message names file and offset)."""


@dataclass
class EdgeLog:
    path: Path
    gpio_base: int
    uart_base: int
    records: np.ndarray  # RECORD dtype
    truncated_bytes: int = 0


@dataclass
class Channel:
    """One logic channel: level before the first edge, and edge times in ns (each edge toggles)."""

    name: str
    initial: int
    edges_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def read_edge_log(path: str | Path) -> EdgeLog:
    """Open the log; records are memory-mapped (a long run's log is not read into RAM at once)."""
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read(HEADER.itemsize)
    size = path.stat().st_size
    if len(raw) < HEADER.itemsize:
        raise EdgeLogError(
            f"{path}:0x0: expected a {HEADER.itemsize}-byte VLA header, file has {len(raw)} bytes"
        )
    hdr = np.frombuffer(raw, HEADER, count=1)[0]
    if raw[:8] != MAGIC:
        raise EdgeLogError(f"{path}:0x0: expected magic {MAGIC!r}, found {raw[:8]!r}")
    if int(hdr["version"]) != 1 or int(hdr["recsize"]) != RECORD.itemsize:
        raise EdgeLogError(
            f"{path}:0x8: expected version 1 with {RECORD.itemsize}-byte records, found "
            f"version {int(hdr['version'])} with {int(hdr['recsize'])}-byte records"
        )
    n, rest = divmod(size - HEADER.itemsize, RECORD.itemsize)
    recs = np.memmap(path, RECORD, "r", offset=HEADER.itemsize, shape=(n,)) if n else np.zeros(0, RECORD)
    if n and np.any(np.diff(recs["vt_ns"].astype(np.int64)) < 0):
        bad = int(np.flatnonzero(np.diff(recs["vt_ns"].astype(np.int64)) < 0)[0]) + 1
        raise EdgeLogError(
            f"{path}:{HEADER.itemsize + bad * RECORD.itemsize:#x}: expected non-decreasing virtual time"
        )
    return EdgeLog(path, int(hdr["gpio_base"]), int(hdr["uart_base"]), recs, rest)


def gpio_levels(log: EdgeLog) -> tuple[dict[int, np.ndarray], int]:
    """Per GPIO pin (0..15) the times (ns) at which its level changed; plus the count of unreadable stores.

    Every pin starts low (ODR reset value 0). Stores that leave a level unchanged produce no edge."""
    r = log.records[log.records["window"] == 0]
    unknown = int(np.count_nonzero(r["flags"] & 1))
    r = r[(r["flags"] & 1) == 0]
    off = r["addr"].astype(np.int64) - log.gpio_base
    value = r["value"].astype(np.int64)
    size = r["size"].astype(np.int64)
    is_odr = (off >= ODR) & (off < ODR + 4)
    is_bsrr = (off >= BSRR) & (off < BSRR + 4)
    shift = 8 * np.where(is_odr, off - ODR, off - BSRR)
    word = (value << np.clip(shift, 0, 24)) & 0xFFFFFFFF
    odr_mask = np.where(is_odr, (((1 << (8 * size)) - 1) << np.clip(shift, 0, 24)) & 0xFFFF, 0)
    sets = np.where(is_bsrr, word & 0xFFFF, 0)
    resets = np.where(is_bsrr, word >> 16, 0)
    vt = r["vt_ns"].astype(np.int64)
    out: dict[int, np.ndarray] = {}
    for pin in range(16):
        b = 1 << pin
        s_ = (sets & b) != 0
        touch = s_ | ((resets & b) != 0) | ((odr_mask & b) != 0)
        if not touch.any():
            continue
        lvl = np.where(s_, 1, np.where(is_bsrr, 0, (word >> pin) & 1))[touch]
        change = np.diff(np.concatenate([[0], lvl])) != 0
        if change.any():
            out[pin] = vt[touch][change]
    return out, unknown


def uart_bytes(log: EdgeLog) -> tuple[np.ndarray, np.ndarray]:
    """(store times ns, byte values) of every write to the USART data register."""
    r = log.records[(log.records["window"] == 1) & (log.records["addr"] == log.uart_base + USART_DR)]
    return r["vt_ns"].astype(np.int64), (r["value"] & 0xFF).astype(np.uint8)


def uart_brr(log: EdgeLog) -> int | None:
    r = log.records[(log.records["window"] == 1) & (log.records["addr"] == log.uart_base + USART_BRR)]
    return int(r["value"][-1]) if len(r) else None


def uart_waveform(times_ns: np.ndarray, data: np.ndarray, baud: int) -> tuple[np.ndarray, int]:
    """Edge times (ns) of an 8N1 TX line, idle high, for bytes stored at ``times_ns``.

    The transmitter has an unbounded queue: a frame starts at its store time or when the previous frame's
    stop bit ends, whichever is later (QEMU's USART accepts bytes instantly). Bit boundaries are computed
    exactly on the rational bit period 1e9/baud and floored to whole ns. Returns (edges, end of the last
    frame in ns)."""
    # exact integer arithmetic in units of 1/baud ns: one bit lasts 1e9 units
    free = 0
    edges: list[int] = []
    level = 1
    for t, byte in zip(times_ns.tolist(), data.tolist()):
        start = max(t * baud, free)
        bits = (byte << 1) | 0x200  # start bit 0, 8 data bits LSB first, stop bit 1
        for k in range(10):
            b = (bits >> k) & 1
            if b != level:
                edges.append((start + k * 1_000_000_000) // baud)  # floor to whole ns
                level = b
        free = start + 10 * 1_000_000_000
    return np.asarray(edges, np.int64), -(-free // baud)
