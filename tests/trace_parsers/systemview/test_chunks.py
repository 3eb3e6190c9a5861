"""The chunked SystemView reader (systemview/chunks.py) gives exactly the whole read, in pieces.

For every input: the chunks' events put end to end equal ``read_systemview(...).events`` (every
column, same dtype); every chunk carries the whole read's metadata and side tables; each
diagnostic of the whole read is in exactly one chunk; damage raises the same error. Chunk sizes
1, 2, 3, 7 and 1000 events and read blocks down to 1 byte put the chunk and block borders at
every kind of packet (OVERFLOW, TASK_INFO, ISR enter/exit, marks, long strings, resyncs, the
ESP core bit, 3.60 multi-core offsets and per-core file pairs).
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import CAPTURES, corpus_dir
from trace_parsers import _core
from trace_parsers.model import Trace
from trace_parsers.systemview import chunks, decode, read_systemview
from trace_parsers.systemview.chunks import iter_chunks

from ._encoder import HEADER_OPENOCD
from .test_fast import HDR_ESP, _random_stream

pytestmark = pytest.mark.skipif(not hasattr(_core, "SvStreamDecoder"),
                                reason="compiled core without SvStreamDecoder (run `make build`)")

SIZES = (1, 2, 3, 7, 1000)


def _run(fn: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn()
        except Exception as e:  # the same error must come out of both readers
            return ("error", type(e).__name__, getattr(e, "code", None), str(e))


def _dkey(d: Any) -> tuple[Any, ...]:
    return (d.code, int(d.severity), d.offset, d.count, d.message)


def chunk_differences(whole: Any, parts: Any, chunk_events: int) -> list[str]:
    """What the chunks get wrong against the whole read; empty when they are exact."""
    if isinstance(whole, tuple) or isinstance(parts, tuple):
        return [] if whole == parts else [f"outcome {whole!r:.200} != {parts!r:.200}"]
    out: list[str] = []
    if not parts:
        return ["no chunk"]
    if any(len(c.events) > chunk_events for c in parts):
        out.append("a chunk is larger than chunk_events")
    if any(len(c.events) == 0 for c in parts[:-1]) or (len(parts) > 1 and not len(parts[-1].events)):
        out.append("an empty chunk among non-empty ones")
    ev = np.concatenate([c.events for c in parts])
    if ev.dtype != whole.events.dtype or ev.shape != whole.events.shape:
        return out + [f"events {ev.dtype} {ev.shape} != {whole.events.dtype} {whole.events.shape}"]
    for name in ev.dtype.names:
        if not np.array_equal(ev[name], whole.events[name]):
            i = np.flatnonzero(ev[name] != whole.events[name])[:3].tolist()
            out.append(f"column {name} rows {i}")
    last = parts[-1]
    if last.meta != whole.meta or last.meta.extra != whole.meta.extra:
        out.append("meta")
    for c in parts:
        for attr in ("tasks", "isrs", "markers", "channels", "strings"):
            if getattr(c, attr) != getattr(whole, attr):
                out.append(f"{attr} of a chunk")
    got = sorted(_dkey(d) for c in parts for d in c.diagnostics)
    if got != sorted(_dkey(d) for d in whole.diagnostics):
        out.append(f"diagnostics {len(got)} != {len(whole.diagnostics)}")
    return out


def _same(paths: Any, sizes: Any = SIZES, blocks: Any = (1 << 16,), combos: Any = (),
          **kw: Any) -> Any:
    """Compare the chunks of every (chunk size, block size) of ``sizes`` x ``blocks`` and of
    ``combos`` with the whole read."""
    whole = _run(lambda: read_systemview(paths, **kw))
    for ce, bb in [(c, b) for c in sizes for b in blocks] + list(combos):
        parts = _run(lambda ce=ce, bb=bb: list(iter_chunks(paths, chunk_events=ce, block_bytes=bb,
                                                           **kw)))
        assert chunk_differences(whole, parts, ce) == [], (paths, ce, bb)
    return whole


def _corpus() -> list[Path]:
    return sorted(corpus_dir("systemview").glob("*.[sS][vV][dD]at"))


def _pairs(files: list[Path]) -> list[list[Path]]:
    pairs: dict[str, list[Any]] = {}
    for p in files:  # ESP32 per-core file pairs read together
        stem = p.stem.lower()
        for i, ends in enumerate((("cpu0", "core0", "procpu"), ("cpu1", "core1", "appcpu"))):
            for e in ends:
                if stem.endswith(e):
                    pairs.setdefault(stem[: -len(e)], [None, None])[i] = p
    return [v for v in pairs.values() if all(v)]


@pytest.mark.parametrize("on_corrupt", ["raise", "warn"])
@pytest.mark.timeout(600)
def test_corpus_small_chunks(on_corrupt: str) -> None:
    files = [p for p in _corpus() if p.stat().st_size < 40_000]
    assert files
    for p in files:
        _same(p, sizes=(), combos=FILE_COMBOS, on_corrupt=on_corrupt)
    for v in _pairs(files):
        _same(v, sizes=(), combos=FILE_COMBOS[::2], on_corrupt=on_corrupt)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_corpus_all_chunk_sizes() -> None:
    files = _corpus()
    for p in files:
        _same(p, blocks=(4093,), on_corrupt="warn")
    for v in _pairs(files):
        _same(v, blocks=(4093,), on_corrupt="warn")


def test_corpus_large_files() -> None:
    for p in [p for p in _corpus() if p.stat().st_size >= 40_000]:
        _same(p, sizes=(), combos=((7, 1 << 22), (1000, 4093)), on_corrupt="warn")


@pytest.mark.timeout(600)
def test_captures() -> None:
    files = sorted(CAPTURES.rglob("*.[sS][vV][dD]at")) if CAPTURES.is_dir() else []
    if not files:
        pytest.skip("no .SVDat captures in captures/")
    for p in files:
        small = p.stat().st_size < 40_000
        _same(p, sizes=(), combos=((1, 1 << 16), (7, 97)) if small else ((1000, 1 << 16),))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_captures_all_chunk_sizes() -> None:
    """Chunks of 2 and 7 events: per RTOS the smallest and the largest SystemView capture (every capture
    is read in chunks by ``test_captures`` above; these tiny chunk sizes cost a pass per few events)."""
    files = sorted(CAPTURES.rglob("*.[sS][vV][dD]at")) if CAPTURES.is_dir() else []
    per_rtos: dict[str, list[Path]] = {}
    for p in files:
        per_rtos.setdefault(p.relative_to(CAPTURES).parts[1], []).append(p)
    sample = {f for fs in per_rtos.values() for f in (min(fs, key=_size), max(fs, key=_size))}
    for p in sorted(sample):
        _same(p, sizes=(2, 7), blocks=(4093,))


def _size(p: Path) -> int:
    return p.stat().st_size


def _cases(seed: int, tmp_path: Path) -> list[Any]:
    rnd = random.Random(seed)
    plain = _random_stream(rnd, init=seed % 5 != 4, shift=[2, 0, 40, 32][seed % 4])
    p = tmp_path / "raw.SVDat"
    p.write_bytes(plain)
    q = tmp_path / "hdr.SVDat"
    q.write_bytes(HEADER_OPENOCD + plain)
    e = tmp_path / "esp.SVDat"
    e.write_bytes(HDR_ESP + _random_stream(rnd, esp=True, cores=2))
    s0, s1 = _random_stream(rnd), _random_stream(rnd, n=50)
    m = tmp_path / "mc.SVDat"
    m.write_bytes(b";\n; Version     SEGGER SystemViewer V3.60\n; Offset Core0 0\n; Offset Core1 "
                  + str(len(s0)).encode() + b"\n;\n" + s0 + s1)
    a, b = tmp_path / "c0.svdat", tmp_path / "c1.svdat"
    a.write_bytes(HEADER_OPENOCD + s0)
    b.write_bytes(HEADER_OPENOCD + s1)
    dmg = bytearray(plain)  # damage: flipped bytes and a cut inside a packet
    for _ in range(3):
        dmg[rnd.randrange(20, len(dmg))] = rnd.randrange(256)
    d = tmp_path / "dmg.SVDat"
    d.write_bytes(bytes(dmg[: rnd.randrange(len(dmg) // 2, len(dmg))]))
    g = tmp_path / "garbage.SVDat"  # garbage between two syncs, then zero padding
    g.write_bytes(plain[:len(plain) // 2] + bytes([0xFF] * 40) + plain[10:] + bytes(30))
    cut = tmp_path / "lost.SVDat"  # 3.60 file cut before its second core
    cut.write_bytes(b";\n; Version     SEGGER SystemViewer V3.60\n; Offset Core0 0\n; Offset Core1 "
                    + str(len(s0) + 99).encode() + b"\n;\n" + s0)
    return [p, q, e, m, [a, b], d, g, cut]


#: (chunk events, block bytes): every chunk size, blocks from 1 byte (every packet split)
COMBOS = ((1, 1 << 16), (2, 5), (3, 1), (7, 64), (1000, 3), (1 << 22, 1 << 22))
#: the same for recordings of thousands of packets (blocks of a few hundred bytes)
FILE_COMBOS = ((1, 4093), (2, 97), (3, 1 << 16), (7, 31), (1000, 257))


@pytest.mark.parametrize("seed", range(4))
def test_synthetic(seed: int, tmp_path: Path) -> None:
    n = 0
    for i, c in enumerate(_cases(seed, tmp_path)):
        for oc in ("raise", "warn") if i >= 5 else ("warn",):  # 5..: damaged
            whole = _same(c, sizes=(), combos=COMBOS, on_corrupt=oc)
            n += 0 if isinstance(whole, tuple) else len(whole)
    assert n > 0


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", range(4, 8))
def test_synthetic_more(seed: int, tmp_path: Path) -> None:
    for c in _cases(seed, tmp_path):
        for oc in ("raise", "warn", "skip"):
            _same(c, sizes=(1, 2, 3, 7, 1000), blocks=(1, 64), on_corrupt=oc)


def test_streams_merge_like_the_whole_read(tmp_path: Path) -> None:
    """Two cores with equal timestamps in runs: the merge keeps the whole read's stable order."""
    cases = _cases(3, tmp_path)
    whole = read_systemview(cases[3], on_corrupt="warn")
    assert len({int(c) for c in whole.events["core"]}) == 2
    _same(cases[3], sizes=(1, 64), blocks=(3, 1 << 16), on_corrupt="warn")


