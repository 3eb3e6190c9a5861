"""Saleae CSV and binary exports state no sample rate (CSV, binary v0): the readers assume none.

Issue 14: they silently counted in 1 GHz "samples". Now times are kept in ns as written, the
missing rate is explicit (``meta.extra["samplerate"] is None``, a ``SALEAE_NO_SAMPLERATE`` notice
with the byte offset) and ``samplerate=`` / ``crosstrace --samplerate`` counts in samples."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from analyzers.cli import main
from trace_parsers import open_trace, read_saleae_binary, read_saleae_csv
from trace_parsers.model import EventKind, Severity

CSV = ("Time [s],a,b\n"
       "0.000000000,0,0\n"
       "0.000000123,1,0\n"
       "0.000250001,1,1\n"
       "12345.123456789,0,1\n"
       "12345.200000000,0,1\n")
EDGE_NS = [123, 250_001, 12_345_123_456_789]  # exact: a float parse gives 12345123456788.999…


def _edges(tr) -> list[int]:
    ev = tr.events
    sel = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
    return ev["ts"][sel].tolist()


def _notice(tr):
    return [d for d in tr.diagnostics if d.code == "SALEAE_NO_SAMPLERATE"]


def test_csv_without_rate_keeps_exact_ns_and_says_so(tmp_path: Path) -> None:
    p = tmp_path / "digital.csv"
    p.write_text(CSV)
    tr = read_saleae_csv(p)
    assert _edges(tr) == EDGE_NS
    assert tr.meta.tick_hz == 1_000_000_000  # the time unit: ts_raw counts ns
    x = tr.meta.extra
    assert (x["samplerate"], x["sample_period_ns"]) == (None, None)
    assert x["total_samples"] == 12_345_200_000_000  # the span in ticks (ns)
    assert (x["samplerate_source"], x["time_resolution_ns"]) == (None, 1)
    (d,) = _notice(tr)
    assert d.severity == Severity.NOTICE and d.offset == len("Time [s],a,b\n")
    assert "no sample rate" in d.message and "9 decimals: 1 ns" in d.message


def test_csv_resolution_comes_from_the_decimals(tmp_path: Path) -> None:
    p = tmp_path / "digital.csv"
    p.write_text("Time [s],a\n0.000000,0\n0.000012,1\n0.000020,1\n")
    tr = read_saleae_csv(p)
    assert _edges(tr) == [12_000] and tr.meta.extra["time_resolution_ns"] == 1000
    assert "6 decimals: 1000 ns" in _notice(tr)[0].message


def test_csv_with_rate_counts_samples(tmp_path: Path) -> None:
    p = tmp_path / "digital.csv"
    p.write_text(CSV)
    tr = read_saleae_csv(p, samplerate=1_000_000)
    assert not _notice(tr)
    x = tr.meta.extra
    assert (tr.meta.tick_hz, x["samplerate"], x["samplerate_source"]) == (1_000_000, 1_000_000, "option")
    ev = tr.events
    sel = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
    assert ev["ts_raw"][sel].tolist() == [0, 250, 12_345_123_457]  # round(ns * rate / 1e9)
    assert x["total_samples"] == 12_345_200_000


def test_cli_samplerate_reaches_the_csv_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "digital.csv"
    p.write_text(CSV)
    assert main(["info", "--json", str(p)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["capture"]["samplerate"] is None
    assert [d["code"] for d in s["diagnostics"]] == ["SALEAE_NO_SAMPLERATE"]
    assert main(["info", "--json", "--samplerate", "1000000", str(p)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["capture"]["samplerate"] == 1_000_000 and s["diagnostics"] == []
    assert main(["info", str(p)]) == 0
    assert "sample rate not stated in the file" in capsys.readouterr().out


def _v0(path: Path, initial: int, begin: float, end: float, times: list[float]) -> Path:
    """Version 0 digital export (logic-captures.md §5.2): header, then n float64 seconds at 44."""
    path.write_bytes(b"<SALEAE>" + struct.pack("<iiIddQ", 0, 0, initial, begin, end, len(times))
                     + np.asarray(times, "<f8").tobytes())
    return path


def _v1(path: Path, rate: float, begin: float, end: float, times: list[float]) -> Path:
    path.write_bytes(b"<SALEAE>" + struct.pack("<iiQ", 1, 0, 1) + struct.pack("<IdddQ", 0, rate, begin, end,
                                                                              len(times))
                     + np.asarray(times, "<f8").tobytes())
    return path


def test_binary_v0_states_no_rate(tmp_path: Path) -> None:
    p = _v0(tmp_path / "digital_0.bin", 0, -0.001, 0.002, [-0.0005, 0.000000123, 0.0015])
    tr = open_trace(p)
    assert tr.meta.source_format == "saleae_binary" and tr.meta.tick_hz == 1_000_000_000
    assert _edges(tr) == [-500_000, 123, 1_500_000]  # begin_time is the origin offset
    x = tr.meta.extra
    assert (x["samplerate"], x["samplerate_source"], x["total_samples"]) == (None, None, 3_000_000)
    (d,) = _notice(tr)
    assert d.offset == 16 and "v0 export" in d.message and "Channel 0" in d.message


def test_binary_v0_with_rate(tmp_path: Path) -> None:
    p = _v0(tmp_path / "digital_0.bin", 1, 0.0, 0.002, [0.0005, 0.0015])
    tr = read_saleae_binary(p, samplerate=1_000_000)
    assert not _notice(tr)
    assert (tr.meta.tick_hz, tr.meta.extra["samplerate_source"]) == (1_000_000, "option")
    assert _edges(tr) == [500_000, 1_500_000] and tr.meta.extra["total_samples"] == 2000


def test_binary_v1_rate_from_the_file(tmp_path: Path) -> None:
    tr = read_saleae_binary(_v1(tmp_path / "digital_0.bin", 2e6, 0.0, 0.001, [0.0001, 0.0002]))
    assert not _notice(tr)
    x = tr.meta.extra
    assert (tr.meta.tick_hz, x["samplerate"], x["samplerate_source"]) == (2_000_000, 2_000_000, "file")


def test_binary_channels_with_different_rates(tmp_path: Path) -> None:
    _v1(tmp_path / "digital_0.bin", 2e6, 0.0, 0.001, [0.0001])
    _v1(tmp_path / "digital_1.bin", 5e6, 0.0, 0.001, [0.0002])
    tr = read_saleae_binary(tmp_path)
    (d,) = _notice(tr)
    assert "different sample rates (2e+06, 5e+06 Hz)" in d.message
    assert tr.meta.extra["samplerate"] is None and _edges(tr) == [100_000, 200_000]
