"""What the cross-validation keeps of a per-instance table (``crossval.verdict.site_instances``,
issue 18): a spilled table read back batch by batch gives the instances of the whole table, and
the first unpaired instance is found without a sort (``first_missing``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzers.campaign.instances import CROSSVAL_COLUMNS, site_based_rows
from analyzers.crossval import verdict
from analyzers.crossval.verdict import READ_COLUMNS, _instances, first_missing, site_instances
from analyzers.metrics import spill
from analyzers.metrics.base import Series, make_table


def _series(rng: np.random.Generator, metric: str, n: int, site: str = "", unit: str = "ns") -> Series:
    st = np.sort(rng.integers(0, 10**9, n)).astype(np.int64)
    en = st + rng.integers(1, 1000, n)
    idx = np.arange(n, dtype=np.int64) if site else None
    end_site = f"{site}.end" if site else ""
    return Series(metric, unit, st, en, (en - st).astype(np.float64), site, idx, end_site,
                  idx + 1 if site else None)


def _groups(rng: np.random.Generator) -> list[Series]:
    """Site-based and other series, one metric made of two series far apart in the table."""
    return [_series(rng, "a.round", 2500, "tm.count"), _series(rng, "b.other", 1700),
            _series(rng, "c.period", 900, "tm.report", "us"), _series(rng, "a.round", 1300, "tm.count")]


def _both(tmp_path: Path, seed: int) -> tuple[Any, Any]:
    series = _groups(np.random.default_rng(seed))
    whole = make_table(series, "logic")
    spilled = make_table(series, "logic", spill.Spill(tmp_path))
    return whole, spilled


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        (x.unit, x.start_site, x.end_site) == (y.unit, y.start_site, y.end_site)
        and all(np.array_equal(getattr(x, k), getattr(y, k)) for k in ("value", "start_idx", "end_idx"))
        for x, y in ((a[m], b[m]) for m in a))


@pytest.mark.parametrize("batch", [1, 7, 1000, 1 << 20])
def test_spilled_table_read_in_batches_gives_the_whole_tables_instances(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    monkeypatch.setattr(spill, "BATCH_ROWS", batch)
    whole, spilled = _both(tmp_path, 1)
    want = _instances(site_based_rows(whole))
    assert set(want) == {"a.round", "c.period"} and want["a.round"].value.size == 3800
    got = site_instances(spilled, site_based_rows)
    assert _same(got.by_metric, want)
    assert _same(site_instances(whole, site_based_rows).by_metric, want)
    assert _instances(got) == got.by_metric and got.num_rows == 3800 + 900
    assert site_instances(got) is got


def test_a_lost_batch_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above fails when one batch read back is lost."""
    monkeypatch.setattr(spill, "BATCH_ROWS", 1000)
    whole, spilled = _both(tmp_path, 2)
    real = spill.SpilledTable.batches

    def lossy(self: Any, *a: Any, **k: Any) -> Any:
        return (b for i, b in enumerate(real(self, *a, **k)) if i != 1)

    monkeypatch.setattr(spill.SpilledTable, "batches", lossy)
    assert not _same(site_instances(spilled, site_based_rows).by_metric, _instances(site_based_rows(whole)))


def _stacking_peak(make: Any) -> tuple[Any, int, int]:
    """``verdict._stacked`` of the batches ``make()`` gives (made while traced, so that freeing
    them counts): the result, the rows and the most bytes held at once beyond the batches."""
    import tracemalloc

    tracemalloc.start()
    try:
        parts = make()
        rows = sum(p.value.size for p in parts)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        got = verdict._stacked(parts)
        assert parts == []
        return got, rows, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _parts(n: int = 8, rows: int = 1 << 17) -> list[Any]:
    rng = np.random.default_rng(5)
    return [verdict._Instances("ns", "tm.count", "tm.count", rng.random(rows), np.arange(rows) + i * rows,
                               np.arange(rows) + i * rows + 1) for i in range(n)]


