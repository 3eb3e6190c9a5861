"""Damaged CTF input: truncation, padding, corrupt events and packets, fuzzed streams and metadata.

Every complete event before the damage is kept; after an impossible event decoding resumes where
events decode cleanly again; diagnostics carry byte offsets; no foreign exception escapes.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trace_parsers.ctf import read_ctf, read_raw
from trace_parsers.errors import TraceCorruptError, TraceError, TraceFormatError

from . import builders as B
from .helpers import TSDL, make_trace
from .test_babeltrace import RECORDED, zephyr_metadata

UNDECLARED_ID = 0x05  # no event has this id in Zephyr's metadata nor in zephyr_old.tsdl


def key(r: object) -> tuple:
    return (r.offset, r.name, r.ts, repr(r.fields))  # type: ignore[attr-defined]


def write(d: Path, data: bytes, name: str = "channel0_0") -> Path:
    (d / name).write_bytes(data)
    return d


@pytest.fixture
def old(tmp_path: Path) -> Path:
    return make_trace(tmp_path, "zephyr_old.tsdl", {"channel0_0": B.zephyr_old_stream()[0]})


@pytest.fixture
def real(tmp_path: Path) -> Path:
    if not RECORDED:
        pytest.fail("tests/data/ctf holds no recorded Zephyr stream")
    d = tmp_path / "real"
    d.mkdir()
    shutil.copy(zephyr_metadata(), d / "metadata")
    shutil.copy(RECORDED[0] / "channel0_0", d / "channel0_0")
    return d


def _truncations(d: Path, stride: int) -> None:
    data = (d / "channel0_0").read_bytes()
    clean = read_raw(d).records
    ends = [r.offset for r in clean[1:]] + [len(data)]
    for n in range(1, len(data), stride):
        got = read_raw(write(d, data[:n]), on_corrupt="recover")
        whole = [key(r) for r, e in zip(clean, ends) if e <= n]
        assert [key(r) for r in got.records] == whole, n
        cut = next((r.offset for r, e in zip(clean, ends) if r.offset < n < e), None)
        codes = [(x.code, x.offset) for x in got.diagnostics]
        # a cut event whose bytes so far are all zero looks like a RAM dump's unused tail
        code = "TRAILING_PADDING" if cut is not None and not any(data[cut:n]) else "TRUNCATED"
        assert codes == ([(code, cut)] if cut is not None else []), n
        if code == "TRUNCATED" and cut is not None and n % 5 == 0:  # as every reader: raise raises
            with pytest.raises(TraceCorruptError, match="ERR:TRUNCATED"):
                read_raw(d, on_corrupt="raise")


def test_truncated_synthetic_at_every_byte(old: Path) -> None:
    _truncations(old, 1)


def test_truncated_recorded_zephyr(real: Path) -> None:
    _truncations(real, 29)


def test_ram_dump_zero_padding(real: Path) -> None:
    data = (real / "channel0_0").read_bytes()
    clean = [key(r) for r in read_raw(real).records]
    got = read_raw(write(real, data.ljust(8192, b"\0")))
    assert [key(r) for r in got.records] == clean
    assert [(x.code, x.offset, x.message) for x in got.diagnostics] == [
        ("TRAILING_PADDING", len(data), f"{8192 - len(data)} zero bytes after the last event")]


def test_corrupt_event_raises_with_offset(old: Path) -> None:
    data = bytearray((old / "channel0_0").read_bytes())
    off = read_raw(old).records[7].offset
    data[off + 4] = UNDECLARED_ID
    write(old, bytes(data))
    with pytest.raises(TraceCorruptError) as e:
        read_ctf(old)
    assert e.value.code == "CORRUPT_REGION" and e.value.offset == off
    assert f":0x{off:x}" in str(e.value) and "event id 5" in str(e.value)
    with pytest.warns(UserWarning, match="event id 5"):
        tr = read_ctf(old, on_corrupt="warn")
    assert [d.code for d in tr.diagnostics if d.offset == off][:2] == ["CORRUPT_REGION", "CTF_RESYNC"]


def _every_other_event_kept(d: Path, stride: int) -> int:
    data = (d / "channel0_0").read_bytes()
    clean = read_raw(d).records
    checked = 0
    for i in range(0, len(clean), stride):
        b = bytearray(data)
        b[clean[i].offset + 4] = UNDECLARED_ID
        got = read_raw(write(d, bytes(b)), on_corrupt="skip")
        lost = [r for r in got.records if r.eid < 0]
        assert [r.offset for r in lost] == [clean[i].offset]
        expect = [key(r) for j, r in enumerate(clean) if j != i]
        assert [key(r) for r in got.records if r.eid >= 0] == expect, f"damage in event {i}"
        res = [x for x in got.diagnostics if x.code == "CTF_RESYNC"]
        nxt = clean[i + 1].offset if i + 1 < len(clean) else len(data)
        assert len(res) == 1 and res[0].offset == clean[i].offset
        assert res[0].count == (nxt - clean[i].offset if i + 1 < len(clean) else res[0].count)
        checked += 1
    return checked


def test_corrupt_event_loses_nothing_else_synthetic(old: Path) -> None:
    assert _every_other_event_kept(old, 1) == 20


def test_corrupt_event_loses_nothing_else_recorded(real: Path) -> None:
    assert _every_other_event_kept(real, 5) > 80


@pytest.mark.slow
def test_corrupt_event_loses_nothing_else_recorded_every_event(real: Path) -> None:
    assert _every_other_event_kept(real, 1) == 413


def test_percpu_damaged_packet_resyncs_on_the_next_magic(tmp_path: Path) -> None:
    d = make_trace(tmp_path, "percpu.tsdl", B.percpu_streams())
    clean = read_raw(d).records
    data = bytearray((d / "channel0_0").read_bytes())
    struct.pack_into("<I", data, 256 + 24 + 16, 0xFFFFFFF0)  # packet 2: content_size > packet_size
    write(d, bytes(data))
    with pytest.raises(TraceCorruptError) as e:
        read_raw(d)
    assert e.value.offset == 256
    got = read_raw(d, on_corrupt="skip")
    assert [key(r) for r in got.records] == [key(r) for r in clean if not (r.stream == 0 and r.offset >= 256)]
    # the stream cut inside its second packet: packet 1 kept, TRUNCATED at the packet
    write(d, bytes(data[:256 + 100]))
    (d / "channel0_0").write_bytes(B.percpu_streams()["channel0_0"][:256 + 100])
    got = read_raw(d, on_corrupt="recover")
    trunc = [x for x in got.diagnostics if x.code == "TRUNCATED"]
    assert trunc and trunc[0].offset == 256
    assert len([r for r in got.records if r.stream == 0]) == 5 + 1


def _fuzz(d: Path, data: bytes, edits: list[tuple[int, int]], cut: int) -> None:
    clean = read_raw(d).records
    b = bytearray(data)
    for pos, val in edits:
        b[pos % len(b)] = val
    b = b[:max(1, cut % (len(b) + 1))]
    first = min([p % len(data) for p, _ in edits] + [len(b)])
    try:
        got = read_raw(write(d, bytes(b), d.joinpath("channel0_0").name), on_corrupt="skip")
    except TraceFormatError as e:  # e.g. the packet magic of the first packet hit
        assert e.code in ("CTF_BAD_MAGIC",)
        return
    except TraceError:
        raise
    mine0 = [r for r in clean if r.stream == 0]
    ends = [r.offset for r in mine0[1:]] + [len(data)]  # an event ends at most where the next starts
    before = [key(r) for r, e in zip(mine0, ends) if e <= first and r.eid >= 0]
    mine = [key(r) for r in got.records if r.stream == 0 and r.eid >= 0][:len(before)]
    assert mine == before


EDITS = st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=4)


@given(edits=EDITS, cut=st.integers(0, 1 << 20))
def test_fuzz_zephyr_old(tmp_path_factory: pytest.TempPathFactory, edits: list, cut: int) -> None:
    data = B.zephyr_old_stream()[0]
    d = make_trace(tmp_path_factory.mktemp("f"), "zephyr_old.tsdl", {"channel0_0": data})
    _fuzz(d, data, edits, cut)


@given(edits=EDITS, cut=st.integers(0, 1 << 20))
def test_fuzz_percpu(tmp_path_factory: pytest.TempPathFactory, edits: list, cut: int) -> None:
    streams = B.percpu_streams()
    d = make_trace(tmp_path_factory.mktemp("f"), "percpu.tsdl", streams)
    _fuzz(d, streams["channel0_0"], edits, cut)


@given(edits=EDITS, cut=st.integers(0, 1 << 20))
def test_fuzz_features(tmp_path_factory: pytest.TempPathFactory, edits: list, cut: int) -> None:
    data = B.features_stream()
    d = make_trace(tmp_path_factory.mktemp("f"), "features.tsdl", {"channel0_0": data})
    _fuzz(d, data, edits, cut)


@given(name=st.sampled_from(["zephyr_old.tsdl", "percpu.tsdl", "features.tsdl"]),
       pos=st.integers(0, 1 << 16), length=st.integers(0, 40), junk=st.text(max_size=12))
def test_fuzz_metadata_text(tmp_path_factory: pytest.TempPathFactory, name: str, pos: int,
                            length: int, junk: str) -> None:
    """Mangled TSDL parses or fails with CTF_BAD_METADATA (never a foreign exception)."""
    text = (TSDL / name).read_text()
    p = pos % len(text)
    d = tmp_path_factory.mktemp("m")
    (d / "metadata").write_text(text[:p] + junk + text[p + length:])
    (d / "channel0_0").write_bytes(B.zephyr_old_stream()[0])
    try:
        read_ctf(d, on_corrupt="skip")
    except TraceError as e:
        assert e.code in ("CTF_BAD_METADATA", "CTF_BAD_MAGIC"), e


def test_a_file_without_metadata_is_claimed_only_when_named_as_a_stream(tmp_path, monkeypatch):
    """With a default metadata in the environment, almost any bytes decode as a few events of
    Zephyr's 5-byte headers: only ``*.ctf`` / ``channel<N>_<M>`` files may be read with it."""
    from trace_parsers.ctf import sniff

    from . import builders as B

    tsdl = Path(__file__).resolve().parents[2] / "data" / "ctf" / "tsdl" / "zephyr_old.tsdl"
    monkeypatch.setenv("CROSSTRACE_CTF_METADATA", str(tsdl))
    data = B.zephyr_old_stream()[0][:4096]  # bytes that do decode with that metadata
    for name, claimed in (("junk.dat", False), ("trace.ctf", True), ("channel0_0", True)):
        p = tmp_path / name
        p.write_bytes(data)
        assert sniff(data, p) is claimed, name
