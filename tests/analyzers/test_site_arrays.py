"""Site occurrences of a chunked analysis kept on disk (analyzers.site_arrays): the same arrays as
the in-memory search, read back on each access, in a folder that outlives the spill folder and
goes with the last array that reads from it."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzers import site_arrays
from analyzers.metrics import spill
from analyzers.run import analyze_chunks
from analyzers.sites import load_sites, reuse_site_events, site_events
from tests.analyzers.test_stream_analysis import Q
from trace_parsers import open_trace
from trace_parsers.chunked import slice_trace

TRACES = ("freertos/fft_workload/ref/trace.SVDat",  # SystemView marks
          "threadx/isr_latency/ref/trace.trx",  # TraceX user events
          "threadx/fft_workload-f2/ref/logic.sr")  # a logic capture's channels


def _chunked(trace: Any, size: int, store: Any = None) -> Any:
    return analyze_chunks(lambda: slice_trace(trace, size), load_sites(), store=store).site_events


def _assert_same(got: Any, want: Any) -> None:
    assert list(got.ts) == list(want.ts) and list(got.level) == list(want.level)
    for name in want.ts:
        assert got.count(name) == want.ts[name].size, name
        assert np.array_equal(got.ts[name], want.ts[name]), name
        assert np.array_equal(got.level[name], want.level[name]), name
    assert got.gaps == want.gaps and got.tick_ns == want.tick_ns and got.counts() == want.counts()


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("size", [3, 1000])
def test_on_disk_equals_in_memory(name: str, size: int, tmp_path: Path) -> None:
    trace = open_trace(Q / name)
    want = site_events(trace, load_sites())
    assert not want.empty
    with spill.spill_folder(tmp_path) as folder:
        got = _chunked(trace, size, spill.Spill(folder))
    assert isinstance(got.ts, site_arrays.SiteArrays)
    assert any(got.ts.on_disk(n) for n in got.ts)
    _assert_same(got, want)
    _assert_same(_chunked(trace, size), want)  # not spilling: held in memory, the same


def test_read_after_the_spill_folder_is_gone_then_removed(tmp_path: Path) -> None:
    """The cross-validation reads a trace's occurrences after its spill folder is removed; the
    sites' own folder goes when the last array reading from it does."""
    trace = open_trace(Q / TRACES[0])
    with spill.spill_folder(tmp_path) as folder:
        got = _chunked(trace, 7, spill.Spill(folder))
    assert not folder.exists()
    name = next(n for n in got.ts if got.ts.on_disk(n))
    with reuse_site_events():
        from analyzers.sites import seed_site_events

        seed_site_events(trace, load_sites(), got)
        shared = site_events(trace, load_sites())
    a = shared.times(name)
    assert a.size and not a.flags.writeable and shared.ts is not got.ts
    with pytest.raises(ValueError):
        a[0] = 0
    (kept,) = tmp_path.glob(".crosstrace-sites-*")
    del got, shared
    gc.collect()
    assert not kept.exists()


def test_a_cut_file_is_an_error(tmp_path: Path) -> None:
    folder = site_arrays.ScratchFolder(tmp_path)
    d = folder.write("x", [np.arange(10)], np.int64)
    d.path.write_bytes(d.path.read_bytes()[:-8])
    with pytest.raises(OSError, match="cut short"):
        site_arrays.SiteArrays({"x": d})["x"]


def test_sizes_answer_without_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = site_arrays.ScratchFolder(tmp_path)
    a = site_arrays.SiteArrays({"x": folder.write("x", [np.arange(5), np.arange(2)], np.int64)})

    def refuse(self: Any) -> None:
        raise AssertionError("read")

    monkeypatch.setattr(site_arrays.OnDisk, "load", refuse)
    assert a.size("x") == 7 and a.size("y") == 0 and site_arrays.size_of(a, "x") == 7
    assert site_arrays.size_of({"x": np.zeros(3)}, "x") == 3
