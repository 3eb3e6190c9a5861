"""Statistics from values on disk (``analyzers.metrics.disk_stats``, issue 18) equal ``summarize``
of the same values in memory bit for bit, and the comparison is one that fails: a sum in another
order, a tree cut where NumPy does not cut, an order statistic one rank off all show here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from analyzers.metrics import disk_stats as ds
from analyzers.metrics.stats import summarize

SIZES = [1, 2, 7, 8, 9, 127, 128, 129, 1000, 4097, 65_536, 100_003]


def _values(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    a = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 9, n)  # magnitudes where order matters
    if kind == "ties":
        a = np.round(np.abs(a)) % 50
    elif kind == "nonfinite" and n > 3:
        a[::3] = np.nan
        a[1] = np.inf
    elif kind == "durations":
        a = rng.integers(1, 10**6, n).astype(np.float64)
    return a


def _files(tmp_path: Path, a: np.ndarray, k: int = 3) -> list[Path]:
    files = []
    for i, part in enumerate(np.array_split(a, k)):
        f = tmp_path / f"v{i}.bin"
        part.tofile(f)
        files.append(f)
    return files


def _same(got: object, want: object) -> bool:
    return all(x == y or (math.isnan(x) and math.isnan(y))  # type: ignore[arg-type]
               for x, y in zip(got.as_dict().values(), want.as_dict().values()))  # type: ignore[attr-defined]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["wide", "ties", "nonfinite", "durations"])
def test_equal_to_summarize_in_memory(tmp_path: Path, n: int, kind: str) -> None:
    a = _values(np.random.default_rng(n), n, kind)
    want = summarize(a)
    for block in (64, 129, 1000, 1 << 20):  # blocks smaller than, across and larger than the tree
        got = ds.summarize_files(_files(tmp_path, a), tmp_path / "finite.bin", block=block)
        assert _same(got, want), (block, got, want)
    assert not (tmp_path / "finite.bin").exists()


def test_no_values_and_only_nonfinite(tmp_path: Path) -> None:
    for a in (np.zeros(0), np.array([np.nan, np.inf])):
        got = ds.summarize_files(_files(tmp_path, a, 1), tmp_path / "f.bin")
        assert got.n == 0 and _same(got, summarize(a))


def test_order_statistics_are_the_sorted_values(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    a = np.concatenate([_values(rng, 5000, "wide"), _values(rng, 5000, "ties"), [-0.5, 0.0, 1e-300]])
    v = ds.Values(_files(tmp_path, a))
    ranks = [0, 1, 99, 5000, 5001, a.size - 2, a.size - 1]
    assert ds.order_statistics(v, ranks, block=777) == np.sort(a)[ranks].tolist()
    # one rank off is another value here: the selection is checked, not the data's flatness
    assert ds.order_statistics(v, [100], block=777) != np.sort(a)[[99]].tolist()


def test_another_summation_order_is_caught() -> None:
    """The test data tell NumPy's pairwise order from a left-to-right sum and from a tree cut
    where NumPy does not cut (the fault found while writing this: halves of <= 128 values)."""
    a = _values(np.random.default_rng(129), 100_003, "wide")
    want = float(np.add.reduce(a))
    assert math.fsum(a) != want and float(np.cumsum(a)[-1]) != want


def test_a_tree_cut_in_the_wrong_place_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _values(np.random.default_rng(3), 4097, "wide")  # a seed where the cut shows
    files = _files(tmp_path, a)
    assert ds.pairwise_sum(ds.Values(files), block=64) == float(np.add.reduce(a))
    monkeypatch.setattr(ds, "_PW_BLOCK", 64)
    assert ds.pairwise_sum(ds.Values(files), block=64) != float(np.add.reduce(a))


def test_a_percentile_one_rank_off_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _values(np.random.default_rng(3), 10_001, "durations")
    files = _files(tmp_path, a)
    assert _same(ds.summarize_files(files, tmp_path / "f"), summarize(a))
    real = ds.order_statistics
    monkeypatch.setattr(ds, "order_statistics",
                        lambda v, ranks, block=ds.BLOCK: real(v, [min(r + 1, v.n - 1) for r in ranks], block))
    assert not _same(ds.summarize_files(files, tmp_path / "f"), summarize(a))


def test_a_lost_value_fails(tmp_path: Path) -> None:
    a = _values(np.random.default_rng(5), 5000, "wide")
    files = _files(tmp_path, a)
    files[1].write_bytes(files[1].read_bytes()[8:])
    assert not _same(ds.summarize_files(files, tmp_path / "f"), summarize(a))
