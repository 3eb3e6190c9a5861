"""``TableParts.add_batches`` (issue 18): a series given batch by batch makes, inside a spill, the
table and statistics of the whole series made at once, without holding it whole; a batch lost
on the way, in the table or in the values summarized, shows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analyzers.metrics import spill
from analyzers.metrics.base import Series, TableParts, join_series
from analyzers.metrics.stats import DropLog, GapDrops, drop_gap_instances, summarize


def _batches(rng: np.random.Generator, sizes: list[int], metric: str = "m.x") -> list[Series]:
    out, t = [], 0
    for n in sizes:
        st = t + np.cumsum(rng.integers(1, 100, n)).astype(np.int64)
        t = int(st[-1]) if n else t
        en = st + rng.integers(0, 50, n)
        v = (en - st).astype(np.float64) * rng.uniform(0.5, 2.0, n)
        if n > 3:
            v[2] = np.nan
        core = rng.integers(0, 3, n).astype(np.int64)
        out.append(Series(metric, "ns", st, en, v, core=core))
    return out


SIZES = [5, 0, 1, 70_000, 3, 66_000]  # borders inside and across spill row groups (64 Ki rows)


def _equal(a: object, b: object) -> bool:
    """Tables equal, NaN values equal to NaN (``Table.equals`` says NaN != NaN)."""
    v = [np.asarray(t["value"]) for t in (a, b)]  # type: ignore[index]
    rest = [t.drop_columns(["value"]) for t in (a, b)]  # type: ignore[attr-defined]
    return rest[0].equals(rest[1]) and np.array_equal(v[0], v[1], equal_nan=True)


def _whole(batches: list[Series]) -> TableParts:
    p = TableParts("trace")
    p.add([join_series([b for b in batches if len(b)])])
    return p


def test_batches_on_disk_equal_the_whole_series(tmp_path: Path) -> None:
    batches = _batches(np.random.default_rng(1), SIZES)
    want = _whole(batches)
    got = TableParts("trace", spill.Spill(tmp_path))
    got.add_batches(iter(batches))
    table = got.table()
    assert spill.is_spilled(table)
    assert _equal(table.read(), want.table())
    t = want.table()
    for c in range(3):
        sel = t["core"].to_numpy() == c
        assert table.core_stats("m.x", c) == summarize(t["value"].to_numpy()[sel])
    assert got.stats.keys() == want.stats.keys() == {"m.x"}
    g, w = got.stats["m.x"].as_dict(), want.stats["m.x"].as_dict()
    assert g == w, (g, w)
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".f64", ".finite")]  # scratch removed


def test_outside_a_spill_batches_are_joined() -> None:
    batches = _batches(np.random.default_rng(2), [4, 9])
    got = TableParts("trace")
    got.add_batches(batches)
    assert _equal(got.table(), _whole(batches).table())
    assert got.stats == _whole(batches).stats


def test_no_instances_add_nothing(tmp_path: Path) -> None:
    for folder in (None, tmp_path):
        got = TableParts("trace", spill.Spill(folder) if folder else None)
        got.add_batches(_batches(np.random.default_rng(3), [0, 0]))
        assert not got.stats and not got.tables


def test_a_lost_batch_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The values file missing a batch changes the statistics; the comparison above catches it."""
    batches = _batches(np.random.default_rng(4), SIZES)
    want = _whole(batches)
    real = spill._batch_tables

    def lossy(bs, *a, **k):  # type: ignore[no-untyped-def]
        return real(iter([b for i, b in enumerate(bs) if i != 3]), *a, **k)

    monkeypatch.setattr(spill, "_batch_tables", lossy)
    got = TableParts("trace", spill.Spill(tmp_path))
    got.add_batches(iter(batches))
    assert got.table().num_rows != want.table().num_rows
    assert got.stats["m.x"] != want.stats["m.x"]


def test_gap_drops_over_batches_log_what_one_call_logs() -> None:
    rng = np.random.default_rng(5)
    st = np.sort(rng.integers(0, 10_000, 500)).astype(np.int64)
    en = st + rng.integers(0, 300, 500)
    gaps = [(100, 400), (5000, 5001), (20_000, 20_001)]
    one = DropLog()
    keep = drop_gap_instances("m", st, en, gaps, one)
    many, acc, kept = DropLog(), GapDrops("m", gaps), []
    for lo in range(0, 500, 37):
        kept.append(acc.keep(st[lo: lo + 37], en[lo: lo + 37]))
    acc.log(many)
    assert np.array_equal(np.concatenate(kept), keep)
    # one entry for the metric's gaps, each gap that dropped some listed (the third drops nothing)
    assert many.to_rows() == one.to_rows() and len(one) == 1 and len(one.entries[0].gaps) == 2
