"""The whole read on hand-built streams: what holds for every reading (the model's invariants, the
running context through thousands of OVERFLOW segments, the first OVERFLOW row found block by
block), and the helpers the other SystemView tests share: seeded synthetic streams with every
packet id, NOP, OVERFLOW, deep ISR nesting, logs, markers, modules, several cores (ESP core bit,
3.60 offsets, per-core file pairs) and damage; ``outcome`` (a read, or its error) and
``differences`` (what differs between two outcomes).
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trace_parsers.model import EVENT_DTYPE, CtxType, EventKind, validate
from trace_parsers.systemview import fast, read_systemview

from ._encoder import HEADER_OPENOCD, Encoder

RAM = 0x20000000
HDR_ESP = b";\n; Version     SEGGER SystemViewer V2.42\n; Author      x\n; ESP_Extension\n;\n"


def outcome(paths: Any, **kw: Any) -> Any:
    """``read_systemview(paths, **kw)``, or ``("error", type, code, message)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return read_systemview(paths, **kw)
        except Exception as e:
            return ("error", type(e).__name__, getattr(e, "code", None), str(e))


def differences(a: Any, b: Any) -> list[str]:
    """What differs between two read outcomes (traces or error tuples); empty when identical."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return [] if a == b else [f"outcome {a!r:.200} != {b!r:.200}"]
    out = []
    if len(a) != len(b):
        return [f"events {len(a)} != {len(b)}"]
    for name in EVENT_DTYPE.names:  # each column as trace.columns gives it (no row table built)
        x, y = a.columns[name], b.columns[name]
        if x.dtype != y.dtype:
            out.append(f"column {name} dtype {x.dtype} != {y.dtype}")
        elif not np.array_equal(x, y):
            i = np.flatnonzero(x != y)[:3].tolist()
            out.append(f"column {name} rows {i}: {x[i].tolist()} != {y[i].tolist()}")
    for attr in ("meta", "tasks", "isrs", "markers", "channels", "diagnostics", "strings"):
        if getattr(a, attr) != getattr(b, attr):
            out.append(attr)
    return out


def _random_stream(rnd: random.Random, *, esp: bool = False, cores: int = 1,
                   n: int = 400, init: bool = True, shift: int = 2) -> bytes:
    enc = Encoder(esp_core_bit=esp)
    t = 5
    enc.fixed(10, t)
    if init:
        enc.init(t + 1, rnd.choice([1_000_000_000, 160_000_000, 7, 0]), 168_000_000, RAM, shift)
    enc.sysdesc(t + 2, rnd.choice(["N=app,D=STM32,O=FreeRTOS", "N=app,O=embOS", "N=x"]))
    enc.sysdesc(t + 3, "I#15=SysTick,I#16=TIM2,I#0x20=DMA")
    tasks = [0x100 + 0x10 * i for i in range(6)]
    for h in tasks[:3]:
        enc.task_info(t + 4, h, rnd.randint(0, 9), f"t{h:x}")
    enc.fixed(22, t + 5, 1, 600, s=b"mod")  # MODULEDESC: module ids from 600
    enc.name_marker(t + 6, 3, "site3")
    t += 10
    depth = 0
    for _ in range(n):
        t += rnd.choice([0, 1, 17, 300, 0xFFFF_FFFF])
        c = rnd.randrange(cores) if esp else 0
        r = rnd.random()
        h = rnd.choice(tasks)
        if r < 0.12 or (depth > 2 and r < 0.3) or (depth > 20 and r < 0.8):
            for _ in range(rnd.choice([1, 1, 1, 20])):
                enc.fixed(rnd.choice([3, 3, 18]), t, core=c)
                depth -= 1
        elif r < 0.25 or (0.9 < r < 0.93):  # runs of enters: nesting beyond 16 levels
            for _ in range(rnd.choice([1, 1, 1, 20])):
                enc.fixed(2, t, rnd.choice([15, 16, 32, 0xFFFF_FFF0]), core=c)
                depth += 1
        elif r < 0.33:
            enc.fixed(rnd.choice([4, 6, 8]), t, h, core=c)
        elif r < 0.35:
            enc.long(29, t, enc.vals(h), core=c)  # TASK_TERMINATE (ids >= 24 carry a length)
        elif r < 0.40:
            enc.fixed(7, t, h, rnd.randint(0, 5), core=c)
        elif r < 0.47:
            enc.fixed(rnd.choice([5, 17, 11, 10, 20, 0, 0]), t, core=c)
        elif r < 0.50:
            enc.fixed(1, t, rnd.randint(0, 99), core=c)  # OVERFLOW
            depth = 0
        elif r < 0.55:
            enc.fixed(rnd.choice([12, 15, 16, 19]), t, rnd.randint(0, 1 << 32 - 1), core=c)
        elif r < 0.58:
            enc.fixed(rnd.choice([13, 23]), t, rnd.randint(0, 1 << 31), rnd.randint(0, 9), core=c)
        elif r < 0.62:
            enc.mark(t, rnd.randint(0, 5), rnd.choice([None, 0, 1, 77]), core=c)
        elif r < 0.64:
            enc.print_formatted(t, f"msg {rnd.random():.3f}")
        elif r < 0.66:
            enc.name_marker(t, rnd.randint(0, 5), f"m{rnd.randint(0, 9)}")
        elif r < 0.70:
            enc.long(28, t, enc.vals(*[rnd.randint(32, 40), rnd.randint(0, 5)][:rnd.randint(0, 2)]), core=c)
        elif r < 0.75:
            enc.long(31, t, enc.vals(rnd.randint(2, 6), rnd.randint(0, 9), 1, 2), core=c)
        elif r < 0.92:
            evt = rnd.choice([32, 33, 35, 40, 100, 511, 600, 601, 1024, 5000, 30, 25, 27, 21, 9, 14])
            if evt == 21:
                enc.fixed(21, t, h, 0x1000, 256, 10, core=c)
            elif evt in (9, 14):
                enc.sysdesc(t, "I#17=EXTI") if evt == 14 else enc.task_info(t, h, 1, "late")
            else:
                vals = [rnd.randint(0, 1 << 20) for _ in range(rnd.randint(0, 4))]
                enc.long(evt, t, enc.vals(*vals) + (b"\x01s" if evt == 25 else b""), core=c)
        else:
            enc.fixed(9, t, rnd.choice(tasks[3:]), 2, s=b"named-late", core=c)
        depth = max(depth, 0)
    if rnd.random() < 0.7:
        enc.fixed(11, t + 1)
    return enc.bytes()


@pytest.mark.parametrize("seed", range(12))
def test_synthetic_streams_are_valid(seed: int, tmp_path: Path) -> None:
    """Seeded streams (raw, OpenOCD header, ESP core bit, 3.60 multi-core, a per-core pair,
    damaged) under every damage policy: the Trace passes the model's checks or the read raises a
    trace error; the undamaged stream reads."""
    rnd = random.Random(seed)
    shift = [2, 0, 40, 32][seed % 4]  # 40: out of range, reported and ignored
    plain = _random_stream(rnd, init=seed % 5 != 4, shift=shift)
    cases: list[Any] = []
    p = tmp_path / "raw.SVDat"
    p.write_bytes(plain)
    cases.append(p)
    q = tmp_path / "hdr.SVDat"
    q.write_bytes(HEADER_OPENOCD + plain)
    cases.append(q)
    e = tmp_path / "esp.SVDat"
    e.write_bytes(HDR_ESP + _random_stream(rnd, esp=True, cores=2))
    cases.append(e)
    s0, s1 = _random_stream(rnd), _random_stream(rnd, n=50)
    m = tmp_path / "mc.SVDat"
    m.write_bytes(b";\n; Version     SEGGER SystemViewer V3.60\n; Offset Core0 0\n; Offset Core1 "
                  + str(len(s0)).encode() + b"\n;\n" + s0 + s1)
    cases.append(m)
    a, b = tmp_path / "c0.svdat", tmp_path / "c1.svdat"
    a.write_bytes(HEADER_OPENOCD + s0)
    b.write_bytes(HEADER_OPENOCD + s1)
    cases.append([a, b])
    dmg = bytearray(plain)  # damage: flipped bytes, garbage, a cut inside a packet
    for _ in range(3):
        dmg[rnd.randrange(20, len(dmg))] = rnd.randrange(256)
    d = tmp_path / "dmg.SVDat"
    d.write_bytes(bytes(dmg[: rnd.randrange(len(dmg) // 2, len(dmg))]))
    cases.append(d)
    assert not isinstance(outcome(p), tuple)  # the undamaged stream reads
    for c in cases:
        for oc in ("raise", "warn", "skip"):
            got = outcome(c, on_corrupt=oc)
            if isinstance(got, tuple):
                assert got[1] in ("TraceCorruptError", "TraceFormatError"), got
            else:  # (a 7 Hz INIT rate and 2**32-tick steps wrap the ns conversion: unsorted ts)
                assert [m for m in validate(got) if m != "ts is not sorted"] == [], (c, oc)


def test_description_argument(tmp_path: Path) -> None:
    p = tmp_path / "d.SVDat"
    p.write_bytes(_random_stream(random.Random(99)))
    for desc in ("freertos_segger", "freertos_espidf"):
        tr = read_systemview(p, description=desc)
        assert len(tr) > 0 and tr.meta.extra["description"] and tr.meta.extra["api_names"]


def test_many_overflow_segments(tmp_path: Path) -> None:
    """~3,000 OVERFLOW packets in 200k events: the context tracking stays right (every
    ISR_ENTER row runs in its ISR)."""
    p = _big_stream(tmp_path, 200_000, overflow_every=20)
    ev = read_systemview(p).events
    enter = ev["kind"] == EventKind.ISR_ENTER
    assert int((ev["kind"] == EventKind.OVERFLOW).sum()) > 2_800
    assert (ev["ctx_type"][enter] == CtxType.ISR).all()


def _big_stream(tmp_path: Path, events: int, overflow_every: int) -> Path:
    rnd = random.Random(5)
    enc = Encoder()
    enc.fixed(10, 1)
    enc.init(2, 168_000_000, 168_000_000, RAM, 2)
    enc.sysdesc(3, "N=big,O=FreeRTOS")
    body_start = len(enc.buf)
    n = _body(enc, rnd, overflow_every)
    body = bytes(enc.buf[body_start:])
    p = tmp_path / "big.SVDat"
    p.write_bytes(bytes(enc.buf[:body_start]) + body * (events // n + 1))
    return p


def _body(enc: Encoder, rnd: random.Random, overflow_every: int) -> int:
    """About 2000 packets of every common kind; returns the count."""
    t = 10
    enc.fixed(1, t, 1)
    for i in range(2000):
        t += rnd.choice([1, 50, 400])
        r = rnd.random()
        h = rnd.choice([0x100, 0x140, 0x180])
        if overflow_every and i % overflow_every == 0:
            enc.fixed(1, t, rnd.randint(1, 9))
        elif r < 0.2:
            enc.fixed(2, t, rnd.choice([15, 16]))
        elif r < 0.4:
            enc.fixed(rnd.choice([3, 18]), t)
        elif r < 0.55:
            enc.fixed(rnd.choice([4, 6]), t, h)
        elif r < 0.6:
            enc.fixed(7, t, h, 3)
        elif r < 0.7:
            enc.fixed(rnd.choice([5, 17, 0]), t)
        elif r < 0.8:
            enc.mark(t, 1, rnd.randint(0, 1))
        elif r < 0.9:
            enc.long(rnd.choice([33, 35, 600, 1030]), t, enc.vals(rnd.randint(0, 99)))
        else:
            enc.long(28, t, enc.vals(35, 0))
    return 2001


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 16])
def test_first_row_by_blocks(block: int) -> None:
    """``first_row`` (the first OVERFLOW row for SV_OVERFLOW, found block by block) equals a
    whole-column search wherever the first match is: in the first block, at a block border,
    in the last block, nowhere, and in a strided column (a field of the row table)."""
    rng = np.random.default_rng(block)
    for n in (0, 1, 5, 17, 64):
        for at in range(-1, n):
            col = rng.integers(0, 5, n).astype(np.uint8)  # never 9
            if at >= 0:
                col[:at] = 1
                col[at] = 9
            want = int(np.flatnonzero(col == 9)[0]) if (col == 9).any() else -1
            assert fast.first_row(col, 9, block) == want
    rows = np.zeros(10, dtype=EVENT_DTYPE)
    rows["kind"][6:] = EventKind.OVERFLOW
    assert fast.first_row(rows["kind"], EventKind.OVERFLOW, block) == 6
