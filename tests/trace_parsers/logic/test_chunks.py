"""Chunked ``.sr`` reading (``trace_parsers.sigrok.chunks.iter_chunks``) equals the whole read exactly:
events, channels, meta and diagnostics, for every chunk size, on the committed captures and on
synthetic sessions whose member borders fall on an edge, one sample before and one after it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from trace_parsers import TraceError
from trace_parsers._edges import MAX_EDGES_ENV
from trace_parsers.sigrok import read_sigrok, write_sr
from trace_parsers.sigrok.chunks import iter_chunks

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = sorted((ROOT / "captures").glob("**/logic*.sr"))
SIZES = (1, 2, 3, 7, 1000)


def assert_chunks_equal(path: Path, sizes=SIZES, **kw) -> list:
    whole = read_sigrok(path, **kw)
    for n in sizes:
        chunks = list(iter_chunks(path, chunk_events=n, **kw))
        assert chunks, "at least one chunk"
        assert all(len(c) == n for c in chunks[:-1])
        assert 1 <= len(chunks[-1]) <= n or (len(whole) == 0 and len(chunks) == 1)
        events = np.concatenate([c.events for c in chunks])
        assert events.dtype == whole.events.dtype
        assert np.array_equal(events, whole.events), f"{path.name}, chunk_events={n}"
        assert all(c.meta == whole.meta for c in chunks)
        assert chunks[-1].meta.extra == whole.meta.extra
        assert all(c.channels == whole.channels for c in chunks)
        assert [d for c in chunks for d in c.diagnostics] == whole.diagnostics
    return chunks


def _pick(files: list[Path], k: int) -> list[Path]:
    step = max(1, len(files) // k)
    return files[::step][:k]


@pytest.mark.parametrize("path", _pick(CAPTURES, 6), ids=lambda p: str(p.relative_to(ROOT / "captures")))
def test_committed_captures_every_size(path: Path) -> None:
    assert_chunks_equal(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(ROOT / "captures")))
def test_all_committed_captures(path: Path) -> None:
    assert_chunks_equal(path, sizes=(3, 1000))


def test_captures_are_found() -> None:
    assert len(CAPTURES) >= 10


def _raw_sr(path: Path, members: list[bytes], *, unitsize: int, probes: dict[int, str],
            total_probes: int, rate: str | None = "1 MHz") -> Path:
    """A session whose ``logic-1-N`` members hold exactly the given bytes (any split, even mid-word)."""
    meta = ["[global]", "sigrok version=0.5.2", "", "[device 1]", "capturefile=logic-1",
            f"total probes={total_probes}"] + ([f"samplerate={rate}"] if rate else [])
    meta += [f"probe{n}={name}" for n, name in sorted(probes.items())] + [f"unitsize={unitsize}", ""]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("version", "2")
        z.writestr("metadata", "\n".join(meta))
        for k, m in enumerate(members, 1):
            z.writestr(f"logic-1-{k}", m)
    return path


def _split(data: bytes, sizes: list[int]) -> list[bytes]:
    out, pos = [], 0
    for s in sizes:
        out.append(data[pos:pos + s])
        pos += s
    return out + [data[pos:]]


@pytest.mark.parametrize("where", [-1, 0, 1], ids=["before", "on", "after"])
@pytest.mark.parametrize("unitsize", [1, 2, 3])
def test_member_border_at_an_edge(tmp_path: Path, where: int, unitsize: int) -> None:
    border = 16  # samples per member
    s = np.zeros(5 * border, np.uint64)
    for e in (border + where, 2 * border + where, 3 * border + where):  # every channel toggles
        s[e:] ^= 0b111
    s[4 * border + where:] ^= 0b001  # one channel only
    data = b"".join(int(v).to_bytes(unitsize, "little") for v in s)
    members = [data[i:i + border * unitsize] for i in range(0, len(data), border * unitsize)]
    p = _raw_sr(tmp_path / "b.sr", members, unitsize=unitsize, probes={1: "a", 2: "b", 3: "c"},
                total_probes=3)
    chunks = assert_chunks_equal(p)
    ts = np.concatenate([c.events["ts_raw"] for c in chunks])
    assert (border + where) in ts.tolist()  # the test exercises the border it claims to
    assert len(ts) == 10


def test_partial_words_across_members_and_masked_probes(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    words = np.repeat(rng.integers(0, 1 << 24, 400, dtype=np.uint64), rng.integers(1, 9, 400))
    data = b"".join(int(v).to_bytes(3, "little") for v in words)
    members = _split(data, [7, 5, 1, 0, 9, 3, 100])  # mid-word borders, an empty member
    p = _raw_sr(tmp_path / "p.sr", members, unitsize=3, total_probes=24,
                probes={n: f"D{n - 1}" for n in range(1, 25) if n % 5})  # probes 5, 10, ... disabled
    assert_chunks_equal(p)


def test_trailing_partial_word_and_rate_override(tmp_path: Path) -> None:
    data = bytes([0, 1, 1, 3, 2, 2, 0, 0, 1])
    p = _raw_sr(tmp_path / "t.sr", _split(data, [4]) + [b"\x00\x01"], unitsize=2,
                probes={1: "a", 2: "b"}, total_probes=2)
    chunks = assert_chunks_equal(p, samplerate=2_000_000)
    codes = [d.code for d in chunks[-1].diagnostics]
    assert "TRUNCATED" in codes and "BAD_OPTION" in codes


def test_no_edges_gives_one_empty_chunk(tmp_path: Path) -> None:
    p = write_sr(tmp_path / "c.sr", samplerate=1000, channels=["a"], edges=[[]], total_samples=5000)
    chunks = assert_chunks_equal(p)
    assert len(chunks) == 1 and len(chunks[0]) == 0
    assert chunks[0].meta.extra["total_samples"] == 5000


def test_exact_multiple_leaves_no_empty_tail(tmp_path: Path) -> None:
    p = write_sr(tmp_path / "m.sr", samplerate=1000, channels=["a"], edges=[[3, 5, 8, 13]],
                 total_samples=20)
    chunks = list(iter_chunks(p, chunk_events=2))
    assert [len(c) for c in chunks] == [2, 2]


def test_damaged_member_skip(tmp_path: Path) -> None:
    e = [np.arange(100, 200_000, 997), np.array([5, 150_000])]
    src = write_sr(tmp_path / "ok.sr", samplerate=1_000_000, channels=["a", "b"], edges=e,
                   initial=[0, 1], total_samples=200_000, chunk_bytes=16384)
    raw = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = z.getinfo("logic-1-5")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw[start + info.compress_size // 2] ^= 0xFF  # damage the middle of the 5th member's deflate data
    cut = tmp_path / "cut.sr"
    cut.write_bytes(bytes(raw))
    chunks = assert_chunks_equal(cut, on_corrupt="skip")
    assert any(d.code == "SR_TRUNCATED_CHUNK" for d in chunks[-1].diagnostics)
    with pytest.raises(TraceError) as whole:
        read_sigrok(cut)
    with pytest.raises(TraceError) as chunked:
        list(iter_chunks(cut, chunk_events=5))
    assert chunked.value.code == whole.value.code


def test_whole_read_limit_points_to_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write_sr(tmp_path / "l.sr", samplerate=1000, channels=["a", "b"],
                 edges=[np.arange(1, 3000, 2), np.arange(2, 3000, 3)], total_samples=3000)
    full = read_sigrok(p)
    monkeypatch.setenv(MAX_EDGES_ENV, "1000")
    with pytest.raises(TraceError) as err:
        read_sigrok(p)
    assert err.value.code == "LIMIT_EXCEEDED"
    assert "iter_chunks" in str(err.value) and "crosstrace events" in str(err.value)
    chunks = list(iter_chunks(p, chunk_events=600))  # no total limit in the chunked path
    assert np.array_equal(np.concatenate([c.events for c in chunks]), full.events)


def test_no_samplerate_is_refused_up_front(tmp_path: Path) -> None:
    p = _raw_sr(tmp_path / "n.sr", [b"\x00\x01"], unitsize=1, probes={1: "a"}, total_probes=1, rate=None)
    with pytest.raises(TraceError) as err:
        next(iter_chunks(p))
    assert err.value.code == "SR_NO_SAMPLERATE"
    assert_chunks_equal(p, sizes=(1,), samplerate="1 kHz")


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_bad_chunk_events(tmp_path: Path, bad: object) -> None:
    p = write_sr(tmp_path / "x.sr", samplerate=1000, channels=["a"], edges=[[1]], total_samples=5)
    with pytest.raises(ValueError, match="chunk_events"):
        next(iter_chunks(p, chunk_events=bad))
