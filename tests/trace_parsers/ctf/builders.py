"""Synthetic CTF streams for the three hand-written metadata files (tests/data/ctf/tsdl)."""

from __future__ import annotations

import struct

from .helpers import MAGIC, BitWriter, name20, thread, zephyr_event

WORKER, MAIN, IDLE, SEM, MUTEX = 0x20000100, 0x20000200, 0x20000400, 0x20000300, 0x20000500
UUID = bytes.fromhex("5a1e0f6c8d2b4c3e9f70a1b2c3d4e5f6")


def zephyr_old_stream() -> tuple[bytes, list[tuple[int, str]]]:
    """Zephyr-style headerless stream with one 32-bit timestamp wrap; returns (bytes, [(ts, name)])."""
    evs = [
        (1000, 0x13, "thread_create", thread(WORKER, "unknown")),
        (1100, 0x1A, "thread_name_set", thread(WORKER, "worker")),
        (2000, 0x10, "thread_switched_out", thread(MAIN, "main")),
        (2100, 0x11, "thread_switched_in", thread(WORKER, "worker")),
        (2200, 0x24, "semaphore_take_enter", struct.pack("<II", SEM, 100)),
        (2300, 0x25, "semaphore_take_blocking", struct.pack("<II", SEM, 100)),
        (2400, 0x18, "thread_pending", thread(WORKER, "worker")),
        (2500, 0x10, "thread_switched_out", thread(WORKER, "worker")),
        (2600, 0x11, "thread_switched_in", thread(IDLE, "idle")),
        (2700, 0x1E, "idle", b""),
        (0xFFFFFF00, 0x1B, "isr_enter", b""),
        (0xFFFFFF80, 0x17, "thread_ready", thread(WORKER, "worker")),
        (0x10, 0x1D, "isr_exit_to_scheduler", b""),
        (0x20, 0x10, "thread_switched_out", thread(IDLE, "idle")),
        (0x30, 0x11, "thread_switched_in", thread(WORKER, "worker")),
        (0x40, 0x26, "semaphore_take_exit", struct.pack("<IIi", SEM, 100, 0)),
        (0x50, 0x62, "named_event", name20("site") + struct.pack("<II", 7, 1)),
        (0x60, 0x12, "thread_priority_set", thread(WORKER, "worker") + struct.pack("<b", -3)),
        (0x70, 0x29, "mutex_lock_enter", struct.pack("<II", MUTEX, 0xFFFFFFFF)),
        (0x80, 0x2B, "mutex_lock_exit", struct.pack("<IIi", MUTEX, 0xFFFFFFFF, -11)),
    ]
    return b"".join(zephyr_event(t, i, p) for t, i, _, p in evs), [(t, n) for t, _, n, _ in evs]


def _percpu_event(ts: int, eid: int, payload: bytes = b"") -> bytes:
    return struct.pack("<QH", ts, eid) + payload


def percpu_packet(cpu: int, seq: int, discarded: int, events: list[tuple[int, int, bytes]],
                  size: int = 256) -> bytes:
    body = b"".join(_percpu_event(t, i, p) for t, i, p in events)
    head_len = 4 + 16 + 4 + 8 + 8 + 4 + 4 + 4 + 4 + 1
    content = head_len + len(body)
    assert content <= size
    begin, end = events[0][0] - 5, events[-1][0] + 5
    head = struct.pack("<I16sI", MAGIC, UUID, 0) + struct.pack(
        "<QQIIIIB", begin, end, content * 8, size * 8, discarded, seq, cpu)
    return (head + body).ljust(size, b"\0")


def percpu_streams() -> dict[str, bytes]:
    """Two CPUs, two packets each; CPU 1 reports 3 discarded events before its second packet."""
    sw_in = 0x11
    cpu0 = percpu_packet(0, 0, 0, [
        (1_000, sw_in, thread(WORKER, "worker")), (1_500, 0x22, struct.pack("<I", SEM)),
        (1_600, 0x23, struct.pack("<I", SEM)), (2_000, 0x1B, b""), (2_100, 0x1C, b"")]) + \
        percpu_packet(0, 1, 0, [
            (5_000, 0x162, name20("ct_site") + struct.pack("<II", 3, 9)),
            (5_100, 0x10, thread(WORKER, "worker"))])
    cpu1 = percpu_packet(1, 0, 0, [
        (1_200, sw_in, thread(MAIN, "main")), (1_300, 0x1B, b""), (1_400, 0x1C, b"")]) + \
        percpu_packet(1, 1, 3, [(6_000, 0x10, thread(MAIN, "main")), (6_100, sw_in, thread(IDLE, "idle")),
                                (6_200, 0x1E, b"")])
    return {"channel0_0": cpu0, "channel0_1": cpu1}


def _features_event(w: BitWriter, eid: int, ts: int, vtid: int, compact: bool) -> None:
    w.align(8)
    if compact:
        w.int(eid, 5).int(ts, 27)
    else:
        w.int(31, 5).int(eid, 32, align=8).int(ts, 64, align=8)
    w.int(vtid, 16, align=8)


def features_packet(events: list[tuple]) -> bytes:
    """Big-endian packet: header (magic, stream id), context (content/packet size), then events:
    ("mixed", ts, small, mid, vals, msg, x, e, a, b) compact, or ("far", ts, v) extended."""
    w = BitWriter("be")
    w.int(MAGIC, 32).int(0, 32).int(0, 64).int(0, 64)  # sizes patched below
    for ev in events:
        if ev[0] == "mixed":
            _, ts, small, mid, vals, msg, x, e, a, b = ev
            _features_event(w, 1, ts, -7, compact=True)
            w.align(64)  # the fields struct aligns as its most aligned member (the double)
            w.int(small, 3).int(mid, 13).int(len(vals), 8, align=8)
            for v in vals:
                w.int(v, 16, align=8)
            w.raw(msg.encode() + b"\0")
            w.int(struct.unpack(">Q", struct.pack(">d", x))[0], 64, align=64)
            w.int(e, 8, align=8)
            w.align(32).int(a, 8).int(b, 32, align=8)
        else:
            _, ts, v = ev
            _features_event(w, 300, ts, 12, compact=False)
            w.int(v, 32, align=8)
    data = bytearray(w.bytes())
    size = len(data) + 16  # 16 bytes of padding after the content
    struct.pack_into(">QQ", data, 8, len(data) * 8, size * 8)
    return bytes(data) + bytes(16)


def features_stream() -> bytes:
    p1 = features_packet([
        ("mixed", 1000, -3, 5000, [1, 2, 65535], "héllo", 2.5, 11, 0xAB, 0xDEADBEEF),
        ("far", (1 << 27) + 20, 42),
        ("mixed", 30, 3, 1, [], "", -0.0, 0, 0, 0),  # low 27 bits 30 < 20+...: no wrap (30 > 20)
        ("mixed", 10, 0, 0, [7], "x", 1e300, 5, 1, 2),  # 10 < 30: one 27-bit wrap
    ])
    p2 = features_packet([("far", 1 << 40, 7), ("mixed", 99, 1, 2, [3], "y", 0.1, 10, 3, 4)])
    return p1 + p2
