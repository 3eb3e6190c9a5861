"""Builders for synthetic CTF traces (hand-written TSDL in tests/data/ctf/tsdl) and babeltrace2."""

from __future__ import annotations

import functools
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.conftest import IN_CI, ROOT

DATA = ROOT / "tests" / "data" / "ctf"
TSDL = DATA / "tsdl"
BT2_DUMP = Path(__file__).with_name("bt2_dump.py")
MAGIC = 0xC1FC1FC1


class BitWriter:
    """Bit-exact writer for one byte order (CTF bit fields: LSB-first for le, MSB-first for be)."""

    def __init__(self, bo: str = "le") -> None:
        self.bo, self.acc, self.n = bo, 0, 0

    def align(self, bits: int) -> BitWriter:
        pad = (-self.n) % bits
        return self.int(0, pad) if pad else self

    def int(self, v: int, size: int, align: int = 1) -> BitWriter:
        self.align(align)
        v &= (1 << size) - 1
        if self.bo == "le":
            self.acc |= v << self.n
        else:
            self.acc = (self.acc << size) | v
        self.n += size
        return self

    def raw(self, b: bytes) -> BitWriter:
        self.align(8)
        for x in b:
            self.int(x, 8)
        return self

    def bytes(self) -> bytes:
        pad = (-self.n) % 8
        if self.bo == "le":
            return self.acc.to_bytes((self.n + pad) // 8, "little")
        return (self.acc << pad).to_bytes((self.n + pad) // 8, "big")


def name20(s: str) -> bytes:
    return s.encode()[:20].ljust(20, b"\0")


def zephyr_event(ts: int, eid: int, payload: bytes = b"") -> bytes:
    """One event of the Zephyr-style headerless stream (32-bit ts, 8-bit id)."""
    return struct.pack("<IB", ts & 0xFFFFFFFF, eid) + payload


def thread(tid: int, name: str) -> bytes:
    return struct.pack("<I", tid) + name20(name)


def make_trace(tmp: Path, tsdl: str, streams: dict[str, bytes]) -> Path:
    """A trace folder: ``metadata`` copied from tests/data/ctf/tsdl/<tsdl> plus the streams."""
    d = tmp / f"trace_{tsdl.split('.')[0]}"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(TSDL / tsdl, d / "metadata")
    for name, data in streams.items():
        (d / name).write_bytes(data)
    return d


@functools.lru_cache(maxsize=1)
def _bt2_python() -> str | None:
    for cand in (os.environ.get("CROSSTRACE_BT2_PYTHON"), "/usr/bin/python3", shutil.which("python3")):
        if cand and Path(cand).exists():
            r = subprocess.run([cand, "-c", "import bt2"], capture_output=True)
            if r.returncode == 0:
                return cand
    return None


def need_bt2() -> str:
    """An interpreter with babeltrace2's ``bt2`` module: fails in CI when missing, else skips."""
    py = _bt2_python() if shutil.which("babeltrace2") else None
    if py is None:
        msg = "babeltrace2 / python3-bt2 not installed (tools/install-system-deps.sh)"
        if IN_CI:
            pytest.fail(msg + " — required in CI", pytrace=False)
        pytest.skip(msg)
    return py


def bt2_events(trace_dir: Path) -> list[dict]:
    """babeltrace2's reading of a trace folder (one dict per event)."""
    py = need_bt2()
    r = subprocess.run([py, str(BT2_DUMP), str(trace_dir)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"babeltrace2 failed on {trace_dir}: {r.stderr[-2000:]}"
    return [json.loads(line) for line in r.stdout.splitlines()]


def ours(raw: object) -> list[dict]:
    """Our raw records in babeltrace2's dump shape (lost-event markers left out)."""
    out = []
    for rec in raw.records:  # type: ignore[attr-defined]
        if rec.eid < 0:
            continue
        out.append(json.loads(json.dumps({
            "stream": str(raw.paths[rec.stream]), "name": rec.name, "id": rec.eid,  # type: ignore[attr-defined]
            "clock": rec.ts, "fields": rec.fields, "context": rec.context,
            "stream_context": rec.stream_context, "cpu": rec.cpu if rec.cpu >= 0 else None})))
    return out


def by_stream(events: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in events:
        out.setdefault(os.path.realpath(e["stream"]), []).append(e)
    return out


def assert_equal_to_bt2(trace_dir: Path, raw: object) -> int:
    """Every event equal (per stream, in order): name, id, clock value, payload, contexts, cpu."""
    theirs, mine = by_stream(bt2_events(trace_dir)), by_stream(ours(raw))
    assert sorted(theirs) == sorted(mine), "different stream files"
    n = 0
    for s in theirs:
        a, b = theirs[s], mine[s]
        assert len(a) == len(b), f"{s}: babeltrace2 {len(a)} events, crosstrace {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert x == y, f"{s} event {i}: babeltrace2 {x} != crosstrace {y}"
        n += len(a)
    return n
