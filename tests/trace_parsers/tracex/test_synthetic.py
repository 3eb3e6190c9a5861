"""Synthetic TraceX buffers built in the tests: byte order, partial/stale/wrapped buffers, SMP,
timers, text encodings, damaged input, model mapping."""

from __future__ import annotations

import numpy as np
import pytest

from trace_parsers import open_trace
from trace_parsers.errors import TraceCorruptError, TraceError, TraceFormatError
from trace_parsers.model import CtxType, EventKind, Severity, validate
from trace_parsers.tracex import format as fmt
from trace_parsers.tracex import hexfmt, read_raw, read_tracex, sniff
from trace_parsers.tracex.decode import decode_bytes
from trace_parsers.tracex.stats import tracex_statistics

from .helpers import CORPUS_FILES, build_trx, swap_endianness

A, B = 0x1000, 0x2000
THREADS = [(1, A, "alpha", 0x8000, 1024), (1, B, "beta", 0x9000, 1024)]


def ev(ctx, eid, ts, i1=0, i2=0, i3=0, i4=0, prio=0):
    return [ctx, prio, eid, ts, i1, i2, i3, i4]


def write(tmp_path, data: bytes, name="t.trx"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def codes(tr):
    return {d.code for d in tr.diagnostics}


# -- byte order -------------------------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPUS_FILES)
def test_big_endian_copy_decodes_identically(trx_corpus, tmp_path, name):
    le = (trx_corpus / name).read_bytes()
    be = swap_endianness(le)
    assert be[:4] == b"TXTB"
    r_le, r_be = decode_bytes(le), decode_bytes(be)
    assert r_be.byteorder == ">"
    assert np.array_equal(r_le.records(), r_be.records())
    assert [o.__dict__ for o in r_le.objects] == [o.__dict__ for o in r_be.objects]
    assert np.array_equal(r_le.relative_ticks, r_be.relative_ticks)
    assert tracex_statistics(r_le) == tracex_statistics(r_be)
    tr = open_trace(write(tmp_path, be))
    assert tr.meta.source_version.startswith("TraceX buffer (big")


def test_big_endian_synthetic():
    words = [ev(A, 69, 100, i1=7, prio=5), ev(B, 68, 150, i1=7, prio=3)]
    for bo in "<>":
        raw = decode_bytes(build_trx(words, objects=THREADS, byteorder=bo))
        assert raw.byteorder == bo
        assert raw.context.tolist() == [A, B] and raw.event_id.tolist() == [69, 68]
        assert raw.relative_ticks.tolist() == [0, 50]
        assert [o.name for o in raw.objects] == ["alpha", "beta"]


# -- circular buffer --------------------------------------------------------------------------------

def test_partially_filled_buffer_keeps_slot_order():
    words = [ev(A, 69, 10 * i, i1=i) for i in range(500)]
    raw = decode_bytes(build_trx(words, objects=THREADS, n_slots=974))
    assert len(raw) == 500 and not raw.wrapped and raw.first_null_slot == 500
    assert raw.info(1).tolist() == list(range(500))  # tracex-parser 3.0.1 starts at slot 26 here
    assert "TRX_WRAPPED" not in {d.code for d in raw.diagnostics}


def test_wrapped_buffer_order_and_wrap_at_zero():
    words = [ev(A, 69, 1000 + i, i1=i) for i in range(10)]
    raw = decode_bytes(build_trx(words, objects=THREADS, n_slots=10, cur=4))
    assert raw.wrapped and raw.index.tolist() == [4, 5, 6, 7, 8, 9, 0, 1, 2, 3]
    raw0 = decode_bytes(build_trx(words, objects=THREADS, n_slots=10, cur=0))
    assert raw0.wrapped and raw0.index.tolist() == list(range(10))
    assert np.array_equal(raw.src_offset - np.uint64(raw.buffer_offset), raw.index.astype(np.uint64) * 32)


@pytest.mark.corpus
def test_stale_slots_after_reenable(trx_corpus):
    """Re-enable clears only word 0; 500 new events are then written from slot 0."""
    data = bytearray((trx_corpus / CORPUS_FILES[0]).read_bytes())
    raw0 = decode_bytes(bytes(data))
    off, m = raw0.buffer_offset, raw0.event_slots
    slots = np.frombuffer(bytes(data[off:off + m * 32]), "<u4").reshape(m, 8).copy()
    slots[:, 0] = 0
    slots[:500] = raw0.records().view("<u4").reshape(-1, 8)[:500]
    data[off:off + m * 32] = slots.tobytes()
    data[32:36] = (raw0.header["buffer_start_pointer"] + 500 * 32).to_bytes(4, "little")
    raw = decode_bytes(bytes(data))
    assert len(raw) == 500 and not raw.wrapped
    assert raw.stale_slots == m - 501
    d = [x for x in raw.diagnostics if x.code == "TRX_STALE_SLOTS"]
    assert d and d[0].count == m - 501 and d[0].offset == off + 501 * 32
    assert np.array_equal(raw.records(), raw0.records()[:500])


# -- SMP ----------------------------------------------------------------------------------------------

@pytest.mark.corpus
def test_smp_core_bits(trx_corpus, tmp_path):
    data = bytearray((trx_corpus / CORPUS_FILES[2]).read_bytes())
    raw0 = decode_bytes(bytes(data))
    off = raw0.buffer_offset
    w = np.frombuffer(bytes(data[off:off + raw0.event_slots * 32]), "<u4").reshape(-1, 8).copy()
    core = (np.arange(w.shape[0]) % 2).astype(np.uint32)
    w[:, 2] |= core << np.uint32(24)
    data[off:off + w.nbytes] = w.tobytes()
    p = write(tmp_path, bytes(data))
    raw = read_raw(p)
    assert np.array_equal(raw.event_id, raw0.event_id)
    assert np.array_equal(raw.core, core[raw.index])
    tr = read_tracex(p)
    assert tr.meta.cores == 2
    assert np.array_equal(tr.events["core"], core[raw.index])
    assert tr.counts_by_kind() == read_tracex(trx_corpus / CORPUS_FILES[2]).counts_by_kind()
    assert tracex_statistics(raw) == tracex_statistics(raw0)


# -- timestamps ---------------------------------------------------------------------------------------

def test_16bit_down_counter_with_wraps():
    rng = np.random.default_rng(5)
    t = np.cumsum(rng.integers(100, 30000, size=200))  # true elapsed ticks, gaps < 65536
    rec = (0xFFFF - (t & 0xFFFF)) | (rng.integers(0, 0xFFFF, size=200) << 16)  # junk in bits 16..31
    words = [ev(A, 69, int(x)) for x in rec]
    raw = decode_bytes(build_trx(words, objects=THREADS, mask=0xFFFF, n_slots=256))
    assert raw.direction == "down"
    assert raw.timer_wraps == int(np.count_nonzero(np.diff(t >> 16)))
    assert raw.timer_wraps > 10
    assert np.array_equal(raw.relative_ticks, t - t[0])
    tr = read_tracex_bytes(build_trx(words, objects=THREADS, mask=0xFFFF, n_slots=256))
    assert np.array_equal(tr.events["ts_raw"] - np.uint64(tr.meta.origin_raw), (t - t[0]).astype(np.uint64))
    assert {"TRX_TIMER_WRAPS", "TRX_SHORT_TIMER"} <= codes(tr)
    assert validate(tr) == []


def test_32bit_up_counter_wrap_and_timer_override():
    t = np.array([0xFFFFFF00, 0xFFFFFFF0, 0x10, 0x200], dtype=np.int64)
    words = [ev(A, 69, int(x)) for x in t]
    raw = decode_bytes(build_trx(words, objects=THREADS))
    assert raw.direction == "up" and raw.timer_wraps == 1
    assert raw.relative_ticks.tolist() == [0, 0xF0, 0x110, 0x300]
    forced = decode_bytes(build_trx(words, objects=THREADS), timer="down")
    assert forced.direction == "down" and forced.relative_ticks[1] != 0xF0
    with pytest.raises(ValueError, match="'timer' parameter"):
        decode_bytes(build_trx(words, objects=THREADS), timer="sideways")


def read_tracex_bytes(data: bytes, **kw):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.trx"
        p.write_bytes(data)
        return read_tracex(p, **kw)


# -- text encodings -----------------------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("enc", ["ihex", "srec", "hex"])
def test_text_encodings(trx_corpus, tmp_path, enc):
    data = (trx_corpus / CORPUS_FILES[0]).read_bytes()
    def plain(b: bytes) -> bytes:
        return b"\n".join(b[i:i + 16].hex(" ").encode() for i in range(0, len(b), 16))

    text = {"ihex": hexfmt.to_ihex, "srec": hexfmt.to_srec, "hex": plain}[enc](data)
    p = write(tmp_path, text, "t.hex")
    assert sniff(text[:4096], p)
    raw = read_raw(p)
    assert raw.encoding == enc
    assert np.array_equal(raw.records(), decode_bytes(data).records())
    assert open_trace(p).meta.source_format == "tracex"


def test_hex_doctests_and_bad_checksum():
    assert hexfmt.to_binary(hexfmt.to_ihex(b"BTXT")) == b"BTXT"
    assert hexfmt.to_binary(hexfmt.to_srec(b"BTXT")) == b"BTXT"
    bad = hexfmt.to_ihex(b"BTXT" + bytes(40)).replace(b":10", b":10", 1)
    lines = bad.split(b"\n")
    lines[1] = lines[1][:-2] + (b"00" if lines[1][-2:] != b"00" else b"01")
    with pytest.raises(TraceFormatError, match="line 2.*checksum") as ei:
        hexfmt.to_binary(b"\n".join(lines), "x.hex")
    assert ei.value.code == "TRX_BAD_MAGIC" and ei.value.offset == len(lines[0]) + 1


# -- damaged input ------------------------------------------------------------------------------------

def test_not_a_tracex_buffer(tmp_path):
    p = write(tmp_path, b"hello world, not a trace" * 10)
    with pytest.raises(TraceFormatError) as ei:
        read_tracex(p)
    assert ei.value.code == "TRX_BAD_MAGIC" and ei.value.offset == 0 and str(p) in str(ei.value)
    assert not sniff(p.read_bytes(), p)


@pytest.mark.parametrize("field,value,offset", [
    ("object_name_size", 64, 18),
    ("registry_start_pointer", 0x20000040, 12),
    ("registry_end_pointer", 0x20000030 + 8 * 48 + 7, 20),
    ("buffer_start_pointer", 0x20000030 + 8 * 48 + 32, 24),
    ("buffer_end_pointer", 0x20000030 + 8 * 48 + 33, 28),
    ("buffer_current_pointer", 0x10000000, 32),
    ("registry_end_pointer", 0x20000030 + 4000 * 48, 20),
])
def test_bad_header(field, value, offset):
    data = bytearray(build_trx([ev(A, 69, 1)], objects=THREADS))
    h = np.frombuffer(bytes(data[:48]), fmt.header_dtype("<")).copy()
    h[field] = value
    data[:48] = h.tobytes()
    with pytest.raises(TraceFormatError) as ei:
        decode_bytes(bytes(data), "bad.trx")
    assert ei.value.code == "TRX_BAD_HEADER" and ei.value.offset == offset
    assert field in str(ei.value) and "bad.trx" in str(ei.value)


def test_short_header_and_reserved_words():
    with pytest.raises(TraceFormatError, match="48 bytes") as ei:
        decode_bytes(b"BTXT" + bytes(20))
    assert ei.value.code == "TRX_BAD_HEADER"
    raw = decode_bytes(build_trx([ev(A, 69, 1)], objects=THREADS, reserved=(1, 2, 3)))
    d = [x for x in raw.diagnostics if x.code == "TRX_BAD_RESERVED"]
    assert d and d[0].severity == Severity.NOTICE and d[0].offset == 36 and len(raw) == 1


@pytest.mark.corpus
def test_truncated_event_area(trx_corpus, tmp_path):
    data = (trx_corpus / CORPUS_FILES[0]).read_bytes()
    raw0 = decode_bytes(data)
    cut = raw0.buffer_offset + 500 * 32 + 13  # slot 500 half written
    p = write(tmp_path, data[:cut])
    with pytest.raises(TraceCorruptError) as ei:
        read_tracex(p)
    assert ei.value.code == "TRX_TRUNCATED" and ei.value.offset == raw0.buffer_offset + 500 * 32
    tr = read_tracex(p, on_corrupt="skip")
    raw = tr.meta.extra["tracex_raw"]
    assert len(tr) == 500 and raw.index.tolist() == list(range(500))  # every complete event kept
    d = [x for x in tr.diagnostics if x.code == "TRX_TRUNCATED"]
    assert d[0].severity == Severity.DATA_LOSS and d[0].offset == raw0.buffer_offset + 500 * 32
    with pytest.warns(UserWarning, match="TRX_TRUNCATED"):
        read_tracex(p, on_corrupt="warn")


def test_truncated_after_last_written_slot_is_harmless():
    data = build_trx([ev(A, 69, i) for i in range(5)], objects=THREADS, n_slots=50, trailing=0)
    raw = decode_bytes(data[:len(data) - 40 * 32])
    assert len(raw) == 5
    d = [x for x in raw.diagnostics if x.code == "TRX_TRUNCATED"]
    assert d and d[0].severity == Severity.INFO


# -- model mapping ------------------------------------------------------------------------------------

def test_model_mapping_user_marks_unknown_ids_and_contexts():
    u = fmt.TX_TRACE_USER_EVENT_START
    words = [
        ev(fmt.CTX_INIT, 100, 1, i1=A, i2=5),            # thread create during init
        ev(A, u + 2, 2, i1=1, prio=fmt.PRIORITY_PT_FLAG | (3 << 16) | 5),  # CT site 2 -> MARK
        ev(A, u + 500, 3, i1=42, i2=43, i3=44, i4=45, prio=5),  # plain user event
        ev(A, 77, 4, prio=5),                            # no name in any table
        ev(fmt.CTX_ISR, fmt.TX_TRACE_ISR_ENTER, 5, i2=11, prio=A),
        ev(fmt.CTX_ISR, fmt.TX_TRACE_THREAD_RESUME, 6, i1=B, i4=B, prio=A),
        ev(fmt.CTX_ISR, fmt.TX_TRACE_ISR_EXIT, 7, i2=11, prio=A),
        ev(0x3000, 69, 8, prio=9),                       # thread pointer not in the registry
    ]
    tr = read_tracex_bytes(build_trx(words, objects=THREADS), tick_hz=1_000_000_000)
    e = tr.events
    assert validate(tr) == []
    assert e["kind"].tolist() == [EventKind.API_CALL, EventKind.MARK, EventKind.USER, EventKind.OTHER,
                                  EventKind.ISR_ENTER, EventKind.TASK_READY, EventKind.ISR_EXIT,
                                  EventKind.API_CALL]
    assert e["ctx_type"].tolist() == [CtxType.INIT, CtxType.TASK, CtxType.TASK, CtxType.TASK, CtxType.ISR,
                                      CtxType.ISR, CtxType.ISR, CtxType.TASK]
    assert e["ctx_id"].tolist() == [-1, 0, 0, 0, 11, -1, 11, 2]
    assert e["marker"][1] == 2 and e["value"][1] == 1
    assert e["target_id"][5] == 1
    assert [t.name for t in tr.tasks] == ["alpha", "beta", "Un-named Thread 0x00003000"]
    assert [t.priority for t in tr.tasks] == [5, -1, 9]
    assert [i.number for i in tr.isrs] == [11]
    assert {m.id for m in tr.markers} == set(fmt.CT_SITES)
    unk = [d for d in tr.diagnostics if d.code == "TRX_UNKNOWN_ID"]
    assert unk and "77" in unk[0].message
    raw = tr.meta.extra["tracex_raw"]
    assert raw.info(4)[2] == 45 and raw.priority()[1][1] == 3
    assert fmt.event_name(77) == "UNKNOWN_77" and fmt.info_labels(2)[3] == "next thread"
    with pytest.raises(ValueError, match="tick_hz"):
        read_tracex_bytes(build_trx(words, objects=THREADS), tick_hz=0)


def test_registry_priority_and_non_ascii_names():
    objs = [(1, A, "\x01bad", 0, 0, 0x80 | 0x1, 0x2C), (8, 0x5000, "pool", 100, 0), (2, 0x6000, "tmr", 1, 2)]
    raw = decode_bytes(build_trx([ev(A, 69, 1, prio=7)], objects=objs))
    assert [o.name for o in raw.objects] == ["Non-ASCII Name", "pool", "tmr"]
    assert [o.type_name for o in raw.objects] == ["THREAD", "BYTE_POOL", "TIMER"]
    assert raw.objects[0].registry_priority == 0x12C
    tr = read_tracex_bytes(build_trx([ev(A, 69, 1, prio=7)], objects=objs))
    assert tr.tasks[0].priority == 0x12C


def test_ct_sites_table_matches_firmware_header():
    from ...conftest import ROOT

    h = ROOT / "firmware" / "include" / "ct_sites.h"
    if not h.exists():
        pytest.skip("firmware/include/ct_sites.h not present")
    sites = fmt.parse_ct_sites(h)
    assert sites == fmt.CT_SITES and len(sites) >= 10
    # the built-in fallback (installed package without firmware/) is an append-only prefix
    assert all(sites[i] == name for i, name in fmt._BUILTIN_SITES.items())


def test_error_is_trace_error():
    with pytest.raises(TraceError):
        decode_bytes(b"")


@pytest.mark.corpus
@pytest.mark.parametrize("enc", ["ihex", "srec", "hex"])
def test_text_encoding_offsets_point_into_the_text_file(trx_corpus, tmp_path, enc):
    """``src_offset`` of a hex-text export is the offset of the record's hex digits in the user's file,
    not an offset in the converted binary (a record's first byte = the raw reader's mapping)."""
    data = (trx_corpus / CORPUS_FILES[0]).read_bytes()
    def plain(b: bytes) -> bytes:
        return b"\n".join(b[i:i + 16].hex(" ").encode() for i in range(0, len(b), 16))

    text = {"ihex": hexfmt.to_ihex, "srec": hexfmt.to_srec, "hex": plain}[enc](data)
    p = write(tmp_path, text, "t.hex")
    ev = open_trace(p).events
    binary = open_trace(write(tmp_path, data, "t.trx")).events
    assert len(ev) == len(binary) > 0
    assert not np.array_equal(ev["src_offset"], binary["src_offset"])  # the binary offsets differ
    assert np.array_equal(np.sort(ev["src_offset"]), np.sort(read_raw(p).src_offset))
    for off, boff in zip(ev["src_offset"][:50].tolist(), binary["src_offset"][:50].tolist()):
        digits = text[off:off + 2]  # the first byte of the 32-byte record, as two hex digits
        assert digits.lower() == data[boff:boff + 1].hex().encode()


@pytest.mark.corpus
@pytest.mark.parametrize("enc", ["ihex", "srec", "hex"])
def test_conversion_diagnostics_point_into_the_text_file(trx_corpus, tmp_path, enc):
    """TRX_TIMER_WRAPS / TRX_SHORT_TIMER / TRX_NO_TICK_HZ of a hex-text export name the offset of
    the byte's hex digits in the user's file, not the offset in the converted binary."""
    data = (trx_corpus / CORPUS_FILES[0]).read_bytes()  # a 16-bit timer that wraps
    def plain(b: bytes) -> bytes:
        return b"\n".join(b[i:i + 16].hex(" ").encode() for i in range(0, len(b), 16))

    text = {"ihex": hexfmt.to_ihex, "srec": hexfmt.to_srec, "hex": plain}[enc](data)
    got = {d.code: d.offset for d in open_trace(write(tmp_path, text, "t.hex")).diagnostics}
    want = {d.code: d.offset for d in open_trace(write(tmp_path, data, "t.trx")).diagnostics}
    codes = ("TRX_TIMER_WRAPS", "TRX_SHORT_TIMER", "TRX_NO_TICK_HZ")
    assert all(c in want and c in got for c in codes)
    for c in codes:
        off = got[c]
        assert text[off:off + 2].lower() == data[want[c]:want[c] + 1].hex().encode(), c
    assert got["TRX_TIMER_WRAPS"] != want["TRX_TIMER_WRAPS"]  # the binary offset would be wrong here
