"""Seed inputs for the reader fuzzer: small synthetic files of every format, plus real recordings.

Synthetic seeds are built here (no test or third-party code), so the fuzzer runs on a fresh
checkout; recordings come from ``captures/`` and, when present, the shared corpus next to the
repository (``../shared/corpus``).  Only files up to ``max_bytes`` are used: a mutation of a large
file costs as much as reading it.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np

FORMATS = ("systemview", "tracex", "sigrok", "dsl", "vcd", "saleae_csv", "saleae_binary")

_SUFFIX = {".svdat": "systemview", ".trx": "tracex", ".sr": "sigrok", ".dsl": "dsl", ".vcd": "vcd",
           ".csv": "saleae_csv", ".bin": "saleae_binary", ".hex": "tracex"}


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def systemview_seed(multicore: bool = False) -> bytes:
    """A short stream: sync, TRACE_START, INIT, SYSDESC, TASK_INFO, task/ISR events, TRACE_STOP."""
    def pkt(i: int, delta: int, *vals: int, s: bytes | None = None) -> bytes:
        body = b"".join(_varint(v) for v in vals) + (bytes([len(s)]) + s if s is not None else b"")
        return bytes([i]) + body + _varint(delta)

    def long(i: int, delta: int, payload: bytes) -> bytes:
        return _varint(i) + _varint(len(payload)) + payload + _varint(delta)

    init = b"".join(_varint(v) for v in (1_000_000, 168_000_000, 0x20000000, 2))
    body = (b"\0" * 10 + pkt(10, 5) + long(24, 1, init) + pkt(14, 1, s=b"N=app,O=FreeRTOS")
            + pkt(9, 1, 0x40, 3, s=b"worker") + pkt(4, 10, 0x40) + pkt(2, 3, 15) + pkt(3, 4)
            + pkt(6, 2, 0x40) + pkt(7, 1, 0x40, 1) + pkt(5, 7) + pkt(17, 2) + pkt(15, 1, 7)
            + pkt(16, 1, 7) + long(40, 2, b"\x05\x06") + pkt(11, 3))
    if not multicore:
        return b";\n; Version     SEGGER SystemViewer V3.50\n;\n" + body
    hdr = f";\n; Version     SEGGER SystemViewer V3.60\n; Offset Core0 0\n; Offset Core1 {len(body)}\n;\n"
    return hdr.encode() + body + body


def tracex_seed(wrapped: bool = True) -> bytes:
    """A 16-slot buffer, 12 events, 16-bit timer; wrapped at slot 5 when ``wrapped``."""
    from trace_parsers.tracex import format as fmt

    base, name_size, reg_slots, n = 0x20000000, 32, 4, 16
    reg_start = base + 48
    buf = reg_start + reg_slots * (16 + name_size)
    cur = 5 if wrapped else 12
    hdr = np.zeros(1, fmt.header_dtype("<"))
    for k, v in dict(id=fmt.TX_TRACE_VALID, timer_valid_mask=0xFFFF, trace_base_address=base,
                     registry_start_pointer=reg_start, object_name_size=name_size,
                     registry_end_pointer=buf, buffer_start_pointer=buf, buffer_end_pointer=buf + n * 32,
                     buffer_current_pointer=buf + cur * 32, reserved2=fmt.RESERVED[0],
                     reserved3=fmt.RESERVED[1], reserved4=fmt.RESERVED[2]).items():
        hdr[k] = v
    reg = np.zeros(reg_slots, fmt.registry_dtype("<", name_size))
    reg[0]["type"], reg[0]["thread_pointer"], reg[0]["name"] = 1, 0x20001000, b"main"
    reg[1]["type"], reg[1]["thread_pointer"], reg[1]["name"] = 1, 0x20002000, b"idle"
    ev = np.zeros((n, 8), "<u4")
    k = n if wrapped else 12
    for i in range(k):
        ev[i] = (0x20001000 if i % 2 else 0x20002000, 5, 1 + (i % 40), (i * 9000) & 0xFFFF,
                 0x20001000, i, 0, 0)
    return hdr.tobytes() + reg.tobytes() + ev.tobytes() + b"\0" * 16


def sigrok_seed(version: int = 2) -> bytes:
    samples = bytes([0, 1, 3, 2, 2, 0, 1, 1] * 40)
    meta = ("[global]\nsigrok version=0.5.2\n[device 1]\ncapturefile=logic-1\ntotal probes=3\n"
            "samplerate=1 MHz\ntotal analog=0\nprobe1=D0\nprobe2=D1\nprobe3=D2\nunitsize=1\n")
    if version == 1:  # v1 writes the metadata after the logic data
        return _zip([("version", b"1"), ("logic-1", samples), ("metadata", meta.encode())])
    return _zip([("version", b"2"), ("metadata", meta.encode()), ("logic-1-1", samples[:160]),
                 ("logic-1-2", samples[160:])])


def dsl_seed() -> bytes:
    hdr = ("[version]\nversion = 2\n[header]\ndriver = DSLogic\ndevice mode = 0\ntotal samples = 100\n"
           "total probes = 2\ntotal blocks = 1\nsamplerate = 1 MHz\ntrigger time = 0\ntrigger pos = 0\n"
           "probe0 = clk\nprobe1 = d\n")
    return _zip([("header", hdr.encode()), ("L-0/0", b"\x55" * 13), ("L-1/0", b"\x0f\xf0" * 7)])


def vcd_seed() -> bytes:
    head = ("$date today $end\n$version fuzz $end\n$timescale 1 us $end\n$scope module top $end\n"
            "$var wire 1 ! clk $end\n$var wire 1 \" d $end\n$var wire 4 # bus $end\n$upscope $end\n"
            "$enddefinitions $end\n$dumpvars\n0!\n1\"\nb0000 #\n$end\n")
    body = "".join(f"#{10 * i}\n{i % 2}!\n" + ("x\"\n" if i == 7 else "") for i in range(1, 30))
    return (head + body + "#400\n").encode()


def saleae_csv_seed(iso: bool = False) -> bytes:
    rows = ["Time [s],Channel 0,Channel 1"]
    for i in range(20):
        t = (f"2026-01-30T14:06:09.{i:09d}+00:00" if iso else f"{i * 0.000125 - 0.001:.9f}")
        rows.append(f"{t},{i % 2},{(i // 3) % 2}")
    rows.append(rows[-1])
    return ("\n".join(rows) + "\n").encode()


def saleae_binary_seed(version: int = 1) -> bytes:
    t = np.arange(1, 11) * 0.001
    if version == 0:
        return b"<SALEAE>" + struct.pack("<iiIddQ", 0, 0, 1, 0.0, 0.02, len(t)) + t.astype("<f8").tobytes()
    c0 = struct.pack("<IdddQ", 0, 1e6, 0.0, 0.011, len(t)) + t.astype("<f8").tobytes()
    c1 = struct.pack("<IdddQ", 1, 1e6, 0.02, 0.03, 2) + np.array([0.021, 0.022]).astype("<f8").tobytes()
    return b"<SALEAE>" + struct.pack("<iiQ", 1, 0, 2) + c0 + c1


def synthetic() -> dict[str, list[bytes]]:
    from trace_parsers.tracex import hexfmt

    trx = tracex_seed()
    return {
        "systemview": [systemview_seed(), systemview_seed(multicore=True)],
        "tracex": [trx, tracex_seed(wrapped=False), hexfmt.to_ihex(trx), hexfmt.to_srec(trx)],
        "sigrok": [sigrok_seed(2), sigrok_seed(1)],
        "dsl": [dsl_seed()],
        "vcd": [vcd_seed()],
        "saleae_csv": [saleae_csv_seed(), saleae_csv_seed(iso=True), b"\xef\xbb\xbf" + saleae_csv_seed()],
        "saleae_binary": [saleae_binary_seed(1), saleae_binary_seed(0)],
    }


def from_files(dirs: list[Path], max_bytes: int, max_inflated: int = 8 << 20) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {f: [] for f in FORMATS}
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.rglob("*")):
            fmt = _SUFFIX.get(p.suffix.lower())
            if fmt and p.is_file() and 0 < p.stat().st_size <= max_bytes:
                data = p.read_bytes()
                if _inflated(data) <= max_inflated:
                    out[fmt].append(data)
    return out


def _inflated(data: bytes) -> int:
    """Total member size of a zip (0 for other content): reading costs O(inflated size)."""
    if data[:4] != b"PK\x03\x04":
        return 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, ValueError):
        return 1 << 62


def all_seeds(root: Path, max_bytes: int = 256 << 10, corpus: bool = True) -> dict[str, list[bytes]]:
    """Synthetic seeds + recordings under ``captures/`` and ``../shared/corpus`` (when ``corpus``)."""
    seeds = synthetic()
    dirs = [root / "captures"] + ([root.parent / "shared" / "corpus"] if corpus else [])
    for fmt, files in from_files(dirs, max_bytes).items():
        seeds[fmt].extend(files)
    return seeds
