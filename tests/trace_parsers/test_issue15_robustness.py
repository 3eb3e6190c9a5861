"""Issue 15: no foreign exception escapes a reader, no input demands unbounded memory, and damage
keeps the intact data and says so with offsets into the user's file.

Each test names the class of input it covers; the fuzz harness (``tools/fuzz``) replays the files
in ``tests/trace_parsers/fuzz_regressions/`` on top of these.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from trace_parsers import TraceCorruptError, TraceError, TraceFormatError, open_trace
from trace_parsers.dsl import read_dsview
from trace_parsers.model import Severity
from trace_parsers.saleae import read_saleae_binary, read_saleae_csv
from trace_parsers.sigrok import read_sigrok
from trace_parsers.systemview import read_systemview
from trace_parsers.tracex import hexfmt, read_tracex
from trace_parsers.vcd import read_vcd

from .systemview._encoder import Encoder
from .tracex.helpers import build_trx

HUGE = "9" * 5000  # beyond int()'s 4,300-digit limit
SV_HDR = b";\n; Version     SEGGER SystemViewer V3.60\n"


def _sv_body(shift: int = 2) -> bytes:
    enc = Encoder()
    enc.fixed(10, 5)
    enc.init(6, 1_000_000, 168_000_000, 0x20000000, shift)
    enc.task_info(9, 0x100, 3, "worker")
    enc.fixed(4, 20, 0x100)  # TASK_START_EXEC
    enc.fixed(5, 30)
    return enc.bytes()


def _sv_stop(body: bytes) -> bytes:
    return body + b"\x0b\x05"  # TRACE_STOP, 5 ticks later


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def _sr(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return path


def _meta(rate: str = "1 MHz", unitsize: str = "1", probes: str = "2") -> bytes:
    return (f"[global]\nsigrok version=0.5\n[device 1]\ncapturefile=logic-1\nunitsize={unitsize}\n"
            f"total probes={probes}\nsamplerate={rate}\nprobe1=a\nprobe2=b\n").encode()


def _dsl(path: Path, *, total: str = "16", rate: str = "1 MHz") -> Path:
    hdr = (f"[version]\nversion = 2\n[header]\ndevice mode = 0\ntotal samples = {total}\n"
           f"total probes = 1\ntotal blocks = 1\nsamplerate = {rate}\nprobe0 = a\n")
    return _sr(path, [("header", hdr.encode()), ("L-0/0", b"\x0f\x00")])


# -- numbers too long for int() / out of range: one of our errors, never ValueError/OverflowError --

@pytest.mark.parametrize("case", ["sv_offset_digits", "sv_offset_core256", "sr_rate_digits",
                                  "sr_rate_2e64", "sr_member_digits", "csv_time_digits",
                                  "dsl_rate_2e64", "dsl_total_2e64", "dsl_total_digits"])
def test_numbers_out_of_range_give_trace_errors(tmp_path: Path, case: str) -> None:
    p = tmp_path / "f.bin"
    if case == "sv_offset_digits":
        _write(p, SV_HDR + f"; Offset Core0 {HUGE}\n;\n".encode() + _sv_body())
    elif case == "sv_offset_core256":
        _write(p, SV_HDR + b"; Offset Core256 0\n;\n" + _sv_body())
    elif case == "sr_rate_digits":
        _sr(p, [("version", b"2"), ("metadata", _meta(rate=HUGE)), ("logic-1-1", b"\x00\x01")])
    elif case == "sr_rate_2e64":
        _sr(p, [("version", b"2"), ("metadata", _meta(rate=str(2**64 + 1))), ("logic-1-1", b"\x00\x01")])
    elif case == "sr_member_digits":
        _sr(p, [("version", b"2"), ("metadata", _meta()), ("logic-1-1", b"\x00\x01"),
                (f"logic-1-{HUGE}", b"\x01")])
    elif case == "csv_time_digits":
        _write(p, f"Time [s],a\n0.0,0\n{HUGE},1\n".encode())
    elif case == "dsl_rate_2e64":
        _dsl(p, rate=str(2**64 + 1))
    elif case == "dsl_total_2e64":
        _dsl(p, total=str(2**64))
    else:
        _dsl(p, total=HUGE)
    try:
        tr = open_trace(p, on_corrupt="skip")
    except TraceError as e:
        assert e.path == str(p) and e.offset is not None
        return
    # readers that keep going must say what they dropped
    assert case in ("sr_member_digits", "csv_time_digits"), case
    assert tr.diagnostics


def test_systemview_id_shift_64_keeps_the_events(tmp_path: Path) -> None:
    p = _write(tmp_path / "s.SVDat", _sv_body(shift=64))
    tr = read_systemview(p)
    assert len(tr.events) > 0
    assert any("IdShift=64" in d.message for d in tr.diagnostics)


def test_saleae_binary_v1_chunk_time_minus_1e308(tmp_path: Path) -> None:
    head = b"<SALEAE>" + struct.pack("<iiQ", 1, 0, 2)
    c0 = struct.pack("<IdddQ", 0, 1e6, 0.0, 1.0, 2) + struct.pack("<2d", 0.25, 0.5)
    c1 = struct.pack("<IdddQ", 0, 1e6, -1e308, 2.0, 1) + struct.pack("<d", 1.5)
    p = _write(tmp_path / "digital_0.bin", head + c0 + c1)
    with pytest.raises(TraceCorruptError) as ei:
        read_saleae_binary(p)
    assert ei.value.code == "SALEAE_BAD_BINARY" and ei.value.offset == len(head + c0)
    tr = read_saleae_binary(p, on_corrupt="skip")
    assert tr.events["ts_raw"].tolist() == [250_000, 500_000]  # chunk 0 kept


# -- memory: a compressed file cannot demand unbounded memory ------------------------------------

def test_sigrok_edge_bomb_is_refused_naming_the_limit(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    p = _sr(tmp_path / "bomb.sr", [("version", b"2"), ("metadata", _meta()),
                                   ("logic-1-1", b"\x00\x01" * 50_000)])
    assert p.stat().st_size < 2000  # 100 KB of samples, one edge each
    monkeypatch.setenv("CROSSTRACE_MAX_EDGES", "10000")
    with pytest.raises(TraceFormatError) as ei:
        read_sigrok(p, on_corrupt="skip")
    assert ei.value.code == "LIMIT_EXCEEDED" and "CROSSTRACE_MAX_EDGES" in str(ei.value)
    monkeypatch.setenv("CROSSTRACE_MAX_EDGES", "100000")  # raising the limit reads it
    assert len(read_sigrok(p).events) == 99_999


def test_small_file_cannot_demand_a_gigabyte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 15: a few KB inflating to millions of edges; the default limit scales with the file."""
    monkeypatch.delenv("CROSSTRACE_MAX_EDGES", raising=False)
    meta = _meta(probes="8").replace(b"probe2=b\n", b"".join(b"probe%d=p%d\n" % (i, i) for i in range(2, 9)))
    p = _sr(tmp_path / "bomb.sr", [("version", b"2"), ("metadata", meta),
                                   ("logic-1-1", b"\x00\xff" * (1 << 20))])  # 16.7 M edges
    assert p.stat().st_size < 4096
    with pytest.raises(TraceFormatError) as ei:
        read_sigrok(p, on_corrupt="skip")
    assert ei.value.code == "LIMIT_EXCEEDED" and "CROSSTRACE_MAX_EDGES" in str(ei.value)
    assert f"more than {1024 * p.stat().st_size:,} edges" in str(ei.value)  # 1,024 per file byte


