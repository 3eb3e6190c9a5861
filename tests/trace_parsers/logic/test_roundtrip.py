"""Property tests: random edge lists written by the .sr writer and the test-only VCD/Saleae writers
read back identical; sigrok-cli reads what write_sr writes."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import IN_CI
from trace_parsers import open_trace
from trace_parsers.model import EventKind
from trace_parsers.sigrok import read_sigrok, write_sr
from trace_parsers.sigrok.metadata import format_samplerate, parse_samplerate
from trace_parsers.sigrok.protocol import sigrok_cli

from .writers import write_saleae_binary_v0, write_saleae_binary_v1, write_saleae_csv, write_vcd


@st.composite
def captures(draw, max_channels: int = 12, max_total: int = 5000):
    n = draw(st.integers(1, max_channels))
    total = draw(st.integers(2, max_total))
    edges = []
    for _ in range(n):
        e = draw(st.lists(st.integers(1, total - 1), max_size=40, unique=True))
        edges.append(np.array(sorted(e), dtype=np.int64))
    initial = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    return n, total, edges, initial


def _read_back(tr, n: int) -> list[np.ndarray]:
    ev = tr.events
    out = []
    for ch in tr.channels[:n]:
        is_edge = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
        sel = is_edge & (ev["marker"] == ch.index)
        out.append(ev["ts_raw"][sel].astype(np.int64))
    return out


def _same(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
    return len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))


@given(cap=captures(), chunk=st.sampled_from([1, 7, 64, 4096]), rate=st.integers(1, 5_000_000_000))
@settings(max_examples=60, deadline=None)
def test_sr_roundtrip(tmp_path_factory, cap, chunk: int, rate: int) -> None:
    n, total, edges, initial = cap
    p = tmp_path_factory.mktemp("sr") / "c.sr"
    names = [f"ch {i}" for i in range(n)]
    write_sr(p, samplerate=rate, channels=names, edges=edges, initial=initial, total_samples=total,
             chunk_bytes=chunk)
    tr = read_sigrok(p)
    assert tr.meta.tick_hz == rate and tr.meta.extra["total_samples"] == total
    assert [c.name for c in tr.channels] == names
    assert [c.initial_level for c in tr.channels] == initial
    assert _same(_read_back(tr, n), edges)


@given(cap=captures(max_channels=64, max_total=300), unitsize=st.sampled_from([None, 3, 5, 8]))
@settings(max_examples=30, deadline=None)
def test_sr_roundtrip_wide_words(tmp_path_factory, cap, unitsize) -> None:
    n, total, edges, initial = cap
    if unitsize is not None and unitsize * 8 < n:
        unitsize = None
    p = tmp_path_factory.mktemp("sr") / "w.sr"
    write_sr(p, samplerate=1000, channels=[str(i) for i in range(n)], edges=edges, initial=initial,
             total_samples=total, unitsize=unitsize)
    tr = read_sigrok(p)
    assert tr.meta.extra["unitsize"] == (unitsize or (n + 7) // 8)
    assert _same(_read_back(tr, n), edges)
    assert [c.initial_level for c in tr.channels] == initial


@given(rate=st.integers(1, 10**12))
def test_samplerate_string_roundtrip(rate: int) -> None:
    s = format_samplerate(rate)
    assert parse_samplerate(s) == rate
    # libsigrok adds the fraction as a double and truncates: the string must survive that too
    whole, _, rest = s.partition(".")
    if rest:
        frac, unit = rest.split(" ")
        mult = {"kHz": 1e3, "MHz": 1e6, "GHz": 1e9}[unit]
        assert int(int(whole) * mult + float("0." + frac) * mult) == rate


@given(cap=captures(max_channels=6), scale=st.sampled_from(["1 ns", "10 ns", "100 ps", "1 us"]),
       dumpvars=st.booleans())
@settings(max_examples=60, deadline=None)
def test_vcd_roundtrip(tmp_path_factory, cap, scale: str, dumpvars: bool) -> None:
    n, total, edges, initial = cap
    p = tmp_path_factory.mktemp("vcd") / "c.vcd"
    write_vcd(p, [f"sig{i}" for i in range(n)], initial, edges, total, timescale=scale, dumpvars=dumpvars)
    tr = open_trace(p)
    assert tr.meta.source_format == "vcd"
    assert tr.meta.extra["total_samples"] == total
    assert [c.initial_level for c in tr.channels] == initial
    assert _same(_read_back(tr, n), edges)


@given(cap=captures(max_channels=6), start_ns=st.integers(-10**10, 10**10))
@settings(max_examples=60, deadline=None)
def test_saleae_csv_roundtrip(tmp_path_factory, cap, start_ns: int) -> None:
    n, total, edges, initial = cap
    p = tmp_path_factory.mktemp("csv") / "digital.csv"
    write_saleae_csv(p, [f"Channel {i}" for i in range(n)], initial, edges, total, start_ns=start_ns)
    tr = open_trace(p)
    assert tr.meta.source_format == "saleae_csv"
    assert [c.initial_level for c in tr.channels] == initial
    assert _same(_read_back(tr, n), edges)
    assert tr.meta.extra["total_samples"] == total
    if len(tr):  # ts keeps the CSV's origin: negative before the trigger
        assert int(tr.events["ts"][0]) == int(tr.events["ts_raw"][0]) + start_ns


@given(cap=captures(max_channels=3), begin_us=st.integers(-5000, 5000))
@settings(max_examples=40, deadline=None)
def test_saleae_binary_v0_roundtrip(tmp_path_factory, cap, begin_us: int) -> None:
    n, total, edges, initial = cap
    d = tmp_path_factory.mktemp("bin")
    rate = 1_000_000
    begin = begin_us / 1e6
    for i in range(n):
        write_saleae_binary_v0(d / f"digital_{i}.bin", initial[i], begin + edges[i] / rate, begin,
                               begin + total / rate)
    tr = open_trace(d / "digital_0.bin", samplerate=rate)
    assert tr.meta.source_format == "saleae_binary"
    assert _same(_read_back(tr, 1), edges[:1])
    from trace_parsers.saleae import read_saleae_binary
    tr = read_saleae_binary(d, samplerate=rate)
    assert [c.name for c in tr.channels] == [f"Channel {i}" for i in range(n)]
    assert [c.initial_level for c in tr.channels] == initial
    assert _same(_read_back(tr, n), edges)
    if len(tr):
        assert int(tr.events["ts"][0]) == (int(tr.events["ts_raw"][0]) + begin_us) * 1000


def test_saleae_binary_v1_chunks_and_gap(tmp_path) -> None:
    p = tmp_path / "digital_2.bin"
    write_saleae_binary_v1(p, [(1, 1e6, 0.0, 0.001, np.array([100e-6, 200e-6])),
                              (1, 1e6, 0.002, 0.003, np.array([2.5e-3]))])
    tr = open_trace(p)
    assert tr.meta.tick_hz == 1_000_000  # from the chunk rate
    assert tr.channels[0].name == "Channel 2" and tr.channels[0].initial_level == 1
    assert _read_back(tr, 1)[0].tolist() == [100, 200, 2500]
    assert tr.meta.extra["gaps_ns"] == [(1_000_000, 2_000_000)]
    assert any(d.severity.name == "DATA_LOSS" and "gap" in d.message for d in tr.diagnostics)


def test_saleae_binary_v1_level_change_in_gap(tmp_path) -> None:
    p = tmp_path / "digital_0.bin"
    write_saleae_binary_v1(p, [(0, 1e6, 0.0, 0.001, np.array([])), (1, 1e6, 0.002, 0.003, np.array([]))])
    tr = open_trace(p)
    assert _read_back(tr, 1)[0].tolist() == [2000]  # the level changed while nothing was recorded


# -- differential: sigrok-cli reads what write_sr writes -----------------------------------------

def _sigrok_vcd_edges(exe: str, path, names: list[str], rate: int) -> tuple[dict[str, list[int]], int]:
    out = subprocess.run([exe, "-i", str(path), "-O", "vcd"], capture_output=True, check=True,
                         timeout=120).stdout.decode()
    ids: dict[str, str] = {}
    scale = 1.0
    edges: dict[str, list[int]] = {n: [] for n in names}
    last: dict[str, str] = {}
    end = 0
    units = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}
    for line in out.splitlines():
        t = line.split()
        if not t:
            continue
        if t[0] == "$timescale":
            scale = int(t[1]) * units[t[2]]
        elif t[0] == "$var":
            ids[t[3]] = " ".join(t[4:-1])
        elif t[0].startswith("#"):
            s = round(int(t[0][1:]) * scale * rate)
            end = s
            for tok in t[1:]:
                n = ids[tok[1:]]
                if n in last and last[n] != tok[0]:
                    edges[n].append(s)
                last[n] = tok[0]
    return edges, end


@given(cap=captures(max_channels=9, max_total=3000),
       rate=st.sampled_from([1_000_000, 12_000_000, 2_400_000, 1_234_567, 200_000]))
@settings(max_examples=15, deadline=None)
def test_sigrok_cli_reads_writer_output(tmp_path_factory, cap, rate: int) -> None:
    exe = sigrok_cli()
    if exe is None:
        if IN_CI:
            pytest.fail("sigrok-cli is required in CI (make setup installs it)")
        pytest.skip("sigrok-cli not installed")
    n, total, edges, initial = cap
    names = [f"Pin {i}" for i in range(n)]
    p = tmp_path_factory.mktemp("cli") / "w.sr"
    write_sr(p, samplerate=rate, channels=names, edges=edges, initial=initial, total_samples=total,
             chunk_bytes=1000)
    show = subprocess.run([exe, "-i", str(p), "--show"], capture_output=True, check=True,
                          timeout=60).stdout.decode()
    assert f"Samplerate: {rate}" in show
    assert f"Logic sample count: {total}" in show
    got, end = _sigrok_vcd_edges(exe, p, names, rate)
    assert end == total
    for name, e in zip(names, edges):
        assert got[name] == e.tolist(), name


def test_stdlib_zlib_fallback(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without zlib-ng the reader and writer fall back to the standard zlib module."""
    import zlib

    from trace_parsers.sigrok import _zip, writer

    e = [np.array([3, 90_000, 90_001]), np.array([7])]
    fast = tmp_path / "fast.sr"
    write_sr(fast, samplerate=1000, channels=["a", "b"], edges=e, total_samples=100_000, chunk_bytes=4096)
    monkeypatch.setattr(_zip, "_fastzlib", zlib)
    monkeypatch.setattr(writer, "_fz", zlib)
    slow = tmp_path / "slow.sr"
    write_sr(slow, samplerate=1000, channels=["a", "b"], edges=e, total_samples=100_000, chunk_bytes=4096)
    for p in (fast, slow):
        tr = read_sigrok(p)
        assert _same(_read_back(tr, 2), e)


