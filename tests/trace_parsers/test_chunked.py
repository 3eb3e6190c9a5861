"""trace_parsers.chunked: chunks of a recording whose events put end to end are the whole read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import trace_parsers
from trace_parsers import chunked, open_trace
from trace_parsers.chunked import is_bounded, iter_trace_chunks, slice_trace
from trace_parsers.model import Trace, TraceMeta, empty_events

CORPUS_FILES = (
    ("systemview", "harinair_stm32f411_freertos_idlehook_raw.SVdat"),  # STM32 FreeRTOS
    ("systemview", "espidf_esp32_heaplog_mcore_espext_2024.svdat"),  # ESP32, two cores
    ("systemview", "lilu_esp32_freertos_corrupt_procpu.SVDat"),  # OVERFLOW rows, diagnostics
    ("tracex", "tracex-sample_demo_threadx.trx"),  # ThreadX TraceX
)


def assert_chunk_contract(path: Path, chunk_events: int, **kw: object) -> list[Trace]:
    """The contract of module ``trace_parsers.chunked`` for one file and chunk size."""
    whole = open_trace(path, **kw)
    chunks = list(iter_trace_chunks(path, chunk_events=chunk_events, **kw))
    assert chunks and all(0 < len(c) <= chunk_events for c in chunks[:-1])
    assert np.array_equal(np.concatenate([c.events for c in chunks]), whole.events)
    assert [d for c in chunks for d in c.diagnostics] == whole.diagnostics
    last = chunks[-1]
    for table in ("tasks", "isrs", "markers", "channels", "strings"):
        assert getattr(last, table) == getattr(whole, table), table
    assert all(c.meta == whole.meta for c in chunks)
    return chunks


@pytest.mark.parametrize("fmt,name", CORPUS_FILES)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_chunks_concatenate_to_the_whole_read(fmt: str, name: str, size: int) -> None:
    from tests.conftest import corpus_dir

    chunks = assert_chunk_contract(corpus_dir(fmt) / name, size, on_corrupt="skip")
    assert len(chunks) == -(-sum(len(c) for c in chunks) // size)


def test_logic_capture_chunks(logic_corpus: Path) -> None:
    assert_chunk_contract(logic_corpus / "uart_hello_115200_8n1.sr", 7)


@pytest.mark.parametrize("fault", ["lose_event", "repeat_diagnostics", "early_tables"])
def test_the_contract_check_fails_on_a_broken_reader(monkeypatch: pytest.MonkeyPatch, trx_corpus: Path,
                                                      fault: str) -> None:
    original = chunked.slice_trace

    def broken(trace: Trace, n: int):
        for i, c in enumerate(original(trace, n)):
            ev = c.events[1:] if fault == "lose_event" and i == 1 else c.events
            diags = trace.diagnostics if fault == "repeat_diagnostics" else c.diagnostics
            tasks = trace.tasks[:1] if fault == "early_tables" else c.tasks
            yield Trace(ev, c.meta, tasks=tasks, isrs=c.isrs, markers=c.markers, channels=c.channels,
                        diagnostics=diags, strings=c.strings)

    monkeypatch.setattr(chunked, "slice_trace", broken)
    with pytest.raises(AssertionError):
        assert_chunk_contract(trx_corpus / "tracex-sample_demo_threadx.trx", 100)


def test_empty_trace_is_one_empty_chunk() -> None:
    tr = Trace(empty_events(0), TraceMeta("x"))
    assert [len(c) for c in slice_trace(tr, 5)] == [0]


def test_diagnostics_only_in_the_first_sliced_chunk() -> None:
    from trace_parsers.model import Diagnostic, Severity

    d = Diagnostic("X", Severity.NOTICE, 0, 1, "m")
    tr = Trace(empty_events(5), TraceMeta("x"), diagnostics=[d])
    assert [c.diagnostics for c in slice_trace(tr, 2)] == [[d], [], []]


@pytest.mark.parametrize("bad", [0, -1])
def test_chunk_size_must_be_positive(bad: int) -> None:
    tr = Trace(empty_events(3), TraceMeta("x"))
    with pytest.raises(ValueError, match="chunk_events"):
        list(slice_trace(tr, bad))
    with pytest.raises(ValueError, match="chunk_events"):
        next(iter_trace_chunks("unused", chunk_events=bad))


def test_a_format_chunk_reader_is_used_and_reported(monkeypatch: pytest.MonkeyPatch,
                                                      trx_corpus: Path) -> None:
    path = trx_corpus / "tracex-sample_demo_threadx.trx"
    assert not is_bounded(path)  # TraceX: read whole and sliced
    seen = []

    def reader(p: Path, *, chunk_events: int, **kw: object):
        seen.append((Path(p), chunk_events, kw))
        yield from slice_trace(open_trace(p, **kw), chunk_events)

    monkeypatch.setattr(chunked, "_chunk_reader", lambda fmt: reader if fmt == "tracex" else None)
    assert is_bounded(path)
    chunks = list(iter_trace_chunks(path, chunk_events=500, on_corrupt="skip"))
    assert seen == [(path, 500, {"on_corrupt": "skip"})] and len(chunks) == 2


def test_exported_lazily() -> None:
    assert trace_parsers.iter_trace_chunks is iter_trace_chunks


def test_docstring_example() -> None:
    import doctest

    res = doctest.testmod(chunked)
    assert res.attempted > 0 and res.failed == 0
