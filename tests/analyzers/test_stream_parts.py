"""``analyzers.metrics.spill.Parts``: the streamed analyzers' per-chunk arrays, in memory or on disk.

The chunked analysis must give the in-memory result whether its arrays are held in memory or
written to the spill folder as they come (tests/analyzers/test_stream_analysis.py compares the
former; here the latter, with chunk borders at every kind of event)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest import MonkeyPatch

from analyzers import site_arrays
from analyzers.metrics import spill
from analyzers.metrics import spill as sparts
from analyzers.metrics.spill import Parts
from analyzers.run import STREAMED, analyze_chunks
from analyzers.sites import load_sites
from tests.analyzers.test_stream_analysis import RECORDINGS, _kernel_trace, _path, _same, in_memory
from trace_parsers import open_trace
from trace_parsers.chunked import slice_trace
from trace_parsers.model import EVENT_DTYPE, empty_events


def _fill(p: Parts, rng: np.random.Generator, width: int | None) -> list[np.ndarray]:
    got = []
    for m in (3, 0, 1, 17, 5):
        a = rng.integers(-50, 50, size=(m,) if width is None else (width, m))
        got.append(a)
        p.append(a)
    return got


def _pair(tmp_path: Path, seed: int, width: int | None) -> tuple[Parts, Parts, list[np.ndarray]]:
    """The same arrays appended to a Parts in memory and to one on disk."""
    mem = Parts(width=width)
    arrays = _fill(mem, np.random.default_rng(seed), width)
    disk = Parts(width=width, store=spill.Spill(tmp_path))
    for a in arrays:
        disk.append(a)
    return mem, disk, arrays


@pytest.mark.parametrize("width", [None, 1, 4])
def test_on_disk_reads_back_as_in_memory(tmp_path: Path, width: int | None) -> None:
    mem, disk, arrays = _pair(tmp_path, 7, width)
    for p in (mem, disk):
        p.patch(np.array([0, 20]), -7, row=None if width is None else width - 1)
        p.patch(np.array([1]), 99, row=None if width is None else 0)
    assert disk.on_disk and not mem.on_disk
    assert list(tmp_path.iterdir())
    want = np.concatenate(arrays, axis=-1)
    if width is None:
        want[[0, 20]], want[1] = -7, 99
    else:
        want[width - 1, [0, 20]], want[0, 1] = -7, 99
    assert np.array_equal(mem.concat(), want) and np.array_equal(disk.concat(), want)
    assert len(disk) == len(mem) == want.shape[-1]


@pytest.mark.parametrize("pick", [[2], [3, 0], [1, 2, 3, 0]])
def test_selected_rows(tmp_path: Path, pick: list[int]) -> None:
    """``concat(rows=)`` reads the chosen rows only, patched (a patch of another row is not)."""
    rng = np.random.default_rng(3)
    mem = Parts(width=4)
    arrays = _fill(mem, rng, 4)
    disk = Parts(width=4, store=spill.Spill(tmp_path))
    for a in arrays:
        disk.append(a)
    want = np.concatenate(arrays, axis=1)
    for p in (mem, disk):
        p.patch(np.array([4, 9]), 55, row=3)
        p.patch(np.array([0]), -1, row=1)
    want[3, [4, 9]], want[1, 0] = 55, -1
    for p in (mem, disk):
        assert np.array_equal(p.concat(rows=pick), want[pick])
    with pytest.raises(ValueError, match="rows="):
        Parts().concat(rows=[0])


def test_a_kept_array_is_a_copy(tmp_path: Path) -> None:
    """Changing an array after appending it changes nothing (the old lists kept references)."""
    for folder in (None, tmp_path):
        p = Parts(store=spill.Spill(folder) if folder else None)
        a = np.arange(4)
        p.append(a)
        a[:] = 0
        assert p.concat().tolist() == [0, 1, 2, 3]


def test_event_rows_on_disk(tmp_path: Path) -> None:
    ev = empty_events(5)
    ev["ts"], ev["kind"], ev["value"] = np.arange(5) * 3, 7, -1
    p = Parts(dtype=EVENT_DTYPE, store=spill.Spill(tmp_path))
    p.append(ev[:2])
    p.append(ev[2:])
    assert p.concat().tobytes() == ev.tobytes()
    p.clear()
    assert not list(tmp_path.iterdir()) and p.concat().size == 0


def test_wrong_shapes_and_patches_are_refused(tmp_path: Path) -> None:
    p = Parts(width=3)
    with pytest.raises(ValueError, match="shape"):
        p.append(np.zeros((2, 4), np.int64))
    with pytest.raises(ValueError, match="shape"):
        p.append(np.zeros(4, np.int64))
    p.append(np.zeros((3, 2), np.int64))
    with pytest.raises(IndexError):
        p.patch(np.array([2]), 1, row=0)


def test_a_short_scratch_file_is_an_error(tmp_path: Path) -> None:
    p = Parts(width=2, store=spill.Spill(tmp_path))
    p.append(np.ones((2, 8), np.int64))
    path = next(tmp_path.iterdir())
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(OSError, match="shorter"):
        p.concat()


def assert_same_on_disk(trace: Any, size: int, folder: Path, ref: dict[str, Any] | None = None) -> None:
    """Spilled to ``folder`` in chunks of ``size`` events: the result of ``trace`` as one chunk in
    memory (``ref``, computed here if not given)."""
    sites = load_sites()
    ref = ref if ref is not None else in_memory(trace, sites)
    got = analyze_chunks(lambda: slice_trace(trace, size), sites, store=spill.Spill(folder))
    for name in STREAMED:
        table = got.results[name].table
        table = table.read() if spill.is_spilled(table) else table
        assert table.equals(ref[name].table), name
        assert _same(got.results[name].summary, ref[name].summary), name


@pytest.mark.parametrize("size", [3, 1000])
@pytest.mark.parametrize("folder,name", RECORDINGS)
def test_chunked_analysis_on_disk_equals_in_memory(tmp_path: Path, folder: str | None, name: str,
                                                   size: int) -> None:
    trace = open_trace(_path(folder, name), on_corrupt="skip")
    ref = in_memory(trace, load_sites())  # in memory: before the appends are counted
    written: list[int] = []
    real = Parts.append

    def counted(self: Parts, a: Any) -> int:
        out = real(self, a)
        written.append(int(self.on_disk))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Parts, "append", counted)
        assert_same_on_disk(trace, size, tmp_path, ref)
    assert written and all(written)  # every analyzer's arrays went to disk


@pytest.mark.parametrize("size", [1, 2, 5])
def test_every_carried_state_on_disk(tmp_path: Path, size: int) -> None:
    assert_same_on_disk(_kernel_trace(), size, tmp_path)


@pytest.mark.parametrize("recording", [0, 4])
def test_a_lost_patch_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recording: int) -> None:
    """Answers patched in after their array went to disk (ISR exits, next switch-ins in a later
    chunk) must reach the result: dropping them fails the comparison."""
    folder, name = RECORDINGS[recording]
    trace = open_trace(_path(folder, name), on_corrupt="skip")
    monkeypatch.setattr(sparts.Parts, "patch", lambda self, *a, **k: None)
    with pytest.raises(AssertionError):
        assert_same_on_disk(trace, 3, tmp_path)


@pytest.mark.parametrize("width,pick", [(None, None), (4, None), (4, [3, 1])])
def test_column_ranges(tmp_path: Path, width: int | None, pick: list[int] | None) -> None:
    """``concat(cols=(lo, hi))`` is ``concat()[..., lo:hi]``, patches included, for ranges inside
    one block, across block borders, empty and past the end."""
    mem, disk, _ = _pair(tmp_path, 11, width)
    for p in (mem, disk):
        p.patch(np.array([2, 4, 21]), 77, row=None if width is None else 3)
    for p in (mem, disk):
        whole = p.concat(rows=pick)
        for lo, hi in [(0, 26), (0, 3), (2, 5), (3, 4), (4, 21), (20, 26), (7, 7), (25, 99), (30, 40)]:
            assert np.array_equal(p.concat(rows=pick, cols=(lo, hi)), whole[..., lo:hi]), (lo, hi)


@pytest.mark.parametrize("folder,name", RECORDINGS)
def test_series_made_in_small_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str | None,
                                      name: str) -> None:
    """The ISR series (``kernel``'s and ``isr_latency``'s) are made batch by batch from the
    entries on disk: with batches of 7 entries (borders everywhere) the result is still the
    in-memory one (the site intervals too: read in blocks of 7 occurrences)."""
    monkeypatch.setattr(sparts, "BATCH", 7)
    monkeypatch.setattr(spill, "BATCH", 7)
    monkeypatch.setattr(site_arrays, "BLOCK", 7)
    assert_same_on_disk(open_trace(_path(folder, name), on_corrupt="skip"), 1000, tmp_path)


def test_batches_numbered_from_zero_each_are_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's instances numbered from 0 again (not on from the batches before it) fails."""
    monkeypatch.setattr(sparts, "BATCH", 7)
    monkeypatch.setattr(spill, "BATCH", 7)
    real = spill._series_tables
    monkeypatch.setattr(spill, "_series_tables", lambda *a, first=0, **k: real(*a, **k))
    folder, name = RECORDINGS[0]
    with pytest.raises(AssertionError):
        assert_same_on_disk(open_trace(_path(folder, name), on_corrupt="skip"), 1000, tmp_path)