@pytest.mark.parametrize(("driver", "rate"), [("demo:logic_channels=8:analog_channels=0", 1_234_567),
                                              ("demo:logic_channels=16:analog_channels=0", 2_400_000),
                                              ("demo:logic_channels=12:analog_channels=2", 12_500)])
def test_differential_sigrok_demo_driver(tmp_path, driver: str, rate: int) -> None:
    """libsigrok 0.5.2's own srzip writer (one entry per datafeed packet) vs sigrok-cli -O vcd."""
    exe = sigrok_cli()
    if exe is None:
        if IN_CI:
            pytest.fail("sigrok-cli is required in CI (make setup installs it)")
        pytest.skip("sigrok-cli not installed")
    p = tmp_path / "demo.sr"
    subprocess.run([exe, "-d", driver, "--config", f"samplerate={rate}", "--samples", "30000", "-o",
                    str(p)], check=True, capture_output=True, timeout=120)
    tr = read_sigrok(p)
    names = [c.name for c in tr.channels]
    got, end = _sigrok_vcd_edges(exe, p, names, rate)
    assert tr.meta.tick_hz == rate and tr.meta.extra["total_samples"] == end == 30000
    back = _read_back(tr, len(names))
    for name, e in zip(names, back):
        assert got[name] == e.tolist(), name
    assert ("analog_channels=2" in driver) == any(d.code == "SR_ANALOG_SKIPPED" for d in tr.diagnostics)


