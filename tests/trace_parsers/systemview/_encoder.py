"""A small test-only SystemView encoder (target-side rules of SEGGER_SYSVIEW.c, systemview.md §3).

``Encoder`` writes packets exactly as ``_SendPacket`` does: ids < 24 without a length, ids >= 24 as
``id varint, len varint, payload``, every packet followed by the timestamp delta varint. Used for
round-trip tests and the benchmark's synthetic streams.
"""

from __future__ import annotations

HEADER_OPENOCD = (b";\n; Version     SEGGER SystemViewer V3.58\n; Author      crosstrace tests\n;\n")


def varint(v: int) -> bytes:
    v &= 0xFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def string(s: bytes, *, hilo: bool = False, always_long: bool = False) -> bytes:
    n = len(s)
    if always_long or n >= 255:
        if hilo:
            return bytes([0xFF, (n >> 8) & 0xFF, n & 0xFF]) + s
        return bytes([0xFF, n & 0xFF, (n >> 8) & 0xFF]) + s
    return bytes([n]) + s


class Encoder:
    """Accumulate packets; ``ts`` is the absolute tick of each packet (deltas are computed)."""

    def __init__(self, *, hilo_strings: bool = False, esp_core_bit: bool = False) -> None:
        self.buf = bytearray(b"\x00" * 10)
        self.last = 0
        self.hilo = hilo_strings
        self.esp = esp_core_bit

    def sync(self) -> None:
        self.buf += b"\x00" * 10

    def _id(self, evt_id: int, core: int) -> bytes:
        b = bytearray(varint(evt_id))
        if self.esp and core:
            b[-1] |= 0x40
        return bytes(b)

    def _delta(self, ts: int) -> bytes:
        d = (ts - self.last) & 0xFFFFFFFF
        self.last = ts
        return varint(d)

    def fixed(self, evt_id: int, ts: int, *vals: int, s: bytes | None = None, core: int = 0) -> int:
        """A packet with id < 24; returns its offset."""
        off = len(self.buf)
        self.buf += self._id(evt_id, core)
        for v in vals:
            self.buf += varint(v)
        if s is not None:
            self.buf += string(s, hilo=self.hilo)
        self.buf += self._delta(ts)
        return off

    def long(self, evt_id: int, ts: int, payload: bytes, core: int = 0) -> int:
        off = len(self.buf)
        self.buf += self._id(evt_id, core) + varint(len(payload)) + payload + self._delta(ts)
        return off

    def vals(self, *vals: int) -> bytes:
        return b"".join(varint(v) for v in vals)

    # conveniences -------------------------------------------------------------------------
    def init(self, ts: int, sys_freq: int, cpu_freq: int, ram_base: int, shift: int) -> int:
        return self.long(24, ts, self.vals(sys_freq, cpu_freq, ram_base, shift))

    def sysdesc(self, ts: int, text: str) -> int:
        return self.fixed(14, ts, s=text.encode())

    def task_info(self, ts: int, shrunk: int, prio: int, name: str) -> int:
        return self.fixed(9, ts, shrunk, prio, s=name.encode())

    def mark(self, ts: int, marker: int, value: int | None = None, core: int = 0) -> int:
        p = self.vals(0, marker) + (self.vals(value) if value is not None else b"")
        return self.long(31, ts, p, core=core)

    def name_marker(self, ts: int, marker: int, name: str) -> int:
        return self.long(31, ts, self.vals(1, marker) + string(name.encode(), hilo=self.hilo))

    def print_formatted(self, ts: int, text: str, level: int = 0) -> int:
        return self.long(26, ts, string(text.encode(), hilo=self.hilo) + self.vals(level, 0))

    def bytes(self, header: bytes = b"") -> bytes:
        return header + bytes(self.buf)
