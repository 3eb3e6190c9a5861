"""`crosstrace events` in chunks: the same content as the whole-trace export, whatever the chunks."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from analyzers.cli import main
from analyzers.export.events_table import write_events
from analyzers.stream import events as sev
from analyzers.stream.events import write_events_chunked
from tests.conftest import CAPTURES, corpus_dir
from trace_parsers import open_trace
from trace_parsers.chunked import iter_trace_chunks, slice_trace
from trace_parsers.model import Trace

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
        assert got.read_bytes() == ref.read_bytes()
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
    write_events_chunked(lambda: iter_trace_chunks(path, chunk_events=1), got)
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
