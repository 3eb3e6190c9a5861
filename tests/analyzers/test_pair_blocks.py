"""``pair_next`` and ``site_interval`` a block at a time (``pair_next_blocks``,
``site_interval_batches``): equal to the whole-array versions at every block size, and the
faults that would make them differ are caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import site_arrays
from analyzers.metrics import base
from analyzers.metrics.base import (
    join_series,
    pair_next,
    pair_next_blocks,
    site_interval,
    site_interval_batches,
)
from analyzers.metrics.stats import DropLog
from analyzers.sites import SiteEvents


def _blocks(a: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """``a`` cut into blocks of the sizes given in turn (empty blocks included)."""
    out, lo, k = [], 0, 0
    while lo < a.size:
        n = sizes[k % len(sizes)]
        out.append(a[lo:lo + n])
        lo, k = lo + n, k + 1
    return out


def _joined(a: np.ndarray, b: np.ndarray, sa: list[int], sb: list[int]) -> tuple[Any, ...]:
    """ia, jb, unmatched, start and end values of ``pair_next_blocks``, joined."""
    got: list[list[np.ndarray]] = [[np.zeros(0, np.int64)] for _ in range(4)]
    seen = 0
    for *arrays, size in pair_next_blocks(_blocks(a, sa), _blocks(b, sb)):
        for g, x in zip(got, arrays):
            g.append(x)
        seen += size
    assert seen == a.size
    ia, jb, start, end = (np.concatenate(g) for g in got)
    return ia, jb, a.size - ia.size, start, end


def _same(a: np.ndarray, b: np.ndarray, sa: list[int], sb: list[int]) -> bool:
    """``pair_next_blocks`` joined equals ``pair_next`` (indices, count, and the values at them)."""
    ia, jb, unmatched = pair_next(a, b)
    got = _joined(a, b, sa, sb)
    return (np.array_equal(ia, got[0]) and np.array_equal(jb, got[1]) and unmatched == got[2]
            and np.array_equal(a[ia], got[3]) and np.array_equal(b[jb], got[4]))


sorted_times = st.lists(st.integers(0, 60), max_size=40).map(lambda v: np.array(sorted(v), np.int64))
block_sizes = st.lists(st.integers(0, 6), min_size=1, max_size=4).filter(any)


@settings(max_examples=300, deadline=None)
@given(sorted_times, sorted_times, block_sizes, block_sizes)
def test_blocks_equal_the_whole_arrays(a: np.ndarray, b: np.ndarray, sa: list[int], sb: list[int]) -> None:
    """Repeated times (within and across a and b), empty blocks, blocks of one: all as one call."""
    assert _same(a, b, sa, sb)


#: a's last yield of its first block pairs with b's value in a's second block's range only if the
#: next-a lookahead crosses the border; b's second block holds the pair of a's third value
A, B = np.array([0, 10, 20, 30]), np.array([5, 12, 25, 27, 31])


def test_examples() -> None:
    assert _same(A, B, [2], [2]) and _same(A, B, [1], [1]) and _same(A, B, [4], [5])
    assert _same(A, np.zeros(0, np.int64), [1], [1]) and _same(np.zeros(0, np.int64), B, [1], [1])


def test_lookahead_only_inside_a_block_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block's last value compared with int64 max rather than the next block's first: a
    value without its own end (0 -> 12 crosses 10) is paired wrongly."""
    def inside(blocks: Any) -> Any:
        for a in blocks:
            if len(a):
                yield a, np.append(a[1:], np.iinfo(np.int64).max)

    a, b = np.array([0, 10]), np.array([12])
    assert _same(a, b, [1], [1])
    monkeypatch.setattr(base, "with_next", inside)
    assert not _same(a, b, [1], [1])


def test_indices_not_carried_across_blocks_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """``b``'s block offset not advanced: end indices point into the wrong block."""
    real = base._FirstAtOrAfter._advance

    def stuck(self: Any) -> bool:
        off = self.off
        got = real(self)
        self.off = off
        return got

    assert _same(A, B, [2], [2])
    monkeypatch.setattr(base._FirstAtOrAfter, "_advance", stuck)
    assert not _same(A, B, [2], [2])


def test_a_block_let_go_too_early_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block of ``b`` dropped as soon as it is asked once (not when a key is past its last
    value): the next block of ``a`` loses its pairs in it."""
    real = base._FirstAtOrAfter.__call__

    def forgetful(self: Any, keys: np.ndarray) -> Any:
        got = real(self, keys)
        self._advance()
        return got

    a, b = np.array([0, 4, 8]), np.array([1, 5, 9])
    assert _same(a, b, [1], [3])
    monkeypatch.setattr(base._FirstAtOrAfter, "__call__", forgetful)
    assert not _same(a, b, [1], [3])


def _site_events(tmp_path: Path | None, gaps: list[tuple[int, int]]) -> SiteEvents:
    rng = np.random.default_rng(7)
    a = np.sort(rng.integers(0, 10_000, 500))
    b = np.sort(rng.integers(0, 10_000, 400))
    ts: Any = {"a": a, "b": b}
    if tmp_path is not None:
        folder = site_arrays.ScratchFolder(tmp_path)
        ts = site_arrays.SiteArrays({k: folder.write(k, [v], np.int64) for k, v in ts.items()})
    return SiteEvents("trace", ts, {}, gaps=gaps, tick_ns=1.0)


@pytest.mark.parametrize("rows", [1, 3, 64, 1 << 20])
@pytest.mark.parametrize("on_disk", [False, True])
def test_site_interval_in_batches(tmp_path: Path, rows: int, on_disk: bool) -> None:
    """The same series (start/end indices included) and the same drop log, gaps crossed."""
    se = _site_events(tmp_path if on_disk else None, [(2000, 2100), (7000, 7003)])
    want_log, got_log = DropLog(), DropLog()
    want, unmatched = site_interval("m", se, "a", "b", want_log)
    got = join_series(list(_batches(se, got_log, rows)))
    for f in ("start_ts", "end_ts", "value", "start_idx", "end_idx"):
        assert np.array_equal(getattr(got, f), getattr(want, f)), f
    assert (got.start_site, got.end_site) == ("a", "b")
    assert got_log.entries == want_log.entries and unmatched and want_log.count(reason="overflow_gap")


def _batches(se: SiteEvents, drop_log: DropLog, rows: int) -> Any:
    old = site_arrays.BLOCK
    site_arrays.BLOCK = rows
    try:
        yield from site_interval_batches("m", se, "a", "b", drop_log)
    finally:
        site_arrays.BLOCK = old


def test_on_disk_blocks(tmp_path: Path) -> None:
    folder = site_arrays.ScratchFolder(tmp_path)
    arrays = site_arrays.SiteArrays({"x": folder.write("x", [np.arange(10)], np.int64), "y": np.arange(4)})
    got = list(arrays.blocks("x", 4))
    assert [g.tolist() for g in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert not got[0].flags.writeable
    assert [g.tolist() for g in arrays.blocks("y", 3)] == [[0, 1, 2], [3]] and not list(arrays.blocks("z"))
    assert [g.tolist() for g in site_arrays.blocks_of({"x": np.arange(3)}, "x", 2)] == [[0, 1], [2]]
    d = arrays._items["x"]
    d.path.write_bytes(d.path.read_bytes()[:-8])
    with pytest.raises(OSError, match="cut short"):
        list(arrays.blocks("x", 4))