def test_batches_are_joined_one_column_at_a_time() -> None:
    """One metric's batches joined (``_stacked``): equal to one concatenation per column, and
    the extra memory is one column (8 bytes per instance), not all three while the batches live."""
    parts = _parts()
    want = {k: np.concatenate([getattr(p, k) for p in parts]) for k in ("value", "start_idx", "end_idx")}
    del parts
    got, rows, peak = _stacking_peak(_parts)
    assert rows == want["value"].size
    assert (got.unit, got.start_site, got.end_site) == ("ns", "tm.count", "tm.count")
    for k, v in want.items():
        np.testing.assert_array_equal(getattr(got, k), v)
    assert peak <= 10 * rows, f"{peak / rows:.1f} extra bytes per instance"


def test_joining_all_columns_while_the_batches_live_is_caught() -> None:
    """The fault: all three columns concatenated before any batch is let go (48 bytes per
    instance at the peak) -- the bound above fails it."""
    def whole(parts: list[Any]) -> Any:
        cat = {k: np.concatenate([getattr(p, k) for p in parts]) for k in ("value", "start_idx", "end_idx")}
        first = parts[0]
        parts.clear()
        return verdict._Instances(first.unit, first.start_site, first.end_site, **cat)

    real = verdict._stacked
    try:
        verdict._stacked = whole
        _, rows, peak = _stacking_peak(_parts)
    finally:
        verdict._stacked = real
    assert peak > 10 * rows, f"{peak / rows:.1f} extra bytes per instance"


def test_the_columns_read_are_those_the_campaign_keeps() -> None:
    assert set(READ_COLUMNS) == set(CROSSVAL_COLUMNS)


def _agrees_with_setdiff(first: Any) -> bool:
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 40))
        present = rng.integers(-5, 50, int(rng.integers(0, 60)))
        rest = np.setdiff1d(np.arange(n), present)
        if first(n, present) != (int(rest[0]) if rest.size else None):
            return False
    return True


def test_first_missing_is_the_first_of_the_set_difference() -> None:
    assert _agrees_with_setdiff(first_missing)
    assert first_missing(3, np.zeros(0, np.int64)) == 0 and first_missing(0, np.arange(3)) is None


def test_the_comparison_sees_a_wrong_first_missing() -> None:
    """Without the in-range filter (negative indices wrap) or the none-left case, it fails."""
    def no_filter(n: int, present: np.ndarray) -> int | None:
        todo = np.ones(n, dtype=bool)
        todo[present[present < n]] = False
        return int(np.argmax(todo)) if n and todo.any() else None

    def no_none(n: int, present: np.ndarray) -> int | None:
        return first_missing(n, present) or 0

    assert not _agrees_with_setdiff(no_filter) and not _agrees_with_setdiff(no_none)


@pytest.mark.parametrize("logic", [True, False])
def test_site_rows_kept_only_for_a_cross_validation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    logic: bool) -> None:
    """Each source's site-based rows are read back for the cross-validation, which needs a trace
    and a logic capture: a trace alone keeps none (on a long recording: ~50 B per site instance)."""
    import shutil

    from analyzers.campaign import capture as cap
    from analyzers.crossval import verdict
    from tests.conftest import CAPTURES

    folder = tmp_path / "cap"
    shutil.copytree(CAPTURES / "qemu_netduinoplus2" / "freertos" / "isr_latency" / "ref", folder)
    if not logic:
        for f in folder.glob("logic*.sr"):
            f.unlink()
    calls: list[str] = []
    real = verdict.site_instances
    monkeypatch.setattr(verdict, "site_instances", lambda t, f: calls.append("x") or real(t, f))
    r = cap.analyze_capture(folder, "cap", tmp_path / "out", force=True)
    assert r["status"] == "ok", r.get("error")
    assert len(calls) == (3 if logic else 0)