@pytest.mark.parametrize("recording", [0, 4])
def test_instance_pairs_across_batch_borders_are_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        recording: int) -> None:
    """The series of consecutive task instances (period, separation) made in batches without the
    previous batch's last instance in front lose the pairs across borders: the comparison fails."""
    from analyzers.metrics import tasks as stasks

    monkeypatch.setattr(sparts, "BATCH", 7)
    monkeypatch.setattr(spill, "BATCH", 7)
    real = stasks.TaskState._pieces
    monkeypatch.setattr(stasks.TaskState, "_pieces",
                        lambda self, metric, unit, make, pairs, *a: real(self, metric, unit, make, False, *a))
    folder, name = RECORDINGS[recording]
    with pytest.raises(AssertionError):
        assert_same_on_disk(open_trace(_path(folder, name), on_corrupt="skip"), 1000, tmp_path)


def _two_core_switches() -> Any:
    """Core 0 switches out at 1 and in again at 20; core 1 switches out and in meanwhile."""
    from trace_parsers.model import CtxType, EventKind, Task, Trace, TraceMeta

    K, C = EventKind, CtxType
    rows = [(0, 0, K.TASK_SWITCH_IN, 1), (1, 0, K.TASK_SWITCH_OUT, 1), (2, 1, K.TASK_SWITCH_IN, 2),
            (3, 1, K.TASK_SWITCH_OUT, 2), (4, 1, K.TASK_SWITCH_IN, 2), (5, 1, K.TASK_SWITCH_OUT, 2),
            (6, 1, K.TASK_SWITCH_IN, 2), (7, 1, K.TASK_BLOCK, 2), (20, 0, K.TASK_SWITCH_IN, 1),
            (21, 0, K.TASK_BLOCK, 1)]
    ev = empty_events(len(rows))
    for col, values in zip(("ts", "core", "kind", "ctx_id"), zip(*rows)):
        ev[col] = values
    ev["ctx_type"], ev["target_id"], ev["ts_raw"] = C.TASK, ev["ctx_id"], ev["ts"]
    return Trace(ev, TraceMeta("x", tick_hz=1_000_000_000, cores=2), tasks=[Task(1, "a"), Task(2, "b")])