def test_comparison_detects_faults(tmp_path: Path) -> None:
    """The checks above fail on a changed row, a repeated or lost diagnostic, wrong tables."""
    p = _cases(0, tmp_path)[5]
    whole = read_systemview(p, on_corrupt="skip")
    assert whole.diagnostics
    good = list(iter_chunks(p, chunk_events=7, block_bytes=5, on_corrupt="skip"))
    assert chunk_differences(whole, good, 7) == []

    def clone(c: Trace, **kw: Any) -> Trace:
        a = {"tasks": c.tasks, "isrs": c.isrs, "markers": c.markers,
             "diagnostics": c.diagnostics, "strings": c.strings, **kw}
        return Trace(kw.pop("events", c.events), c.meta, **{k: v for k, v in a.items() if k != "events"})

    ev = good[1].events.copy()
    ev["ctx_id"][0] += 1
    bad = [good[0], clone(good[1], events=ev)] + good[2:]
    assert "column ctx_id rows [7]" in chunk_differences(whole, bad, 7)
    dup = good[:-1] + [clone(good[-1], diagnostics=good[-1].diagnostics + whole.diagnostics[:1])]
    assert any(x.startswith("diagnostics") for x in chunk_differences(whole, dup, 7))
    lost = [clone(c, diagnostics=[]) for c in good]
    assert any(x.startswith("diagnostics") for x in chunk_differences(whole, lost, 7))
    notask = [clone(good[0], tasks=[])] + good[1:]
    assert "tasks of a chunk" in chunk_differences(whole, notask, 7)
    assert "a chunk is larger than chunk_events" in chunk_differences(whole, good, 6)