def test_stored_capture_over_the_absolute_edge_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuzz finding (MemoryError under a 2 GiB limit): a 2.5 MB stored ``.sr`` with 16.7 M edges."""
    monkeypatch.delenv("CROSSTRACE_MAX_EDGES", raising=False)
    meta = _meta(probes="8").replace(b"probe2=b\n", b"".join(b"probe%d=p%d\n" % (i, i) for i in range(2, 9)))
    p = tmp_path / "stored.sr"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_STORED) as z:
        z.writestr("version", b"2")
        z.writestr("metadata", meta)
        z.writestr("logic-1-1", b"\x00\xff" * (1 << 20))
    with pytest.raises(TraceFormatError) as ei:
        read_sigrok(p)
    assert ei.value.code == "LIMIT_EXCEEDED" and "more than 8,000,000 edges" in str(ei.value)


def test_dsview_edge_bomb_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hdr = ("[version]\nversion = 2\n[header]\ndevice mode = 0\ntotal samples = 80000\n"
           "total probes = 1\ntotal blocks = 1\nsamplerate = 1 MHz\nprobe0 = a\n")
    p = _sr(tmp_path / "bomb.dsl", [("header", hdr.encode()), ("L-0/0", b"\x55" * 10_000)])
    monkeypatch.setenv("CROSSTRACE_MAX_EDGES", "5000")
    with pytest.raises(TraceFormatError) as ei:
        read_dsview(p)
    assert ei.value.code == "LIMIT_EXCEEDED"
    monkeypatch.delenv("CROSSTRACE_MAX_EDGES")
    assert len(read_dsview(p).events) == 79_999


# -- truncation keeps the intact part and says so ---------------------------------------------------

def test_systemview_cut_on_a_packet_boundary_is_reported(tmp_path: Path) -> None:
    hdr = b";\n; Version     SEGGER SystemViewer V2.42\n;\n"
    whole = read_systemview(_write(tmp_path / "w.SVDat", hdr + _sv_stop(_sv_body())))
    assert not any(d.severity >= Severity.DATA_LOSS for d in whole.diagnostics)
    cut = read_systemview(_write(tmp_path / "c.SVDat", hdr + _sv_body()))  # TRACE_STOP cut off
    d = [x for x in cut.diagnostics if x.code == "SV_NO_TRACE_STOP"]
    assert len(d) == 1 and d[0].severity == Severity.DATA_LOSS
    assert d[0].offset == len(hdr + _sv_body())


def test_systemview_multicore_cut_inside_core1_keeps_core0(tmp_path: Path) -> None:
    b0, b1 = _sv_stop(_sv_body()), _sv_stop(_sv_body())
    hdr = SV_HDR + f"; Offset Core0 0\n; Offset Core1 {len(b0)}\n;\n".encode()
    data = hdr + b0 + b1
    full = read_systemview(_write(tmp_path / "f.SVDat", data))
    for cut in range(len(hdr) + len(b0) + 1, len(data)):
        tr = read_systemview(_write(tmp_path / "c.SVDat", data[:cut]), on_corrupt="skip")
        core0 = tr.events[tr.events["core"] == 0]
        assert np.array_equal(core0, full.events[full.events["core"] == 0]), cut
        assert any(d.severity == Severity.DATA_LOSS and d.offset <= cut for d in tr.diagnostics), cut


def _sr_v1_after(tmp_path: Path) -> tuple[bytes, int]:
    samples = bytes([0, 1, 1, 3, 2, 0] * 50)
    p = _sr(tmp_path / "v1.sr", [("version", b"1"), ("logic-1", samples), ("metadata", _meta())])
    data = p.read_bytes()
    return data, data.find(b"PK\x03\x04", data.find(b"logic-1") + 8)  # metadata's local header


def test_sigrok_metadata_after_logic_cut_inside_metadata_keeps_data(tmp_path: Path) -> None:
    data, moff = _sr_v1_after(tmp_path)
    whole = read_sigrok(_write(tmp_path / "w.sr", data))
    cdir = data.find(b"PK\x01\x02")
    tr = read_sigrok(_write(tmp_path / "c.sr", data[:cdir - 1]), on_corrupt="skip")  # cut in metadata
    assert np.array_equal(tr.events, whole.events) and len(whole.events) > 0
    assert all(d.offset <= cdir for d in tr.diagnostics)
    with pytest.raises(TraceCorruptError):
        read_sigrok(_write(tmp_path / "c.sr", data[:cdir - 1]))


def test_sigrok_metadata_after_logic_cut_before_metadata(tmp_path: Path) -> None:
    data, moff = _sr_v1_after(tmp_path)
    cut = _write(tmp_path / "c.sr", data[:moff - 3])
    with pytest.raises(TraceFormatError, match="unitsize= and samplerate=") as ei:
        read_sigrok(cut, on_corrupt="skip")
    assert ei.value.offset == moff - 3
    tr = read_sigrok(cut, on_corrupt="skip", unitsize=1, samplerate=1_000_000)
    assert len(tr.events) > 0 and [c.name for c in tr.channels][:2] == ["D0", "D1"]


def test_sigrok_truncation_offsets_are_file_offsets(tmp_path: Path) -> None:
    p = _sr(tmp_path / "s.sr", [("version", b"2"), ("metadata", _meta(unitsize="2")),
                                ("logic-1-1", bytes(range(256)) * 4 + b"\x01")])  # odd trailing byte
    tr = read_sigrok(p, on_corrupt="skip")
    size = p.stat().st_size
    assert tr.diagnostics and all(0 <= d.offset <= size for d in tr.diagnostics)
    data = p.read_bytes()
    for cut in range(200, len(data), 37):
        try:
            tr = read_sigrok(_write(tmp_path / "c.sr", data[:cut]), on_corrupt="skip")
        except TraceError as e:
            assert e.offset is None or 0 <= e.offset <= cut
            continue
        assert all(0 <= d.offset <= cut for d in tr.diagnostics), cut


def test_tracex_intel_hex_cut_keeps_complete_records(tmp_path: Path) -> None:
    words = np.zeros((40, 8), np.uint32)
    words[:, 0] = 0x20001000
    words[:, 2] = 1
    words[:, 3] = np.arange(40) * 100
    binary = build_trx(words, n_slots=41)
    text = hexfmt.to_ihex(binary)
    whole = read_tracex(_write(tmp_path / "w.hex", text))
    assert len(whole.events) == 40
    for frac in (0.5, 0.8, 0.95):
        cut = int(len(text) * frac)
        with pytest.raises(TraceCorruptError):
            read_tracex(_write(tmp_path / "c.hex", text[:cut]))
        tr = read_tracex(_write(tmp_path / "c.hex", text[:cut]), on_corrupt="skip")
        kept = len(tr.events)
        assert 0 < kept <= 40
        assert np.array_equal(tr.events["ts_raw"], whole.events["ts_raw"][:kept])
        assert np.array_equal(tr.events["src_offset"], whole.events["src_offset"][:kept])
        d = [x for x in tr.diagnostics if x.code == "TRX_TRUNCATED"]
        assert d and all(x.offset <= cut for x in tr.diagnostics)


def test_tracex_wrapped_cut_in_the_middle_keeps_timestamps(tmp_path: Path) -> None:
    """A 16-bit up-timer, 100 ticks per event; the buffer wrapped at slot 300 of 1500."""
    n, cur = 1500, 300
    t = (np.arange(n) * 100) & 0xFFFF  # chronological: slots cur..n-1 then 0..cur-1
    slots = np.zeros((n, 8), np.uint32)
    order = np.r_[np.arange(cur, n), np.arange(0, cur)]
    slots[order, 0] = 0x20001000
    slots[order, 2] = 1
    slots[order, 3] = t
    data = build_trx(slots, n_slots=n, cur=cur, mask=0xFFFF, trailing=0)
    whole = read_tracex(_write(tmp_path / "w.trx", data), timer="up")
    buf = len(data) - 32 * n
    cut = buf + 32 * 600  # 900 slots (90,000 ticks > one 65,536 period) cut out of the middle
    tr = read_tracex(_write(tmp_path / "c.trx", data[:cut]), timer="up", on_corrupt="skip")
    full = dict(zip(whole.events["src_offset"].tolist(), whole.events["ts_raw"].tolist()))
    assert [full[o] for o in tr.events["src_offset"].tolist()] == tr.events["ts_raw"].tolist()
    assert any(d.code == "TRX_TRUNCATED" and "estimated" in d.message for d in tr.diagnostics)


def test_vcd_truncated_mid_line_is_data_loss(tmp_path: Path) -> None:
    text = b"$timescale 1 us $end\n$var wire 1 ! a $end\n$enddefinitions $end\n"
    body = b"".join(b"#%d\n%d!\n" % (10 * i, i % 2) for i in range(1, 50))
    data = text + body
    whole = read_vcd(_write(tmp_path / "w.vcd", data))
    assert not whole.diagnostics
    for cut in range(len(text) + 1, len(data)):
        if data[cut - 1:cut] == b"\n":
            continue  # a cut on a line end is indistinguishable from a shorter recording
        p = _write(tmp_path / "c.vcd", data[:cut])
        with pytest.raises(TraceCorruptError) as ei:
            read_vcd(p)
        assert ei.value.code == "TRUNCATED"
        tr = read_vcd(p, on_corrupt="skip")
        last_nl = data.rfind(b"\n", 0, cut) + 1
        assert [(d.code, d.offset) for d in tr.diagnostics] == [("TRUNCATED", last_nl)]
        assert np.array_equal(tr.events["ts_raw"], whole.events["ts_raw"][:len(tr.events)])


def test_vcd_offsets_do_not_drift_on_invalid_utf8(tmp_path: Path) -> None:
    head = b"$comment \xff\xfe\xfd $end\n$var wire 1 ! a\xff $end\n$enddefinitions $end\n"
    body = b"#0\n0!\n#10\n1!\n#5\n0!\n"  # time goes backwards at the '#5' line
    p = _write(tmp_path / "u.vcd", head + body)
    with pytest.raises(TraceCorruptError) as ei:
        read_vcd(p)
    assert ei.value.offset == len(head) + body.index(b"#5")
    assert read_vcd(p, on_corrupt="skip").channels[0].name == "a\ufffd"


def test_saleae_csv_offsets_after_a_byte_order_mark(tmp_path: Path) -> None:
    rows = b"Time [s],a\n0.0,0\n0.5,1\n0.25,0\n"
    for bom in (b"", b"\xef\xbb\xbf"):
        p = _write(tmp_path / "c.csv", bom + rows)
        with pytest.raises(TraceCorruptError) as ei:
            read_saleae_csv(p)
        assert ei.value.offset == len(bom) + rows.index(b"0.25")