@pytest.mark.parametrize("size", [1, 2, 5])
def test_switch_times_of_two_cores_on_disk(tmp_path: Path, size: int) -> None:
    assert_same_on_disk(_two_core_switches(), size, tmp_path)


@pytest.mark.parametrize("size", [1, 2])
def test_switch_times_written_before_an_earlier_one_are_caught(tmp_path: Path, monkeypatch: MonkeyPatch,
                                                               size: int) -> None:
    """Switch times go to disk in the in-memory order, held back while an earlier switch-out
    still waits for its next switch-in (on another core): written as soon as found, the
    ``ctx_switch.switch_time`` rows come out of order and the comparison fails."""
    from analyzers.metrics import kernel as skernel

    real = skernel.KernelStream._sorted_switch_times
    monkeypatch.setattr(skernel.KernelStream, "_sorted_switch_times",
                        lambda self, found, last=False: real(self, found, last=True))
    with pytest.raises(AssertionError):
        assert_same_on_disk(_two_core_switches(), size, tmp_path)


def _yields_and_two_cores() -> Any:
    """Eight ``ctx.yield`` marks on core 0, only the last followed by a switch-in before the next
    yield; then an ``ISR_TO_SCHED`` on core 0 answered after one on core 1 is."""
    from trace_parsers.model import CtxType, EventKind, Task, Trace, TraceMeta

    K, C = EventKind, CtxType
    rows = [(0, 0, K.TASK_SWITCH_IN, C.TASK, 1, 0)]
    rows += [(t, 0, K.MARK, C.TASK, 1, 1) for t in (1, 10, 20, 30, 40, 50, 60, 70)]
    rows += [(71, 0, K.ISR_TO_SCHED, C.ISR, 7, 0), (72, 1, K.ISR_TO_SCHED, C.ISR, 8, 0),
             (73, 1, K.TASK_SWITCH_IN, C.TASK, 2, 0), (75, 0, K.TASK_SWITCH_IN, C.TASK, 1, 0),
             (80, 0, K.TASK_BLOCK, C.TASK, 1, 0)]
    ev = empty_events(len(rows))
    for col, values in zip(("ts", "core", "kind", "ctx_type", "ctx_id", "marker"), zip(*rows)):
        ev[col] = values
    ev["ts_raw"], ev["target_id"], ev["value"] = ev["ts"], ev["ctx_id"], 1
    return Trace(ev, TraceMeta("x", tick_hz=1_000_000_000, cores=2), tasks=[Task(1, "a"), Task(2, "b")])


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_yields_and_caused_switch_ins_on_disk(tmp_path: Path, monkeypatch: MonkeyPatch, size: int) -> None:
    monkeypatch.setattr(sparts, "BATCH", 7)
    monkeypatch.setattr(spill, "BATCH", 7)
    monkeypatch.setattr(site_arrays, "BLOCK", 3)
    assert_same_on_disk(_yields_and_two_cores(), size, tmp_path)