def test_reads_in_bounded_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No read of the file is larger than the header probe or ``block_bytes``."""
    p = tmp_path / "big.SVDat"
    rnd = random.Random(5)
    p.write_bytes(HEADER_OPENOCD + _random_stream(rnd, n=20_000))
    sizes: list[int] = []
    real_open = open

    class Spy:
        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *a: Any) -> None:
            self.f.close()

        def read(self, n: int = -1) -> bytes:
            sizes.append(n)
            return self.f.read(n)

        def seek(self, n: int) -> int:
            return self.f.seek(n)

        def fileno(self) -> int:
            return self.f.fileno()

    for mod in (chunks, decode):  # the header probe is decode.open_container's
        monkeypatch.setattr(mod, "open", lambda *a, **k: Spy(real_open(*a, **k)), raising=False)
    got = list(iter_chunks(p, chunk_events=1000, block_bytes=4096))
    assert len(got) > 5 and sizes
    assert all(0 <= n <= max(4096, decode.MAX_HEADER + 64) for n in sizes), max(sizes)
    assert p.stat().st_size > 2 * (decode.MAX_HEADER + 64)  # the file is larger than any read


def test_decoder_rejects_misuse() -> None:
    dec = _core.SvStreamDecoder(20)
    with pytest.raises(ValueError, match="stream has 20 bytes"):
        dec.feed(bytes(21))
    dec.feed(bytes(10) + b"\x0a\x00", False)
    with pytest.raises(ValueError, match="stream has 20 bytes"):
        dec.feed(b"\x00", True)  # `last` before the stream's end
    with pytest.raises(ValueError, match="chunk_events"):
        next(iter_chunks(__file__, chunk_events=0))
