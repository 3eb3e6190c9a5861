"""`crosstrace events` in chunks: the same content as the whole-trace export, whatever the chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from analyzers.cli import main
from analyzers.export import events_chunked as sev
from analyzers.export.events_chunked import write_events_chunked
from analyzers.export.events_table import write_events
from tests.conftest import CAPTURES, corpus_dir
from trace_parsers import open_trace
from trace_parsers.chunked import iter_trace_chunks, slice_trace
from trace_parsers.model import EVENT_COLUMNS, Trace

FILES = (
    ("systemview", "harinair_stm32f411_freertos_idlehook_raw.SVdat"),
    ("systemview", "espidf_esp32_heaplog_mcore_espext_2024.svdat"),
    ("systemview", "lilu_esp32_freertos_corrupt_procpu.SVDat"),
    ("tracex", "tracex-sample_demo_threadx.trx"),
)
CAPTURE = CAPTURES / "qemu_netduinoplus2" / "freertos" / "isr_latency" / "ref" / "trace.SVDat"


def _path(fmt: str, name: str) -> Path:
    return corpus_dir(fmt) / name


def assert_same_export(ref: Path, got: Path) -> None:
    """Same rows, schema, field and schema metadata (Parquet), or the same bytes (CSV)."""
    if ref.suffix == ".csv":
        # a flag, not the bytes: pytest would diff megabytes for the message (and in CI, where it
        # does not truncate, the faults below, which must fail this, take minutes)
        same = got.read_bytes() == ref.read_bytes()
        assert same, f"{got.name} differs from {ref.name}"
        return
    a, b = pq.read_table(ref), pq.read_table(got)
    assert b.schema.equals(a.schema, check_metadata=True)
    assert all(b.schema.field(n).metadata == a.schema.field(n).metadata for n in a.schema.names)
    assert b.equals(a, check_metadata=True)
    ka, kb = pq.read_metadata(ref).metadata, pq.read_metadata(got).metadata
    assert kb[b"crosstrace"] == ka[b"crosstrace"] and set(kb) == set(ka)


@pytest.mark.parametrize("fmt,name", FILES)
@pytest.mark.parametrize("size,suffix", [(2, ".csv"), (3, ".csv"), (7, ".csv"), (1000, ".csv"),
                                         (7, ".parquet"), (1000, ".parquet")])
def test_chunked_export_equals_the_whole_export(tmp_path: Path, fmt: str, name: str, size: int,
                                                suffix: str) -> None:
    path = _path(fmt, name)
    ref, got = tmp_path / f"ref{suffix}", tmp_path / f"got{suffix}"
    write_events(open_trace(path, on_corrupt="skip"), ref)
    n = write_events_chunked(lambda: iter_trace_chunks(path, chunk_events=size, on_corrupt="skip"), got)
    assert n == len(open_trace(path, on_corrupt="skip"))
    assert_same_export(ref, got)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_one_event_per_chunk(tmp_path: Path, suffix: str) -> None:
    path = _path("systemview", "espidf_esp32_blink_2018_cpu0.svdat")
    ref, got = tmp_path / f"ref{suffix}", tmp_path / f"got{suffix}"
    write_events(open_trace(path), ref)
    write_events_chunked(lambda: iter_trace_chunks(path, chunk_events=1), got, rows=1)
    assert_same_export(ref, got)
    if suffix == ".parquet":
        assert pq.read_metadata(got).num_row_groups == len(open_trace(path))


def _growing(trace: Trace, n: int):
    """A chunk reader whose side tables grow: no task or ISR is named before the last chunk."""
    chunks = list(slice_trace(trace, n))
    for i, c in enumerate(chunks):
        last = i == len(chunks) - 1
        yield Trace(c.events, c.meta, tasks=c.tasks if last else (), isrs=c.isrs if last else (),
                    markers=c.markers, channels=c.channels, diagnostics=c.diagnostics, strings=c.strings)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_names_learned_late_are_written_with_the_final_tables(tmp_path: Path, suffix: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    tr = open_trace(CAPTURE)
    ref, got, bad = (tmp_path / f"{k}{suffix}" for k in ("ref", "got", "bad"))
    write_events(tr, ref)
    passes = []
    write_events_chunked(lambda: passes.append(1) or _growing(tr, 500), got)
    assert len(passes) == 2  # the first pass's names were stale: read again
    assert_same_export(ref, got)
    # the fault the second pass exists for: without it the names of the early chunks are missing
    monkeypatch.setattr(sev._Names, "agree_with", lambda self, last: True)
    write_events_chunked(lambda: _growing(tr, 500), bad)
    with pytest.raises(AssertionError):
        assert_same_export(ref, bad)


def test_cli_chunked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref, got = tmp_path / "ref.parquet", tmp_path / "got.parquet"
    write_events(open_trace(CAPTURE), ref)
    assert main(["events", str(CAPTURE), "-o", str(got), "--chunk-events", "7"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {len(open_trace(CAPTURE))} events")
    assert_same_export(ref, got)
    assert pq.read_metadata(got).num_row_groups > 1


def test_a_failed_read_leaves_no_file(tmp_path: Path) -> None:
    tr = open_trace(CAPTURE)

    def failing():
        yield from slice_trace(tr, 100)
        raise RuntimeError("damage")

    out = tmp_path / "x.parquet"
    with pytest.raises(RuntimeError):
        write_events_chunked(failing, out)
    assert list(tmp_path.iterdir()) == []


def test_unsupported_output(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="unsupported output"):
        write_events_chunked(lambda: iter(()), tmp_path / "x.json")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("size,rows", [(2, 3), (7, 5), (3, 16), (16, 4), (1000, 7)])
def test_row_groups_gathered_across_chunks(tmp_path: Path, suffix: str, size: int, rows: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Row groups of ``rows`` events whatever the reader's chunks (borders inside chunks and
    inside name-column pieces): the same content as the whole export."""
    monkeypatch.setattr(sev, "PIECE", 2)
    path = _path("systemview", "espidf_esp32_heaplog_mcore_espext_2024.svdat")
    ref, got = tmp_path / f"ref{suffix}", tmp_path / f"got{suffix}"
    write_events(open_trace(path), ref)
    n = write_events_chunked(lambda: iter_trace_chunks(path, chunk_events=size), got, rows=rows)
    assert_same_export(ref, got)
    if suffix == ".parquet":
        md = pq.read_metadata(got)
        assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == \
            [rows] * (n // rows) + ([n % rows] if n % rows else [])


def _recording(tmp_path: Path, mb: float) -> Path:
    from bench.systemview import write_synthetic

    p = tmp_path / f"s{mb}.SVDat"
    write_synthetic(p, int(mb * 1_000_000))
    return p


def test_export_reads_small_chunks_into_full_row_groups(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory bound's two halves: the reader is asked for chunks of at most READ_EVENTS
    events, and the row groups have ``chunk_events`` rows with contiguous event columns (so the
    file does not depend on the reader's chunk size)."""
    import trace_parsers.chunked as chunked

    path = _recording(tmp_path, 0.2)
    asked, tables = [], []
    real_iter, real_write = chunked.iter_trace_chunks, sev._Sink.write

    def spy_iter(p, *, chunk_events, **kw):
        asked.append(chunk_events)
        for ch in real_iter(p, chunk_events=chunk_events, **kw):
            assert len(ch) <= chunk_events
            yield ch

    def spy_write(self, table):
        tables.append((table.num_rows, [table.column(c.name).num_chunks for c in EVENT_COLUMNS]))
        real_write(self, table)

    monkeypatch.setattr(chunked, "iter_trace_chunks", spy_iter)
    monkeypatch.setattr(sev._Sink, "write", spy_write)
    monkeypatch.setattr(sev, "READ_EVENTS", 1000)
    out = tmp_path / "a.parquet"
    n = sev.export_events(path, out, {}, chunk_events=4096)
    assert asked == [1000]
    assert [r for r, _ in tables] == [4096] * (n // 4096) + [n % 4096]
    assert all(chunks == [1] * len(EVENT_COLUMNS) for _, chunks in tables)
    md = pq.read_metadata(out)
    assert md.num_row_groups == len(tables) and md.num_rows == n > 10 * 4096
    # the same bytes as reading whole row groups at once
    monkeypatch.setattr(sev, "READ_EVENTS", 1 << 20)
    sev.export_events(path, tmp_path / "b.parquet", {}, chunk_events=4096)
    assert asked[-1] == 4096
    assert (tmp_path / "b.parquet").read_bytes() == out.read_bytes()


def _held_at_writes(path: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Largest NumPy/Python (tracemalloc) + Arrow memory held when a row group is written."""
    import tracemalloc

    import pyarrow as pa

    held = []
    real_write = sev._Sink.write

    def spy_write(self, table):
        held.append(tracemalloc.get_traced_memory()[0] + pa.total_allocated_bytes())
        real_write(self, table)

    monkeypatch.setattr(sev._Sink, "write", spy_write)
    tracemalloc.start()
    try:
        # blocks of 64 KiB: both recordings span many (the reader holds one block's columns)
        sev.export_events(path, out, {"block_bytes": 1 << 16}, chunk_events=8192)
    finally:
        tracemalloc.stop()
    return max(held)


def test_memory_held_does_not_grow_with_the_recording(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A recording 4x longer (same row groups) holds no more memory: nothing kept per chunk or
    per row group (measured at each write, when the row group's table is complete)."""
    monkeypatch.setattr(sev, "READ_EVENTS", 2048)
    short_path = _recording(tmp_path, 0.25)
    _held_at_writes(short_path, tmp_path / "s.parquet", monkeypatch)  # imports, caches: once
    short = _held_at_writes(short_path, tmp_path / "s.parquet", monkeypatch)
    long = _held_at_writes(_recording(tmp_path, 1.0), tmp_path / "l.parquet", monkeypatch)
    # one row group: 8192 x (51 B of columns + ~35 B of names) = 0.7 MB; the 4x longer stream
    # has ~170k more events, which kept at even 8 B each would add 1.4 MB
    assert long < short + (1 << 20), (short, long)


@pytest.mark.parametrize("ids", [[], [5], [-1, 3, 3, -1, 0], [7, 2**31 - 1, -2**31, 7],
                                 list(range(-3, 3000, 7)) * 2])
def test_unique_equals_numpy(ids: list[int]) -> None:
    a = np.array(ids, dtype=np.int32)
    uniq, inv = sev._unique(a)
    ref_uniq, ref_inv = np.unique(a, return_inverse=True)
    assert uniq.tolist() == ref_uniq.tolist() and inv.tolist() == ref_inv.ravel().tolist()


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_recording_without_events(tmp_path: Path, suffix: str) -> None:
    tr = open_trace(CAPTURE)
    empty = tr.select(np.zeros(len(tr), dtype=bool))
    ref, got = tmp_path / f"ref{suffix}", tmp_path / f"got{suffix}"
    write_events(empty, ref)
    assert write_events_chunked(lambda: slice_trace(empty, 5), got, rows=3) == 0
    # both type the name columns of no rows as string (tests/analyzers/export/test_events_table.py)
    assert_same_export(ref, got)
    if suffix == ".parquet":
        assert pq.read_table(got).num_rows == 0
        assert all(pq.read_schema(got).field(n).type == "string" for n in sev._NAME_COLUMNS)
