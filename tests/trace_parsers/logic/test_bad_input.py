"""Damaged and unusual input: errors name the file, entry and position; recoverable damage keeps every
edge decoded before it; no struct.error/IndexError/UnicodeDecodeError escapes a reader."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trace_parsers import TraceError
from trace_parsers.dsl import read_dsview
from trace_parsers.errors import CorruptInputWarning
from trace_parsers.model import Severity
from trace_parsers.saleae import read_saleae_binary, read_saleae_csv
from trace_parsers.sigrok import read_sigrok, write_sr
from trace_parsers.vcd import read_vcd

from .writers import write_saleae_binary_v0, write_saleae_csv, write_vcd

EDGES = [np.arange(100, 200_000, 997), np.array([5, 150_000])]


def _sr(tmp_path: Path, chunk: int = 16384) -> Path:
    return write_sr(tmp_path / "ok.sr", samplerate=1_000_000, channels=["a", "b"], edges=EDGES,
                    initial=[0, 1], total_samples=200_000, chunk_bytes=chunk)


def _rezip(src: Path, dst: Path, *, drop: str = "", replace: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename == drop:
                continue
            data = (replace or {}).get(info.filename, zin.read(info.filename))
            zout.writestr(info.filename, data)
    return dst


def _metadata(src: Path) -> str:
    with zipfile.ZipFile(src) as z:
        return z.read("metadata").decode()


def test_truncated_file_raises_with_position(tmp_path: Path) -> None:
    src = _sr(tmp_path, chunk=1 << 20)
    data = src.read_bytes()
    bad = tmp_path / "cut.sr"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError) as ei:
        read_sigrok(bad)
    msg = str(ei.value)
    assert ei.value.code == "SR_TRUNCATED_CHUNK" and str(bad) in msg and "logic-1-1" in msg
    assert ei.value.offset is not None


def test_truncated_member_keeps_edges_before_damage(tmp_path: Path) -> None:
    src = _sr(tmp_path, chunk=16384)
    full = read_sigrok(src)
    data = src.read_bytes()
    with zipfile.ZipFile(src) as z:
        info = z.getinfo("logic-1-6")
    bad = tmp_path / "cut.sr"
    bad.write_bytes(data[: info.header_offset + 30 + len("logic-1-6") + info.compress_size // 2])
    with pytest.warns(CorruptInputWarning):
        tr = read_sigrok(bad, on_corrupt="warn")
    assert any(d.code == "SR_TRUNCATED_CHUNK" and d.severity == Severity.DATA_LOSS for d in tr.diagnostics)
    n = len(tr)
    assert 0 < n < len(full)
    assert np.array_equal(tr.events, full.events[:n])  # every edge before the damage, unchanged
    assert tr.meta.extra["total_samples"] < 200_000


def test_crc_mismatch_detected(tmp_path: Path) -> None:
    src = _sr(tmp_path, chunk=1 << 20)
    raw = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = z.getinfo("logic-1-1")
    # flip the stored CRC in the central directory and local header
    crc = info.CRC.to_bytes(4, "little")
    raw = bytearray(bytes(raw).replace(crc, bytes(b ^ 0xFF for b in crc)))
    bad = tmp_path / "crc.sr"
    bad.write_bytes(bytes(raw))
    with pytest.raises(TraceError, match="CRC-32 mismatch") as ei:
        read_sigrok(bad)
    assert ei.value.code == "SR_TRUNCATED_CHUNK"


@pytest.mark.parametrize("key", ["unitsize", "total probes", "capturefile"])
def test_missing_metadata_key(tmp_path: Path, key: str) -> None:
    src = _sr(tmp_path)
    meta = "\n".join(line for line in _metadata(src).splitlines() if not line.startswith(key + "="))
    bad = _rezip(src, tmp_path / "m.sr", replace={"metadata": meta.encode()})
    with pytest.raises(TraceError) as ei:
        read_sigrok(bad)
    assert ei.value.code == "SR_MISSING_METADATA"
    assert "'metadata'" in str(ei.value) and repr(key) in str(ei.value)


@pytest.mark.parametrize("value", ["9", "0", "two"])
def test_unknown_unitsize(tmp_path: Path, value: str) -> None:
    src = _sr(tmp_path)
    meta = _metadata(src).replace("unitsize=1", f"unitsize={value}")
    bad = _rezip(src, tmp_path / "u.sr", replace={"metadata": meta.encode()})
    with pytest.raises(TraceError) as ei:
        read_sigrok(bad)
    assert ei.value.code == "SR_BAD_UNITSIZE" and "line" in str(ei.value)


def test_missing_chunk_ends_stream_like_libsigrok(tmp_path: Path) -> None:
    src = _sr(tmp_path, chunk=16384)
    full = read_sigrok(src)
    bad = _rezip(src, tmp_path / "gap.sr", drop="logic-1-5")
    tr = read_sigrok(bad)
    assert tr.meta.extra["total_samples"] == 4 * 16384
    d = [d for d in tr.diagnostics if d.code == "SR_TRUNCATED_CHUNK"]
    assert d and "logic-1-5" in d[0].message
    assert np.array_equal(tr.events, full.events[: len(tr)])


def test_bad_version_entry(tmp_path: Path) -> None:
    bad = _rezip(_sr(tmp_path), tmp_path / "v.sr", replace={"version": b"3"})
    with pytest.raises(TraceError, match="expected 1 or 2"):
        read_sigrok(bad)


def test_samplerate_quirks(tmp_path: Path) -> None:
    src = _sr(tmp_path)
    for text, hz in (("2 mHz", 2_000_000), ("12.5 kHz", 12_500), ("1MHz", 1_000_000)):
        meta = _metadata(src).replace("samplerate=1 MHz", f"samplerate={text}")
        p = _rezip(src, tmp_path / "r.sr", replace={"metadata": meta.encode()})
        assert read_sigrok(p).meta.tick_hz == hz


def test_csv_non_monotonic(tmp_path: Path) -> None:
    p = tmp_path / "d.csv"
    p.write_text("Time [s],A\n0.000000000,0\n0.000001000,1\n0.000002000,0\n0.000001500,1\n0.000003,0\n")
    with pytest.raises(TraceError) as ei:
        read_saleae_csv(p)
    assert ei.value.code == "CSV_NON_MONOTONIC" and "row 5" in str(ei.value)
    assert ei.value.offset == len("Time [s],A\n0.000000000,0\n0.000001000,1\n0.000002000,0\n")
    tr = read_saleae_csv(p, on_corrupt="skip")
    assert tr.events["ts"].tolist() == [1000, 2000]
    assert tr.diagnostics[0].code == "CSV_NON_MONOTONIC"


def test_csv_bad_value_and_no_data(tmp_path: Path) -> None:
    p = tmp_path / "d.csv"
    p.write_text("Time [s],A,B\n0.0,0,X\n0.5,1,X\n1.0,2,1\n")
    with pytest.raises(TraceError, match="row 4") as ei:
        read_saleae_csv(p)
    assert ei.value.code == "CSV_BAD_ROW"
    tr = read_saleae_csv(p, on_corrupt="skip")
    assert tr.events["ts"].tolist() == [500_000_000]
    assert any(d.code == "CSV_BAD_ROW" and d.severity == Severity.NOTICE for d in tr.diagnostics)


def test_csv_negative_pretrigger_times(tmp_path: Path) -> None:
    p = tmp_path / "d.csv"
    p.write_text("Time [s],A\n-0.003922800,1\n-0.000000000,0\n0.000100000,1\n0.000200000,1\n")
    tr = read_saleae_csv(p)
    assert tr.events["ts"].tolist() == [0, 100_000]
    assert tr.events["ts_raw"].tolist() == [3_922_800, 4_022_800]
    assert tr.meta.origin_raw == 3_922_800
    tr = read_saleae_csv(p, samplerate=10_000_000)
    assert tr.meta.tick_hz == 10_000_000 and tr.events["ts_raw"].tolist() == [39_228, 40_228]


def test_vcd_backwards_time(tmp_path: Path) -> None:
    p = tmp_path / "b.vcd"
    write_vcd(p, ["a"], [0], [np.array([5, 9])], 20)
    p.write_text(p.read_text().replace("#9 ", "#3 "))
    with pytest.raises(TraceError) as ei:
        read_vcd(p)
    assert ei.value.code == "VCD_BAD_SYNTAX" and "#3" in str(ei.value)
    tr = read_vcd(p, on_corrupt="skip")
    assert tr.events["ts_raw"].tolist() == [5]


def test_vcd_names_with_spaces_x_and_junk(tmp_path: Path) -> None:
    p = tmp_path / "s.vcd"
    p.write_text("$timescale 1 us $end\n$scope module libsigrok $end\n$var wire 1 ! Pin 1 $end\n"
                 "$var wire 4 \" bus $end\n$upscope $end\n$enddefinitions $end\n#0 1! b0000 \"\n"
                 "A0: -0.47 V DC\n#3 x!\n#4 0!\n#7 1! b1111 \"\n#10\n")
    tr = read_vcd(p)
    assert [c.name for c in tr.channels] == ["Pin 1"]
    assert tr.events["ts_raw"].tolist() == [4, 7]
    assert tr.meta.tick_hz == 1_000_000 and tr.meta.extra["total_samples"] == 10
    msgs = " ".join(d.message for d in tr.diagnostics)
    assert "multi-bit" in msgs and "not VCD" in msgs and "'x'/'z'" in msgs


def test_saleae_binary_truncated(tmp_path: Path) -> None:
    p = tmp_path / "digital_0.bin"
    write_saleae_binary_v0(p, 0, np.array([0.1, 0.2, 0.3, 0.4]), 0.0, 1.0)
    p.write_bytes(p.read_bytes()[:-12])
    with pytest.raises(TraceError) as ei:
        read_saleae_binary(p)
    assert ei.value.code == "SALEAE_BAD_BINARY" and "expected 4 transition times" in str(ei.value)
    tr = read_saleae_binary(p, on_corrupt="skip")
    assert tr.events["ts"].tolist() == [100_000_000, 200_000_000]


def test_saleae_binary_rejects_sal_channel_file(tmp_path: Path) -> None:
    p = tmp_path / "digital-0.bin"
    p.write_bytes(b"<SALEAE>" + (1).to_bytes(4, "little") + (100).to_bytes(4, "little") + bytes(40))
    with pytest.raises(TraceError) as ei:
        read_saleae_binary(p)
    assert ei.value.code == "SALEAE_UNSUPPORTED"


def levels_of_dsl() -> np.ndarray:
    levels = np.zeros(40_000_000, np.int8)
    for a in range(1_000_003, 40_000_000, 3_000_017):
        levels[a:a + 777_777] = 1
    return levels


def _dsl(tmp_path: Path, drop: str = "") -> Path:
    header = ("[version]\nversion = 2\n[header]\ndriver = virtual-session\ndevice mode = 0\n"
              "capturefile = data\ntotal samples = 40000000\ntotal probes = 2\ntotal blocks = 3\n"
              "samplerate = 10 MHz\ntrigger time = 0\ntrigger pos = 7\nprobe0 = clk\nprobe1 = d\n")
    planes = np.packbits(levels_of_dsl().view(np.uint8), bitorder="little").tobytes()
    p = tmp_path / "c.dsl"
    blk = 1 << 21
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header", header)
        for ch in range(2):
            for b in range(3):
                name = f"L-{ch}/{b}"
                plane = planes[b * blk:(b + 1) * blk]
                if name != drop:
                    z.writestr(name, plane if ch == 0 else bytes(len(plane)))
    return p


def test_dsl_written_planes(tmp_path: Path) -> None:
    p = _dsl(tmp_path)
    tr = read_dsview(p)
    assert tr.meta.tick_hz == 10_000_000 and tr.meta.extra["total_samples"] == 40_000_000
    assert tr.meta.extra["trigger_pos"] == 7
    assert [c.name for c in tr.channels] == ["clk", "d"]
    assert int(np.count_nonzero(tr.events["marker"] == 1)) == 0
    want = np.flatnonzero(np.diff(levels_of_dsl()) != 0) + 1
    assert np.array_equal(tr.events["ts_raw"].astype(np.int64), want)


def test_dsl_missing_block(tmp_path: Path) -> None:
    full = read_dsview(_dsl(tmp_path))
    p = _dsl(tmp_path, drop="L-0/2")
    with pytest.raises(TraceError) as ei:
        read_dsview(p)
    assert ei.value.code == "DSL_BAD" and "L-0/2" in str(ei.value)
    tr = read_dsview(p, on_corrupt="skip")
    assert tr.meta.extra["channel_samples"] == {"clk": 2 << 24, "d": 40_000_000}
    assert np.array_equal(tr.events, full.events[full.events["ts_raw"] < 2 << 24])
    assert [d.code for d in tr.diagnostics] == ["DSL_BAD"] and "'d'" not in tr.diagnostics[0].message


def test_dsl_damaged_channel_keeps_the_others(tmp_path: Path) -> None:
    """Issue 15: one damaged block of one channel used to drop every channel to zero samples."""
    full = read_dsview(_dsl(tmp_path))
    p = _dsl(tmp_path, drop="L-1/0")  # the first block of channel 'd'
    tr = read_dsview(p, on_corrupt="skip")
    assert tr.meta.extra["channel_samples"] == {"clk": 40_000_000, "d": 0}
    assert tr.meta.extra["total_samples"] == 40_000_000
    assert len(full.events) > 0 and np.array_equal(tr.events, full.events)
    assert [d.code for d in tr.diagnostics] == ["DSL_BAD"] and "L-1/0" in tr.diagnostics[0].message


# -- fuzz: arbitrary damage gives a Trace or exactly one TraceError ---------------------------------

def _seed_files(tmp: Path) -> dict[str, tuple[bytes, object]]:
    sr = write_sr(tmp / "s.sr", samplerate=1000, channels=["a", "b"], edges=[[3, 9], [5]],
                  total_samples=20, chunk_bytes=8)
    vcd = tmp / "v.vcd"
    write_vcd(vcd, ["a", "b"], [0, 1], [np.array([3, 9]), np.array([5])], 20)
    csv = tmp / "c.csv"
    write_saleae_csv(csv, ["a", "b"], [0, 1], [np.array([3, 9]), np.array([5])], 20)
    binp = tmp / "digital_0.bin"
    write_saleae_binary_v0(binp, 1, np.array([0.1, 0.2]), 0.0, 1.0)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header", "[version]\nversion = 2\n[header]\ndevice mode = 0\ntotal samples = 20\n"
                   "total probes = 1\ntotal blocks = 1\nsamplerate = 1 kHz\nprobe0 = a\n")
        z.writestr("L-0/0", b"\xf0\x0f\x01")
    return {"sr": (sr.read_bytes(), read_sigrok), "vcd": (vcd.read_bytes(), read_vcd),
            "csv": (csv.read_bytes(), read_saleae_csv), "bin": (binp.read_bytes(), read_saleae_binary),
            "dsl": (buf.getvalue(), read_dsview)}


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict:
    return _seed_files(tmp_path_factory.mktemp("seeds"))


@pytest.mark.parametrize("fmt", ["sr", "vcd", "csv", "bin", "dsl"])
@given(data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzz_mutations(tmp_path: Path, seeds: dict, fmt: str, data) -> None:
    raw, reader = seeds[fmt]
    b = bytearray(raw)
    op = data.draw(st.sampled_from(["truncate", "flip", "insert", "random"]))
    if op == "truncate":
        b = b[: data.draw(st.integers(0, len(b)))]
    elif op == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(b) - 1))
            b[i] = data.draw(st.integers(0, 255))
    elif op == "insert":
        i = data.draw(st.integers(0, len(b)))
        b[i:i] = data.draw(st.binary(min_size=1, max_size=16))
    else:
        b = bytearray(data.draw(st.binary(max_size=200)))
    p = tmp_path / f"f.{fmt}"
    p.write_bytes(bytes(b))
    for policy in ("raise", "skip"):
        try:
            reader(p, on_corrupt=policy)
        except TraceError:
            pass
