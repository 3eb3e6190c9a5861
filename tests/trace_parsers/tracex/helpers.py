"""Test helpers: a TraceX buffer builder (synthetic variants) and a parser for TraceX raw dumps."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from trace_parsers.tracex import format as fmt

CORPUS_FILES = ("tracex-sample_demo_threadx.trx", "tracex-sample_demo_filex.trx",
                "tracex-sample_demo_netx_tcp.trx")


def dump_path(trx: Path) -> Path:
    return trx.parent / "reference_dumps" / (trx.stem + ".tracex6.2.1.0-dump.txt")


def build_trx(slot_words: np.ndarray, *, objects: list[tuple] = (), reg_slots: int = 8,
              name_size: int = 32, n_slots: int | None = None, cur: int | None = None,
              mask: int = 0xFFFFFFFF, base: int = 0x20000000, byteorder: str = "<",
              reserved: tuple[int, int, int] = fmt.RESERVED, trailing: int = 16) -> bytes:
    """A ``tx_trace_enable`` buffer image.

    ``slot_words``: (k, 8) uint32 events written into slots 0..k-1 (slot order); ``objects``:
    ``(type, address, name, param_1, param_2[, reserved1, reserved2, available])`` registry rows;
    ``cur``: slot of ``buffer_current_pointer`` (default: k, i.e. not wrapped).
    """
    slot_words = np.asarray(slot_words, dtype=np.uint32).reshape(-1, 8)
    k = slot_words.shape[0]
    n_slots = max(k + 1, 4) if n_slots is None else n_slots
    cur = k % n_slots if cur is None else cur
    esize = 16 + name_size
    reg_start = base + 48
    reg_end = reg_start + reg_slots * esize
    buf_start = reg_end
    buf_end = buf_start + n_slots * 32
    hdr = np.zeros(1, fmt.header_dtype(byteorder))
    vals = dict(id=fmt.TX_TRACE_VALID, timer_valid_mask=mask, trace_base_address=base,
                registry_start_pointer=reg_start, reserved1=0, object_name_size=name_size,
                registry_end_pointer=reg_end, buffer_start_pointer=buf_start, buffer_end_pointer=buf_end,
                buffer_current_pointer=buf_start + cur * 32, reserved2=reserved[0], reserved3=reserved[1],
                reserved4=reserved[2])
    for key, v in vals.items():
        hdr[key] = v
    reg = np.zeros(reg_slots, fmt.registry_dtype(byteorder, name_size))
    for i, o in enumerate(objects):
        t, addr, name, p1, p2, *rest = o
        r1, r2, avail = (list(rest) + [0, 0, 0])[:3]
        reg[i]["type"], reg[i]["thread_pointer"], reg[i]["param_1"], reg[i]["param_2"] = t, addr, p1, p2
        reg[i]["reserved1"], reg[i]["reserved2"], reg[i]["available"] = r1, r2, avail
        reg[i]["name"] = name.encode()[:name_size - 1]
    ev = np.zeros((n_slots, 8), dtype=byteorder + "u4")
    ev[:k] = slot_words
    return hdr.tobytes() + reg.tobytes() + ev.tobytes() + b"\0" * trailing


def swap_endianness(data: bytes, name_size: int = 32) -> bytes:
    """Byte-swap a LE buffer image into the BE image a big-endian target would have written."""
    b = bytearray(data)
    n = len(b)

    def swap32(off: int, count: int) -> None:
        a = np.frombuffer(bytes(b[off:off + 4 * count]), dtype="<u4").astype(">u4")
        b[off:off + 4 * count] = a.tobytes()

    swap32(0, 4)
    b[16:18], b[18:20] = b[16:18][::-1], b[18:20][::-1]
    swap32(20, 7)
    h = np.frombuffer(data[:48], fmt.header_dtype("<"))[0]
    base = int(h["trace_base_address"])
    esize = 16 + name_size
    off = int(h["registry_start_pointer"]) - base
    for _ in range((int(h["registry_end_pointer"]) - int(h["registry_start_pointer"])) // esize):
        swap32(off + 4, 3)
        off += esize
    off = int(h["buffer_start_pointer"]) - base
    m = min((int(h["buffer_end_pointer"]) - int(h["buffer_start_pointer"])) // 32, (n - off) // 32)
    swap32(off, m * 8)
    return bytes(b)


_ROW = re.compile(
    r"^\s*(\d+)\s+(\d{20})\s+(.+?)\s+\(\s*(\d+)\)\s+(.*?)\s+I1: ([0-9A-F]{8})\s+I2: ([0-9A-F]{8})\s+"
    r"I3: ([0-9A-F]{8})\s+I4: ([0-9A-F]{8})\s+([0-9A-F]{8})\s+(\d+)-(\d+)\s+([0-9A-F]{8})\s+"
    r"([0-9A-F]{8})\s*$")
_CTX = re.compile(r"\(([0-9A-F]{8})\)|Initialization|Interrupt|Idle System|Idle")
_SPECIAL = {"Initialization": 0xF0F0F0F0, "Interrupt": 0xFFFFFFFF, "Idle System": 0, "Idle": 0}


def parse_dump(path: Path) -> dict:
    """The parts of a TraceX 6.2.1.0 raw trace dump the tests compare."""
    text = path.read_text(errors="replace")
    stats = {}
    for key, rx in (("context_switches", r"Context Switches:\s+(\d+)"),
                    ("thread_preemptions", r"Thread Preemptions:\s+(\d+)"),
                    ("time_slices", r"Time Slices:\s+(\d+)"),
                    ("thread_suspensions", r"Thread Suspensions:\s+(\d+)"),
                    ("thread_resumptions", r"Thread Resumptions:\s+(\d+)"),
                    ("interrupts", r"\nInterrupts:\s+(\d+)"),
                    ("nested_interrupts", r"Nested Interrupts:\s+(\d+)"),
                    ("total_events", r"Total Events:\s+(\d+)"),
                    ("max_relative_ticks", r"Max Relative Ticks:\s+(\d+)")):
        stats[key] = int(re.search(rx, text).group(1))
    m = re.search(r"Priority Inversions: (\d+)/(\d+)", text)
    stats["priority_inversions"], stats["bad_priority_inversions"] = int(m.group(1)), int(m.group(2))
    exec_part = text.split("Thread Execution", 1)[1].split("Thread Stack Usage", 1)[0]
    execution = {m.group(2).strip(): int(m.group(1))
                 for m in re.finditer(r"^\s*(\d{20})\s+\S+\s+(.+?)\s*$", exec_part, re.M)}
    thr_part = text.split("Threads in this Trace", 1)[1].split("Objects in Trace", 1)[0]
    threads = [(int(m.group(1), 16), int(m.group(2)), m.group(3).strip())
               for m in re.finditer(r"^\s+([0-9A-F]{8})\s+[0-9A-F]{8}-[0-9A-F]{8}\s+(\d+)\s+(.+?) \(Priority",
                                    thr_part, re.M)]
    pop_part = text.split("Popular Services", 1)[1].split("Trace Events", 1)[0]
    popular = [(int(m.group(1)), int(m.group(2)))
               for m in re.finditer(r"\(\s*(\d+)\)\s+(\d+)\s*$", pop_part, re.M)]
    rows = []
    for line in text.split("Trace Events", 1)[1].splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        ctxs = _CTX.findall(m.group(5))
        full = [mm.group(0) for mm in _CTX.finditer(m.group(5))]
        vals = [int(c, 16) if c else _SPECIAL[f] for c, f in zip(ctxs, full)]
        rows.append((int(m.group(1)), int(m.group(2)), int(m.group(4)), vals[0], vals[-1],
                     *(int(m.group(i), 16) for i in (6, 7, 8, 9, 10)), int(m.group(11)), int(m.group(12)),
                     int(m.group(13), 16), int(m.group(14), 16)))
    cols = ("index", "relative", "event_id", "context", "next_context", "info1", "info2", "info3", "info4",
            "time_stamp", "pi", "bad_pi", "raw_event", "raw_priority")
    events = {c: np.array([r[i] for r in rows], dtype=np.int64) for i, c in enumerate(cols)}
    return {"stats": stats, "execution": execution, "threads": threads, "popular": popular, "events": events}