@given(cap=captures(max_channels=120, max_total=2000), dumpvars=st.booleans())
@settings(max_examples=30, deadline=None)
def test_vcd_fast_and_general_parsers_agree(tmp_path_factory, cap, dumpvars: bool) -> None:
    """The vectorised body parser and the token loop give identical traces (ids up to 2 chars)."""
    import trace_parsers.vcd.reader as vcd_reader

    n, total, edges, initial = cap
    p = tmp_path_factory.mktemp("vcd") / "c.vcd"
    write_vcd(p, [f"s{i}" for i in range(n)], initial, edges, total, dumpvars=dumpvars)
    fast = open_trace(p)
    orig = vcd_reader._fast_body
    vcd_reader._fast_body = lambda body, ids, now=0: None
    try:
        slow = open_trace(p)
    finally:
        vcd_reader._fast_body = orig
    assert np.array_equal(fast.events, slow.events)
    assert fast.channels == slow.channels
    assert fast.meta.extra["total_samples"] == slow.meta.extra["total_samples"] == total


@given(words=st.lists(st.integers(0, 2**20 - 1), min_size=2, max_size=400),
       unitsize=st.sampled_from([3, 4, 8]), split=st.integers(1, 50))
@settings(max_examples=40, deadline=None)
def test_sr_samples_mode(tmp_path_factory, words: list[int], unitsize: int, split: int) -> None:
    """write_sr(samples=...) accepts raw words (also as several arrays); edges match the words."""
    w = np.array(words, dtype=np.uint64)
    p = tmp_path_factory.mktemp("sr") / "s.sr"
    write_sr(p, samplerate=48_000, channels=[f"b{i}" for i in range(20)], unitsize=unitsize,
             samples=[w[:split], w[split:]], chunk_bytes=64)
    tr = read_sigrok(p)
    assert tr.meta.extra["total_samples"] == len(words)
    for ch in tr.channels:
        bits = ((w >> np.uint64(ch.index)) & np.uint64(1)).astype(np.int8)
        assert ch.initial_level == bits[0]
        want = np.flatnonzero(bits[1:] != bits[:-1]) + 1
        assert np.array_equal(_read_back(tr, 20)[ch.index], want)
