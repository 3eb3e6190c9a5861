"""UART decoding through libsigrokdecode (sigrok-cli) and the NumPy cross-check, against facts.json."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import IN_CI, corpus_dir, corpus_facts
from trace_parsers import TraceError, open_trace
from trace_parsers.sigrok.protocol import decode_uart, sigrok_cli, uart_from_edges
from trace_parsers.sigrok.writer import write_sr

from .writers import write_saleae_csv, write_vcd

SLOW = {"uart_amulet_bootup_10mhz.sr", "dslogic_demo_uart_40mhz.dsl"}


def _uart_cases(slow: set[str] = SLOW) -> list:
    try:
        facts = corpus_facts("logic")
    except pytest.skip.Exception:
        return []
    out = []
    for name, f in facts.items():
        for u in f.get("uart", []) if not name.startswith("_") else []:
            baud = int(u["options"].split("baudrate=")[1].split()[0])
            marks = [pytest.mark.slow] if name in slow else []
            out.append(pytest.param(name, u["channel"], baud, u, marks=marks, id=f"{name}-{u['channel']}"))
    return out


@pytest.fixture
def cli() -> str:
    exe = sigrok_cli()
    if exe is None:
        if IN_CI:
            pytest.fail("sigrok-cli is required in CI (make setup installs it)")
        pytest.skip("sigrok-cli not installed")
    return exe


def _byte_ascii_hex(data: bytes) -> str:
    return data[:32].hex(" ")


@pytest.mark.parametrize(("name", "channel", "baud", "uf"), _uart_cases())
def test_uart_sigrok_matches_facts(cli: str, name: str, channel: str, baud: int, uf: dict) -> None:
    res = decode_uart(corpus_dir("logic") / name, channel=channel, baud=baud)
    assert res.backend == "sigrok-cli"
    assert len(res.data) == uf["bytes_total"]
    assert _byte_ascii_hex(res.data) == uf["first32_hex"]
    ss, es = (int(x) for x in uf["first_byte_samples"].split("-"))
    assert res.samples[0].tolist() == [ss, es]
    assert res.ts_ns.dtype == np.int64 and len(res.ts_ns) == len(res.data)
    assert np.all(np.diff(res.ts_ns) > 0)


@pytest.mark.parametrize(("name", "channel", "baud", "uf"), _uart_cases({"uart_amulet_bootup_10mhz.sr"}))
def test_uart_numpy_cross_check(name: str, channel: str, baud: int, uf: dict) -> None:
    res = decode_uart(corpus_dir("logic") / name, channel=channel, baud=baud, backend="numpy")
    assert res.backend == "numpy"
    assert len(res.data) == uf["bytes_total"]
    assert _byte_ascii_hex(res.data) == uf["first32_hex"]
    ss, es = (int(x) for x in uf["first_byte_samples"].split("-"))
    assert res.samples[0].tolist() == [ss, es]


def test_uart_byte_times_are_start_bit_edges(cli: str) -> None:
    p = corpus_dir("logic") / "uart_hello_115200_8n1.sr"
    sig = decode_uart(p, channel="TX", baud=115200)
    npy = decode_uart(p, channel="TX", baud=115200, backend="numpy")
    assert sig.data == npy.data
    tr = open_trace(p)
    falls = tr.events["ts"][(tr.events["kind"] == 12)]
    assert set(npy.ts_ns.tolist()) <= set(falls.tolist())
    # sigrok's start-bit annotation begins within one sample (1 µs) of the falling edge
    assert np.all(np.abs(sig.ts_ns - npy.ts_ns) <= 1000)


def test_uart_glitch_reports_frame_error(cli: str) -> None:
    res = decode_uart(corpus_dir("logic") / "uart_glitches_2mhz.sr", channel="TX", baud=115200)
    assert res.data == bytes([0x4F, 0x4B, 0x85])
    assert [e.kind for e in res.errors] == ["Frame error"]
    npy = decode_uart(corpus_dir("logic") / "uart_glitches_2mhz.sr", channel="TX", baud=115200,
                      backend="numpy")
    # NumPy reports the sample point, sigrok the annotation start half a bit (8.7 samples) earlier
    assert len(npy.errors) == 1 and 0 <= npy.errors[0].sample - res.errors[0].sample <= 9


def test_uart_channel_by_index(cli: str) -> None:
    p = corpus_dir("logic") / "uart_counter_19200_8n1.sr"
    by_name = decode_uart(p, channel="tx", baud=19200)
    tr = open_trace(p)
    idx = next(c.index for c in tr.channels if c.name == "tx")
    assert decode_uart(p, channel=idx, baud=19200).data == by_name.data


def _uart_edges(data: bytes, bit: int, start: int, gap: int) -> tuple[np.ndarray, int]:
    """Edges of an 8N1 idle-high line carrying ``data``, ``bit`` samples per bit."""
    levels: list[int] = []
    for b in data:
        levels += [0] + [(b >> i) & 1 for i in range(8)] + [1] * (1 + gap)
    samples = np.repeat(np.array([1] * start + levels, np.int8), bit)
    e = np.flatnonzero(samples[1:] != samples[:-1]) + 1
    return e, samples.size


@pytest.mark.parametrize("fmt", ["sr", "vcd", "csv"])
def test_uart_any_format(cli: str, tmp_path, fmt: str) -> None:
    msg = b"CT fft.duration 12345 ns\r\n"
    e, total = _uart_edges(msg, 10, 7, 2)
    rate, baud = 100_000, 10_000
    if fmt == "sr":
        p = write_sr(tmp_path / "u.sr", samplerate=rate, channels=["gpio", "uart tx"],
                     edges=[np.array([3, 50]), e], initial=[0, 1], total_samples=total)
        kw = {}
    elif fmt == "vcd":
        p = tmp_path / "u.vcd"
        write_vcd(p, ["gpio", "uart_tx"], [0, 1], [np.array([3, 50]), e], total, timescale="10 us")
        kw = {}
    else:
        p = tmp_path / "u.csv"
        ns = e * (1_000_000_000 // rate)
        write_saleae_csv(p, ["gpio", "uart tx"], [0, 1], [np.array([300]), ns], total * 10_000)
        kw = {}
    name = "uart_tx" if fmt == "vcd" else "uart tx"
    res = decode_uart(p, channel=name, baud=baud, **kw)
    assert res.data == msg
    npy = decode_uart(p, channel=name, baud=baud, backend="numpy", **kw)
    assert npy.data == msg
    # byte times are in the trace's ts timebase: first start bit at sample 70 = 70 / rate s
    assert abs(int(res.ts_ns[0]) - 70 * 1_000_000_000 // rate) <= 1_000_000_000 // rate


def test_uart_from_edges_parity_and_msb() -> None:
    # 0x53 with even parity, MSB first, 4 samples/bit
    v = 0x53
    bits = [(v >> (7 - i)) & 1 for i in range(8)]
    par = sum(bits) % 2
    levels = [1, 1] + [0] + bits + [par] + [1, 1]
    s = np.repeat(np.array(levels), 4)
    e = np.flatnonzero(s[1:] != s[:-1]) + 1
    r = uart_from_edges(1, e, 4000, 1000, parity="even", bit_order="msb-first", total_samples=s.size)
    assert r.data == bytes([v]) and not r.errors
    r = uart_from_edges(1, e, 4000, 1000, parity="odd", bit_order="msb-first", total_samples=s.size)
    assert [x.kind for x in r.errors] == ["Parity error"]


def test_decoder_missing(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("CROSSTRACE_SIGROK_CLI", str(tmp_path / "no-such-sigrok-cli"))
    p = write_sr(tmp_path / "x.sr", samplerate=1000, channels=["a"], edges=[[5]], total_samples=10)
    with pytest.raises(TraceError) as ei:
        decode_uart(p, channel="a", baud=100)
    assert ei.value.code == "DECODER_MISSING"
    assert "make setup" in str(ei.value)


def test_bad_channel_lists_choices(tmp_path) -> None:
    p = write_sr(tmp_path / "x.sr", samplerate=1000, channels=["a", "b"], edges=[[5], []], total_samples=10)
    with pytest.raises(TraceError, match="'a', 'b'"):
        decode_uart(p, channel="zz", baud=100, backend="numpy")


def test_uart_lines_with_times(cli: str) -> None:
    res = decode_uart(corpus_dir("logic") / "uart_hello_115200_8n1.sr", channel="TX", baud=115200)
    lines = res.lines()
    assert [t for _, t in lines] == ["Hello World!"] * 3
    assert [ts for ts, _ in lines] == [int(res.ts_ns[0]), int(res.ts_ns[14]), int(res.ts_ns[28])]