def test_yields_paired_only_inside_their_batch_are_caught(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    """``ctx.yield_to_switch_in`` made in batches of candidate rows: a batch's last yield must be
    compared with the next batch's first yield (``pair_next``); without, the comparison fails."""
    from analyzers.metrics import context_switch as ctxswitch

    def inside(batches: Any, key: Any) -> Any:
        for yts, e in batches:
            yield (yts, e), np.append(yts[1:], np.iinfo(np.int64).max)

    monkeypatch.setattr(sparts, "BATCH", 7)
    monkeypatch.setattr(spill, "BATCH", 7)
    monkeypatch.setattr(ctxswitch, "with_next", inside)
    with pytest.raises(AssertionError):
        assert_same_on_disk(_yields_and_two_cores(), 100, tmp_path)


@pytest.mark.parametrize("size", [1])
def test_caused_switch_ins_written_before_an_earlier_one_are_caught(tmp_path: Path, monkeypatch: MonkeyPatch,
                                                                    size: int) -> None:
    """``ISR_TO_SCHED`` rows go to disk in row order, held back while an earlier one (on another
    core) still waits for its answer: written as soon as answered, the comparison fails."""
    from analyzers.metrics import sched

    real = sched.CausedSwitchIn._write

    def eager(self: Any, rows: np.ndarray) -> None:
        waiting, self.pending = self.pending, {}
        real(self, rows)
        self.pending = waiting

    monkeypatch.setattr(sched.CausedSwitchIn, "_write", eager)
    with pytest.raises(AssertionError):
        assert_same_on_disk(_yields_and_two_cores(), size, tmp_path)


@pytest.mark.parametrize("batch", [1, 3, 7, 1 << 20])
def test_sorted_lookup_equals_a_search_of_the_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    batch: int) -> None:
    """``SortedLookup`` reads back only the batches asked and answers as ``lookup_sorted`` on the
    whole array: present keys, absent ones between, before and after every batch."""
    monkeypatch.setattr(sparts, "BATCH", batch)
    rng = np.random.default_rng(3)
    keys = np.unique(rng.integers(0, 200, 60)) * 2
    mem = Parts(width=2)
    disk = Parts(width=2, store=spill.Spill(tmp_path))
    for p in (mem, disk):
        for lo in range(0, keys.size, 5):
            p.append(np.stack([keys[lo:lo + 5], keys[lo:lo + 5] * 10]))
    ask = np.concatenate((rng.permutation(np.arange(-3, 405)), keys[::-1]))
    want = sparts.lookup_sorted(ask, mem.concat(), default=-7)
    for p in (mem, disk):
        assert np.array_equal(sparts.SortedLookup(p)(ask, default=-7), want)
    assert np.count_nonzero(want != -7) == keys.size * 2


