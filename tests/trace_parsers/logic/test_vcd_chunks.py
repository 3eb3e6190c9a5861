"""Chunked VCD reading (``trace_parsers.vcd.chunks.iter_chunks``) equals the whole read exactly:
events, meta, final channels and diagnostics, for every chunk size and for body blocks cut at every
line, on the corpus VCD, written captures and files with comments, junk, x/z, vectors and damage."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import CORPUS
from trace_parsers import TraceError
from trace_parsers.chunked import is_bounded, iter_trace_chunks
from trace_parsers.vcd import chunks as vcd_chunks
from trace_parsers.vcd import read_vcd
from trace_parsers.vcd.chunks import iter_chunks

from .writers import write_vcd

SIZES = (1, 2, 3, 7, 1000)
HEAD = "$timescale 1 us $end\n$scope module top $end\n$var wire 1 ! a $end\n$var wire 1 \" b $end\n"
ODD = {  # name -> body after the header (+ $enddefinitions)
    "comment_junk_xz_vector": (HEAD + "$var wire 8 # v $end\n$upscope $end\n$enddefinitions $end\n"
                               "$dumpvars 0! 1\" b0 # $end\n#5 1! x\"\n$comment hello\n#7 junk $end\n"
                               "#10 0! 1\" b1 \"\nanalog 1.5\n#12 z!\n#15 1!\n#15 0\" r1.5 #\n"
                               "#21 0!\n#22 1!"),
    "ties_across_lines": (HEAD + "$upscope $end\n$enddefinitions $end\n#0 0! 0\"\n#5 1\"\n#5 1!\n#5 0\"\n"
                          "#6\n#6 0!\n#9 1! 1\"\n#9\n"),
    "backwards": HEAD + "$upscope $end\n$enddefinitions $end\n#0 0! 0\"\n#5 1!\n#3 0!\n#9 1!\n",
    "open_comment": HEAD + "$upscope $end\n$enddefinitions $end\n#0 0!\n#5 1!\n$comment cut\n#9 1!\n",
    "undeclared": HEAD + "$upscope $end\n$enddefinitions $end\n#0 0!\n#5 1!\n#7 1%\n#9 0!\n",
    "no_edges": HEAD + "$upscope $end\n$enddefinitions $end\n#0 0! 1\"\n#5 0!\n#8\n",
    "one_line": HEAD + "$upscope $end\n$enddefinitions $end #0 0! #4 1! #6 0!",
}


def assert_chunks_equal(path: Path, sizes=SIZES, blocks=(1, 7, 64, vcd_chunks.BLOCK_BYTES), **kw) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # on_corrupt="warn"
        try:
            whole = read_vcd(path, **kw)
        except TraceError as e:
            for n in sizes:
                with pytest.raises(TraceError) as got:
                    list(iter_chunks(path, chunk_events=n, **kw))
                assert str(got.value) == str(e)
            return
        for b in blocks:
            for n in sizes:
                chunks = list(iter_chunks(path, chunk_events=n, block_bytes=b, **kw))
                assert all(len(c) == n for c in chunks[:-1])
                assert 1 <= len(chunks[-1]) <= n or (len(whole) == 0 and len(chunks) == 1)
                events = np.concatenate([c.events for c in chunks])
                assert np.array_equal(events, whole.events), f"{path.name}, chunk_events={n}, block={b}"
                assert all(c.meta == whole.meta for c in chunks)
                assert chunks[-1].meta.extra == whole.meta.extra
                assert chunks[-1].channels == whole.channels
                assert [d for c in chunks for d in c.diagnostics] == whole.diagnostics


@pytest.mark.parametrize("name", sorted(ODD))
@pytest.mark.parametrize("on_corrupt", ["raise", "warn"])
def test_odd_files(tmp_path: Path, name: str, on_corrupt: str) -> None:
    p = tmp_path / f"{name}.vcd"
    p.write_text(ODD[name])
    assert_chunks_equal(p, on_corrupt=on_corrupt)
    if on_corrupt == "warn":
        assert_chunks_equal(p, on_corrupt=on_corrupt, samplerate=300_000)


def test_written_capture_with_samplerate(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    edges = [np.unique(rng.integers(1, 5000, 300)) for _ in range(3)]
    p = tmp_path / "w.vcd"
    write_vcd(p, ["a", "b", "c"], [0, 1, 0], edges, 6000, timescale="10 ns")
    assert_chunks_equal(p, blocks=(1, 100, vcd_chunks.BLOCK_BYTES))
    assert_chunks_equal(p, sizes=(7, 1000), blocks=(100,), samplerate=33_000_000)  # rounding ties


def test_corpus_vcd() -> None:
    p = CORPUS / "logic" / "vcd_chronovu_la8_spi.vcd"
    if not p.is_file():
        pytest.skip("corpus VCD missing")
    assert_chunks_equal(p, blocks=(64, vcd_chunks.BLOCK_BYTES))


def test_dispatcher_reads_vcd_in_chunks(tmp_path: Path) -> None:
    p = tmp_path / "t.vcd"
    p.write_text(ODD["ties_across_lines"])
    assert is_bounded(p)
    got = list(iter_trace_chunks(p, chunk_events=2))
    whole = read_vcd(p)
    assert len(whole) == 6 and [len(c) for c in got] == [2, 2, 2]
    assert np.array_equal(np.concatenate([c.events for c in got]), whole.events)


def test_comparison_sees_ties_emitted_too_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: releasing the edges at the block's last time before the next block
    (whose first line may add a tie on an earlier channel) breaks the whole read's order."""
    p = tmp_path / "t.vcd"
    p.write_text(ODD["ties_across_lines"])
    monkeypatch.setattr(vcd_chunks._Chunker, "_cutoff", lambda self, now: now + 1)
    events = np.concatenate([c.events for c in iter_chunks(p, chunk_events=1000, block_bytes=1)])
    assert not np.array_equal(events, read_vcd(p).events)
