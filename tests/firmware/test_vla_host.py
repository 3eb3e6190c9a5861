"""Host side of the virtual logic analyzer: edge log decoding, GPIO/UART rebuilding, profiles, .sr writer."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "firmware" / "tools"))

from vla.convert import UART_CHANNEL, channels_from_log, write_profile  # noqa: E402
from vla.edgelog import MAGIC, RECORD, EdgeLogError, gpio_levels, read_edge_log, uart_waveform  # noqa: E402
from vla.profiles import PROFILES, Profile, end_sample, parse_profile, parse_rate, to_samples  # noqa: E402
from vla.sites import read_sites, status_pins  # noqa: E402
from vla.srzip import change_list, samplerate_string, write_sr  # noqa: E402

GPIOG, USART1 = 0x40021800, 0x40011000


def make_log(path: Path, stores: list[tuple[int, int, int, int]]) -> Path:
    """stores: (vt_ns, addr, value, size) -> a plugin-format edge log."""
    hdr = MAGIC + struct.pack("<6I", 1, RECORD.itemsize, GPIOG, 0x400, USART1, 0x400)
    recs = np.zeros(len(stores), RECORD)
    for i, (vt, addr, value, size) in enumerate(stores):
        recs[i] = (vt, vt, addr, value, size, 0 if 0 <= addr - GPIOG < 0x400 else 1, 0, b"\0" * 5)
    path.write_bytes(hdr + recs.tobytes())
    return path


def decode_sr(path: Path) -> tuple[list[str], int, np.ndarray]:
    """Independent minimal .sr reader: (probe names, samplerate string, samples as uint array)."""
    with zipfile.ZipFile(path) as z:
        meta = z.read("metadata").decode()
        kv = dict(
            line.split("=", 1) for line in meta.splitlines() if "=" in line and not line.startswith("#")
        )
        n = int(kv["total probes"])
        names = [kv[f"probe{i + 1}"] for i in range(n)]
        unit = int(kv["unitsize"])
        k, chunks = 1, []
        while f"logic-1-{k}" in z.namelist():
            chunks.append(z.read(f"logic-1-{k}"))
            k += 1
    data = np.frombuffer(b"".join(chunks), {1: np.uint8, 2: "<u2", 4: "<u4"}[unit])
    return names, kv["samplerate"], data


def edges_of(samples: np.ndarray, bit: int) -> np.ndarray:
    b = (samples >> bit) & 1
    return np.flatnonzero(np.diff(b.astype(np.int8))) + 1


# ---- edge log ------------------------------------------------------------------------------------------


def test_gpio_bsrr_odr_and_halfword_semantics(tmp_path):
    log = read_edge_log(
        make_log(
            tmp_path / "l.bin",
            [
                (100, GPIOG + 0x18, 1 << 2, 4),  # BSRR set PG2
                (150, GPIOG + 0x18, 1 << 2, 4),  # set again: no edge
                (200, GPIOG + 0x18, 1 << 18, 4),  # BSRR reset PG2
                (300, GPIOG + 0x14, 0x18, 4),  # ODR: PG3, PG4 high
                (400, GPIOG + 0x1A, 0x08, 2),  # BSRR upper halfword: reset PG3
                (500, GPIOG + 0x18, (1 << 4) | (1 << 20), 4),  # set and reset PG4 together: set wins, no edge
                (600, GPIOG + 0x15, 0x01, 1),  # ODR byte 1 -> PG8 high, low byte untouched
            ],
        )
    )
    levels, unknown = gpio_levels(log)
    assert unknown == 0
    assert levels[2].tolist() == [100, 200]
    assert levels[3].tolist() == [300, 400]
    assert levels[4].tolist() == [300]
    assert levels[8].tolist() == [600]


def test_edge_log_errors_name_file_and_offset(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"NOTVLA\0\0" + bytes(24))
    with pytest.raises(EdgeLogError, match=r"bad\.bin:0x0: expected magic"):
        read_edge_log(bad)
    short = tmp_path / "short.bin"
    short.write_bytes(MAGIC)
    with pytest.raises(EdgeLogError, match=r"short\.bin:0x0: expected a 32-byte VLA header"):
        read_edge_log(short)
    back = make_log(tmp_path / "back.bin", [(200, GPIOG + 0x18, 4, 4), (100, GPIOG + 0x18, 4 << 16, 4)])
    with pytest.raises(EdgeLogError, match=r"back\.bin:0x40: expected non-decreasing"):
        read_edge_log(back)


def test_truncated_record_is_counted_not_fatal(tmp_path):
    p = make_log(tmp_path / "t.bin", [(100, GPIOG + 0x18, 4, 4)])
    p.write_bytes(p.read_bytes() + b"\1\2\3")
    log = read_edge_log(p)
    assert len(log.records) == 1 and log.truncated_bytes == 3


# ---- UART waveform -------------------------------------------------------------------------------------


def test_uart_frame_bit_times_are_exact():
    edges, end = uart_waveform(np.array([1000]), np.array([0x55], np.uint8), 115200)
    # 0x55 LSB first = 1,0,1,0,...: start(0) then every bit alternates until the stop bit
    period = 1e9 / 115200
    expected = [int(1000 + k * period) for k in range(0, 10)]
    assert edges.tolist() == expected
    assert end == int(np.ceil(1000 + 10 * period))


def test_uart_frames_queue_back_to_back():
    t = np.array([0, 0, 0])
    edges, end = uart_waveform(t, np.array([0x00, 0x00, 0x00], np.uint8), 1_000_000)  # 1 us bits
    # each 0x00 frame: falls at start, rises at the stop bit (9 us later); frames follow each other
    assert edges.tolist() == [0, 9000, 10000, 19000, 20000, 29000]
    assert end == 30000


# ---- profiles ------------------------------------------------------------------------------------------


def test_ideal_profile_is_identity():
    t = np.array([5, 207, 10**10 + 3], np.int64)
    assert to_samples(t, PROFILES["ideal"]).tolist() == t.tolist()
    assert end_sample(1000, PROFILES["ideal"]) == 1001


def test_rate_and_ppm_quantisation():
    p = Profile("x", 100_000_000, ppm=50.0)
    t = np.array([0, 1, 10, 11, 1_000_000_000], np.int64)
    # n = ceil(t * 0.1 * 1.00005)
    assert to_samples(t, p).tolist() == [0, 1, 2, 2, 100_005_000]
    slow = Profile("y", 24_000_000, ppm=-30.0)
    s = to_samples(np.array([10**9]), slow)
    assert s.tolist() == [24_000_000 - 720]


def test_jitter_is_seeded_and_per_channel():
    p = Profile("j", 100_000_000, jitter_ns=5.0, seed=3)
    t = np.arange(0, 10**6, 997, dtype=np.int64)
    a, b = to_samples(t, p, 0), to_samples(t, p, 0)
    c = to_samples(t, p, 1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.all(np.diff(a) >= 0)
    assert np.max(np.abs(a - to_samples(t, Profile("n", 100_000_000)))) <= 5  # |jitter| small vs 10 ns


def test_parse_profile():
    assert parse_profile("la100") is PROFILES["la100"]
    p = parse_profile("mine:rate=24M,ppm=-20,jitter=1.5,seed=9")
    assert (p.name, p.samplerate, p.ppm, p.jitter_ns, p.seed) == ("mine", 24_000_000, -20.0, 1.5, 9)
    assert parse_rate("12.5kHz") == 12500 and parse_rate("1G") == 10**9
    with pytest.raises(ValueError, match="allowed values are ideal"):
        parse_profile("rate=1M,speed=3")
    with pytest.raises(ValueError, match="needs rate"):
        parse_profile("ppm=3")


# ---- .sr writer ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rate, text",
    [
        (10**9, "1 GHz"),
        (100_000_000, "100 MHz"),
        (24_000_000, "24 MHz"),
        (12_500, "12.5 kHz"),
        (1_234_567, "1.234567 MHz"),
        (3, "3 Hz"),
    ],
)
def test_samplerate_string(rate, text):
    assert samplerate_string(rate) == text


def test_change_list_merges_and_cancels():
    init, s, w = change_list([0, 1], [np.array([5, 9, 9]), np.array([7])], 100)
    assert init == 0b10
    # ch0 rises at 5; ch1 falls at 7; ch0 toggles twice at 9 -> no change at 9
    assert s.tolist() == [5, 7] and w.tolist() == [0b11, 0b01]
    init, s, w = change_list([0], [np.array([4, 4])], 100)  # a pulse shorter than a sample vanishes
    assert s.tolist() == [] and init == 0


def test_write_sr_roundtrip_chunks_and_determinism(tmp_path):
    rng = np.random.default_rng(0)
    edges = [np.sort(rng.choice(50_000, 40, replace=False)).astype(np.int64) for _ in range(10)]
    init = [0, 1] * 5
    names = [f"c{i}" for i in range(10)]
    a, b = tmp_path / "a.sr", tmp_path / "b.sr"
    info = write_sr(a, names, init, edges, 60_000, 1_000_000, comment=["hello"], chunk_bytes=8192)
    write_sr(b, names, init, edges, 60_000, 1_000_000, comment=["hello"], chunk_bytes=8192)
    assert a.read_bytes() == b.read_bytes()
    assert info["unitsize"] == 2 and info["entries"] == -(-60_000 * 2 // 8192)
    got_names, rate, data = decode_sr(a)
    assert got_names == names and rate == "1 MHz" and len(data) == 60_000
    for bit in range(10):
        assert int(data[0] >> bit) & 1 == init[bit]
        assert edges_of(data, bit).tolist() == edges[bit].tolist()
    with zipfile.ZipFile(a) as z:
        assert z.testzip() is None
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_constant_chunks_are_reused(tmp_path):
    out = tmp_path / "long.sr"
    write_sr(out, ["a"], [0], [np.array([10, 3_000_000_000], np.int64)], 3_000_000_100, 10**9)
    with zipfile.ZipFile(out) as z:
        sizes = {i.compress_size for i in z.infolist() if i.filename.startswith("logic-1-")}
    assert out.stat().st_size < 4_000_000  # 3 G samples in a few MB: every idle chunk is the same deflate
    assert len(sizes) <= 5


def test_sr_opens_in_sigrok_cli_with_same_edges(tmp_path):
    sigrok = shutil.which("sigrok-cli")
    if not sigrok:
        pytest.skip("sigrok-cli not installed")
    edges = [np.array([3, 10, 11, 500], np.int64), np.array([7], np.int64)]
    out = tmp_path / "s.sr"
    write_sr(out, ["ctx.yield", "uart.tx"], [0, 1], edges, 1000, 10**9, chunk_bytes=256)
    vcd = subprocess.run(
        [sigrok, "-i", str(out), "-O", "vcd"], capture_output=True, text=True, check=True
    ).stdout
    changes = {"!": [], '"': []}
    t = 0
    for line in vcd.splitlines():
        if line.startswith("#"):
            parts = line[1:].split()
            t = int(parts[0])
            for p in parts[1:]:
                if t:
                    changes[p[1:]].append(t)
    assert changes["!"] == [3, 10, 11, 500] and changes['"'] == [7]


# ---- converter -----------------------------------------------------------------------------------------


def test_channels_named_after_sites(tmp_path):
    sites = read_sites()
    status = status_pins()
    yield_pin = next(s.pin for s in sites if s.name == "ctx.yield")
    done_pin = next(p for p, n in status.items() if n == "status.done")
    spare = sites[-1]  # left out of the site table passed below: its pin is driven but named by no site
    sites = [s for s in sites if s is not spare]
    free_pin = spare.pin
    log = read_edge_log(
        make_log(
            tmp_path / "l.bin",
            [
                (100, GPIOG + 0x18, 1 << yield_pin, 4),
                (300, GPIOG + 0x18, 1 << (yield_pin + 16), 4),
                (350, GPIOG + 0x18, 1 << free_pin, 4),
                (400, GPIOG + 0x18, 1 << done_pin, 4),
                (500, USART1 + 4, 0x41, 1),
            ],
        )
    )
    cap = channels_from_log(log, sites)
    assert [c.name for c in cap.channels] == ["ctx.yield", "status.done", f"PG{free_pin}", UART_CHANNEL]
    assert cap.pins["ctx.yield"] == f"PG{yield_pin}" and cap.uart_data == b"A"
    info = write_profile(cap, PROFILES["ideal"], tmp_path / "x.sr")
    names, _, data = decode_sr(tmp_path / "x.sr")
    assert names == [c.name for c in cap.channels]
    assert edges_of(data, 0).tolist() == [100, 300]
    assert info["edges"]["uart.tx"] == len(cap.channels[-1].edges_ns) > 0
    assert cap.end_ns > 500 + 10 * 8680 and len(data) == cap.end_ns + 1


def test_read_sites_matches_header():
    text = (ROOT / "firmware" / "include" / "ct_sites.h").read_text()
    sites = read_sites()
    assert len(sites) == len(re.findall(r"^\s*X\(", text, re.M)) > 0  # every table row, nothing else
    assert len({s.pin for s in sites}) == len(sites) and len({s.name for s in sites}) == len(sites)