def _readies_out_of_order() -> Any:
    """An ISR readies task 2, then task 3; task 3 is switched in first (same chunk), task 2 later."""
    from trace_parsers.model import CtxType, EventKind, Isr, Task, Trace, TraceMeta

    K, C = EventKind, CtxType
    rows = [(0, K.TASK_SWITCH_IN, C.TASK, 1, -1), (1, K.ISR_ENTER, C.ISR, 5, -1),
            (2, K.TASK_READY, C.ISR, 5, 2), (3, K.TASK_READY, C.ISR, 5, 3), (4, K.ISR_EXIT, C.ISR, 5, -1),
            (5, K.TASK_SWITCH_IN, C.TASK, 3, -1), (6, K.TASK_BLOCK, C.TASK, 3, 3),
            (9, K.TASK_SWITCH_IN, C.TASK, 2, -1), (10, K.TASK_BLOCK, C.TASK, 2, 2)]
    ev = empty_events(len(rows))
    for col, values in zip(("ts", "kind", "ctx_type", "ctx_id", "target_id"), zip(*rows)):
        ev[col] = values
    ev["ts_raw"] = ev["ts"]
    return Trace(ev, TraceMeta("x", tick_hz=1_000_000_000), tasks=[Task(1, "a"), Task(2, "b"), Task(3, "c")],
                 isrs=[Isr(5, "irq")])


@pytest.mark.parametrize("size", [1, 2, 4, 6, 100])
def test_readies_switched_in_out_of_order_on_disk(tmp_path: Path, size: int) -> None:
    assert_same_on_disk(_readies_out_of_order(), size, tmp_path)


def test_readies_written_before_an_earlier_one_are_caught(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    """Ready-to-switch-in pairs go to disk in ready order, held back while an earlier ready still
    waits for its task's switch-in: written as soon as found, ``isr.<name>.to_task.<task>`` loses its
    instance and the comparison fails."""
    from analyzers.metrics import isr as sisr

    real = sisr.IsrStream._ready_switch_ins
    monkeypatch.setattr(sisr.IsrStream, "_ready_switch_ins",
                        lambda self, rows, last=False: real(self, rows, True))
    with pytest.raises(AssertionError):
        assert_same_on_disk(_readies_out_of_order(), 4, tmp_path)
